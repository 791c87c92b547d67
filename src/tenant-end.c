/*
 * tenant-end.c: a tenant account's end, at tenant rm and after
 * TENANT_RETENTION_DAYS: its home archived to a tarball, whatever still
 * runs as the account killed, the account removed (userdel), then its
 * home.  Each tool is a child the loop watches (proc_async), one after
 * the other, as the account's making is: a tar of a home of many files
 * takes seconds to minutes and must not stop the daemon.  A step that
 * fails is told once and the whole end tried again a minute later.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#define TEND_MS		(60 * 60 * 1000)	/* a tar of a large home */
#define TEND_RETRY_MS	60000

enum tend_step {
	TEND_TAR,
	TEND_USERDEL,
	TEND_RM,
	TEND_DONE,
};

static const char *const tend_tools[] = { "tar", "userdel", "rm" };

struct tenant_end {
	char		*name;
	char		*tar;
	char		*parent;	/* the home's directory, and its name */
	char		*base;
	char		*run[2];	/* its podman's runtime directories */
	enum tend_step	 step;
};

static void	tend_done_cb(char *, int, void *);

/*
 * Whatever still runs as t's account (a process that left its job's
 * group) is killed, so that its account can go (userdel refuses an
 * account in use; -f would leave its processes running): a child that
 * becomes the account signals every process it may, that is the
 * account's.  Its jobs have ended: their keepers are not the account's.
 */
static int
tenant_kill_all(const struct tenant *t)
{
	pid_t	 pid;
	int	 ws;

	if (!t->has_uid || t->uid == 0 || t->uid == getuid())
		return (0);
	if ((pid = fork_quiet()) == -1)
		return (-1);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setresgid(t->gid, t->gid,
		    t->gid) != 0 || setresuid(t->uid, t->uid, t->uid) != 0)
			_exit(1);
		kill(-1, SIGKILL);
		_exit(0);
	}
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	return (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1);
}

/* The step e is at needs nothing done: on to the next. */
static int
tend_skip(const struct tenant_end *e, const struct tenant *t)
{
	struct stat	 st;

	switch (e->step) {
	case TEND_TAR:
		return (lstat(t->home, &st) != 0);
	case TEND_RM:
		return (lstat(t->home, &st) != 0 && e->run[0] == NULL);
	case TEND_USERDEL:
		return (getpwnam(t->account) == NULL);
	default:
		return (0);
	}
}

/* Starts e's step (its tar 0600); -1 with *cause if it cannot be. */
static int
tend_start(struct tenant_end *e, const struct tenant *t, char **cause)
{
	char	*tar[] = { "sh", "-c", TENANT_MERGED, "tar", "-czf", e->tar,
		    "-C", e->parent, "--", e->base, NULL };
	char	*del[] = { "sh", "-c", TENANT_MERGED, "userdel", t->account,
		    NULL };
	char	*rm[] = { "sh", "-c", TENANT_MERGED, "rm", "-rf",
		    "--one-file-system", "--", t->home, e->run[0], e->run[1],
		    NULL };
	char	*const *argv[] = { tar, del, rm };
	mode_t	 saved;
	int	 rc;

	saved = umask(077);
	rc = proc_async_start(argv[e->step], TEND_MS, tend_done_cb, e, cause);
	umask(saved);
	return (rc);
}

/* The next step that has something to do, started; or TEND_DONE. */
static int
tend_next(struct tenant_end *e, const struct tenant *t, char **cause)
{
	for (; e->step != TEND_DONE; e->step++) {
		if (tend_skip(e, t))
			continue;
		if (e->step == TEND_USERDEL && tenant_kill_all(t) != 0) {
			xasprintf(cause, "tenant: %s's processes could not be "
			    "killed", t->account);
			return (-1);
		}
		return (tend_start(e, t, cause));
	}
	return (0);
}

static void
tend_free(struct tenant_end *e)
{
	free(e->name);
	free(e->tar);
	free(e->parent);
	free(e->run[0]);
	free(e->run[1]);
	free(e);
}

/*
 * The runtime directories the account's rootless podman made in /tmp (it
 * runs without XDG_RUNTIME_DIR or TMPDIR): its pause process's pid file
 * and its containers' state.  Left there, the next account with the UID
 * (the same owner's, made again) would find them stale.  Only what is
 * the account's own and no link; the rest of e->run stays NULL.
 */
static void
tend_runtime(struct tenant_end *e, const struct tenant *t)
{
	static const char *const fmt[] = { "/tmp/podman-run-%u",
	    "/tmp/containers-user-%u" };
	struct stat	 st;
	char		*path;
	u_int		 i, n = 0;

	for (i = 0; i < nitems(fmt); i++) {
		xasprintf(&path, fmt[i], (u_int)t->uid);
		if (t->has_uid && t->uid != 0 && lstat(path, &st) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid == t->uid)
			e->run[n++] = path;
		else
			free(path);
	}
}

/* A failure, told once per failure; the end is tried again later. */
static void
tend_failed(struct tenant *t, char *cause)
{
	t->ending = 0;
	t->end_retry = clock_mono_ms() + TEND_RETRY_MS;
	log_warnx("tenant %s: %s; tried again in %d s", t->name, cause,
	    TEND_RETRY_MS / 1000);
	free(t->end_error);
	t->end_error = cause;
}

/* It has gone: archived (its record stays), or removed with tenant rm. */
static void
tend_finished(struct tenant *t, const struct tenant_end *e)
{
	t->ending = 0;
	free(t->end_error);
	t->end_error = NULL;
	t->state = TENANT_ARCHIVED;
	tenants_save();
	log_info("tenant %s: archived to %s, account removed", t->name,
	    e->tar);
}

/* In the loop: a step is over; the next starts, or it ends or failed. */
static void
tend_done_cb(char *out, int status, void *arg)
{
	struct tenant_end	*e = arg;
	struct tenant		*t;
	char			*cause = NULL;

	if ((t = tenant_find(e->name)) == NULL)
		goto out;
	if (status != 0) {
		cause = tenant_tool_cause(tend_tools[e->step], e->step ==
		    TEND_USERDEL ? t->account : t->home, out, status);
		tend_failed(t, cause);
		goto out;
	}
	e->step++;
	if (tend_next(e, t, &cause) != 0) {
		tend_failed(t, cause);
		goto out;
	}
	if (e->step != TEND_DONE) {
		free(out);
		return;		/* the next step runs */
	}
	tend_finished(t, e);
	if (t->removing)
		tenant_remove(t);	/* at once, not at the next tick */
out:
	free(out);
	tend_free(e);
}

/* $GMUX_HOME/tenants/archive/ACCOUNT-YYYYMMDD.tar.gz (the caller frees). */
static char *
tend_tarball(const struct tenant *t)
{
	struct tm	 tm;
	time_t		 now = (time_t)(clock_ms() / 1000);
	char		 day[16], *dir, *tar;

	gmtime_r(&now, &tm);
	strftime(day, sizeof day, "%Y%m%d", &tm);
	xasprintf(&dir, "%s/tenants/archive", path_home());
	mkdir_p(dir, 0700);
	xasprintf(&tar, "%s/%s-%s.tar.gz", dir, t->account, day);
	free(dir);
	return (tar);
}

/*
 * Archives t's home (0600), then removes the account and the home, off
 * the loop.  A mapped tenant's user is left alone.  Returns 0 once it has
 * gone (or was never there), 1 while it goes (started on the first call;
 * after a failure, started again once TEND_RETRY_MS have passed).
 */
int
tenant_archive(struct tenant *t)
{
	struct tenant_end	*e;
	char			*cause = NULL;

	if (t->user != NULL || t->state != TENANT_ACTIVE)
		return (0);
	if (t->ending || (t->end_error != NULL &&
	    clock_mono_ms() < t->end_retry))
		return (1);
	free(t->end_error);	/* tried again: a new failure is told anew */
	t->end_error = NULL;
	e = xcalloc(1, sizeof *e);
	e->name = xstrdup(t->name);
	e->tar = tend_tarball(t);
	e->parent = xstrdup(t->home);
	e->base = strrchr(e->parent, '/');
	*e->base++ = '\0';
	if (*e->parent == '\0') {
		free(e->parent);	/* a home right under / */
		e->parent = xstrdup("/");
		e->base = t->home + 1;
	}
	tend_runtime(e, t);
	e->step = TEND_TAR;
	if (tend_next(e, t, &cause) != 0) {
		tend_failed(t, cause);
		tend_free(e);
		return (1);
	}
	if (e->step == TEND_DONE) {
		tend_finished(t, e);	/* nothing was left of it */
		tend_free(e);
		return (0);
	}
	t->ending = 1;
	return (1);
}

/*
 * tenant rm's end, once t's jobs have ended: archived, its account gone,
 * its record forgotten (t is freed).  1 while some job of it has not
 * ended or its end goes on (asked again by the tick); 0 once done.
 */
int
tenant_remove(struct tenant *t)
{
	char		*name;

	if (t->making || tenant_busy(t->name))
		return (1);	/* useradd, or a job of it, runs */
	if (tenant_archive(t) != 0)
		return (1);
	name = xstrdup(t->name);
	tenant_forget(t);
	tenants_save();
	log_info("tenant %s removed", name);
	free(name);
	return (0);
}

/* Each second: the removals waiting for their jobs' ends. */
void
tenant_remove_tick(void)
{
	struct tenant	*t, *next;

	TAILQ_FOREACH_SAFE(t, tenants_all(), entry, next) {
		if (t->removing)
			tenant_remove(t);
	}
}

/*
 * Each second: an account whose last job has ended has what is left of
 * it killed, Podman's pause process first (it holds the user namespace
 * of all the account's podman commands; a stale one made a later run
 * fail "invalid internal status, try resetting the pause process").
 * Only the accounts gmux made; a mapped user's processes are its own.
 */
void
tenant_idle_tick(void)
{
	struct tenant	*t;

	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (!t->busy || tenant_busy(t->name))
			continue;
		t->busy = 0;
		if (t->user != NULL || t->state != TENANT_ACTIVE)
			continue;
		if (tenant_kill_all(t) != 0)
			log_warnx("tenant %s: what is left of %s could not be "
			    "killed", t->name, t->account);
		else
			log_debug("tenant %s: its last job ended", t->name);
	}
}
