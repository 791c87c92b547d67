/*
 * tenant-account.c: a tenant's OS account, made on its first job when
 * the daemon is root and TENANT_ACCOUNTS=1 (Debian's groupadd and
 * useradd, no login shell), its home 0700 under TENANT_HOME_ROOT; and its
 * end: the home archived to a tarball, then the account and home removed
 * (docs/tenants.md).
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#define TENANT_TOOL_MS	30000

static __thread uid_t	tenant_give_uid;
static __thread gid_t	tenant_give_gid;

static int
tenant_give_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_NS)
		return (0);
	return (lchown(path, tenant_give_uid, tenant_give_gid) == 0 ? 0 : -1);
}

/*
 * Makes path's tree the account's (a remote job's work tree, made by the
 * daemon): no link followed, no other filesystem entered.
 */
int
tenant_give(const char *path, uid_t uid, gid_t gid, char **cause)
{
	tenant_give_uid = uid;
	tenant_give_gid = gid;
	if (nftw(path, tenant_give_one, 32, FTW_PHYS|FTW_MOUNT) != 0) {
		xasprintf(cause, "tenant: %s: %s", path, strerror(errno));
		return (-1);
	}
	return (0);
}

/* Picks t's UID on a standalone host: derived, then the next free one. */
static int
tenant_pick_uid(struct tenant *t, char **cause)
{
	uid_t	 lo, hi, uid, first;

	tenant_uid_range(&lo, &hi);
	uid = first = tenant_uid_derive(t->name, lo, hi);
	while (tenant_uid_taken(uid, t)) {
		uid = uid == hi ? lo : uid + 1;
		if (uid == first) {
			xasprintf(cause, "tenant: TENANT_UID_RANGE is full");
			return (-1);
		}
	}
	t->uid = uid;
	t->gid = (gid_t)uid;
	t->has_uid = 1;
	tenants_save();
	return (0);
}

/*
 * With project quotas, the home is its own project with the tenant's
 * limit (set on each use: USER_DISK_LIMIT may have changed).  Without
 * one its jobs still run: the limit is then only gmux's refusal of new
 * jobs over it.
 */
void
tenant_home_quota(const struct tenant *t)
{
	char	*cause = NULL;

	if (!tenant_disk_quotas() || t->user != NULL)
		return;
	if (tenant_pquota_set(t, tenant_disk_limit(t), &cause) != 0) {
		log_warnx("tenant %s: %s", t->name, cause);
		free(cause);
	}
}

/* The home, 0700 and the account's, made if it is not there. */
static int
tenant_home(const struct tenant *t, char **cause)
{
	struct stat	 st;
	char		*root = xstrdup(t->home), *slash;

	if ((slash = strrchr(root, '/')) != NULL && slash != root)
		*slash = '\0';
	mkdir_p(root, 0755);
	free(root);
	if (mkdir(t->home, 0700) != 0 && errno != EEXIST)
		goto fail;
	if (lstat(t->home, &st) != 0 || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	if (chown(t->home, t->uid, t->gid) != 0 || chmod(t->home, 0700) != 0)
		goto fail;
	tenant_home_quota(t);
	return (0);
fail:
	xasprintf(cause, "tenant: %s: %s", t->home, strerror(errno));
	return (-1);
}

/*
 * Making an account runs groupadd and useradd off the loop (proc_async:
 * 70-200 ms, more on a loaded host), one step after the other, each with
 * its standard error merged into what it prints so that a failure names
 * useradd's own reason.  The owner's jobs wait at the gate meanwhile
 * (tenant_admit), and are weighed again the moment it is over.
 */
struct tenant_make {
	char	*name;
	int	 step;		/* 0: groupadd, 1: useradd */
};

static void	tenant_made_cb(char *, int, void *);

/* Starts m's step; -1 with *cause if it cannot be. */
static int
tenant_make_step(struct tenant_make *m, const struct tenant *t,
    char **cause)
{
	char	 uid[16], comment[96];
	char	*gadd[] = { "sh", "-c", TENANT_MERGED, "groupadd", "-g", uid,
		    t->account, NULL };
	char	*uadd[] = { "sh", "-c", TENANT_MERGED, "useradd", "-u", uid,
		    "-g", uid, "-d", t->home, "-M", "-s", "/usr/sbin/nologin",
		    "-c", comment, t->account, NULL };

	snprintf(uid, sizeof uid, "%u", (u_int)t->uid);
	snprintf(comment, sizeof comment, "gmux tenant %s", t->name);
	if (m->step == 0 && getgrgid(t->gid) != NULL)
		m->step = 1;	/* its group is there */
	return (proc_async_start(m->step == 0 ? gadd : uadd, TENANT_TOOL_MS,
	    tenant_made_cb, m, cause));
}

/*
 * Why a watched tool failed (the caller frees it): its name, what it
 * worked on, and the first line it printed (TENANT_MERGED puts its
 * standard error there).
 */
char *
tenant_tool_cause(const char *tool, const char *what, char *out,
    int status)
{
	char	*line, *cause;

	if (out == NULL) {
		xasprintf(&cause, "tenant: %s %s %s", tool, what,
		    status == PROC_ASYNC_TIMEOUT ? "ran past its time" :
		    "was cancelled");
		return (cause);
	}
	line = strtrim(out);
	line[strcspn(line, "\n")] = '\0';
	if (*line == '\0')
		xasprintf(&cause, "tenant: %s %s failed (exit %d)", tool,
		    what, status);
	else
		xasprintf(&cause, "tenant: %s %s failed: %.200s", tool, what,
		    line);
	return (cause);
}

/*
 * In the loop: a step is over.  The next one starts, or the account is
 * made, or it failed; then the owner's held jobs are weighed again: they
 * start, or fail with the reason (told once: a later job tries again).
 */
static void
tenant_made_cb(char *out, int status, void *arg)
{
	struct tenant_make	*m = arg;
	struct tenant		*t;
	char			*cause = NULL;

	if ((t = tenant_find(m->name)) == NULL)
		goto out;	/* removed meanwhile */
	if (status != 0)
		cause = tenant_tool_cause(m->step == 0 ? "groupadd" :
		    "useradd", t->account, out, status);
	else if (m->step == 0) {
		m->step = 1;
		if (tenant_make_step(m, t, &cause) == 0) {
			free(out);
			return;
		}
	}
	t->making = 0;
	if (cause != NULL) {
		log_warnx("tenant %s: %s", t->name, cause);
		t->make_error = cause;
	} else
		log_info("tenant %s: account %s made, uid %u", t->name,
		    t->account, (u_int)t->uid);
	tenant_quota_tick();
	if ((t = tenant_find(m->name)) != NULL) {
		free(t->make_error);
		t->make_error = NULL;
	}
out:
	free(out);
	free(m->name);
	free(m);
}

/*
 * t's account is not there: 2 with *cause while it is made (started on
 * the first call); -1 with *cause if making it failed or cannot start.
 */
static int
tenant_make(struct tenant *t, char **cause)
{
	struct tenant_make	*m;

	if (!t->making) {
		m = xcalloc(1, sizeof *m);
		m->name = xstrdup(t->name);
		if (tenant_make_step(m, t, cause) != 0) {
			free(m->name);
			free(m);
			return (-1);
		}
		t->making = 1;
	}
	xasprintf(cause, "tenant: making %s's account", t->name);
	return (2);
}

/* Does the account already exist, as t's?  1, 0 (no), -1 (another's). */
static int
tenant_exists(const struct tenant *t, char **cause)
{
	struct passwd	*pw;

	if ((pw = getpwnam(t->account)) == NULL)
		return (0);
	if (pw->pw_uid == t->uid)
		return (1);
	xasprintf(cause, "tenant: account %s exists with UID %u, not %u",
	    t->account, (u_int)pw->pw_uid, (u_int)t->uid);
	return (-1);
}

/* A mapped tenant's user: any account but root's. */
static int
tenant_mapped(const struct tenant *t, uid_t *uid, gid_t *gid, char **home,
    char **cause)
{
	struct passwd	*pw;

	if ((pw = getpwnam(t->user)) == NULL || pw->pw_uid == 0) {
		xasprintf(cause, "tenant: %s is mapped to '%s', %s", t->name,
		    t->user, pw == NULL ? "which is no account here" :
		    "which is root's");
		return (-1);
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	*home = xstrdup(pw->pw_dir);
	return (1);
}

/*
 * The account owner's jobs run as (docs/tenants.md): 1 with its UID, GID
 * and home (the caller frees it); 0 if they run as the daemon's user; 2
 * with *cause while its UID is being allocated in the cluster or its
 * account made (the caller waits and asks again: the owner's held jobs
 * are weighed again once it is made); -1 with *cause if it cannot be
 * had.  Starts making the account on its first use here.
 */
int
tenant_account(const char *owner, uid_t *uid, gid_t *gid, char **home,
    char **cause)
{
	struct tenant	*t;
	const char	*why;
	int		 rc;

	*home = NULL;
	if (!tenant_accounts_on(&why) || strcmp(owner, api_me()) == 0)
		return (0);
	if ((t = tenant_find(owner)) != NULL && t->user != NULL)
		return (tenant_mapped(t, uid, gid, home, cause));
	if (tenant_name_check(owner, cause) != 0)
		return (-1);
	t = tenant_get(owner);
	if (t->make_error != NULL) {	/* its UID or account: told once */
		*cause = xstrdup(t->make_error);
		return (-1);
	}
	if (t->ending) {
		xasprintf(cause, "tenant: %s's account is being archived",
		    t->name);
		return (2);
	}
	if (!t->has_uid) {
		if ((rc = tenant_cluster_uid(t, cause)) != 0)
			return (rc);
		if (tenant_pick_uid(t, cause) != 0)
			return (-1);
	}
	if ((rc = tenant_exists(t, cause)) == -1)
		return (-1);
	if (rc == 0)
		return (tenant_make(t, cause));
	if (tenant_home(t, cause) != 0)
		return (-1);
	/* Without a range only its containers fail (podman says why). */
	if ((rc = tenant_subids(t, cause)) == 2)
		return (2);
	if (rc == -1) {
		log_warnx("%s", *cause);
		free(*cause);
		*cause = NULL;
	}
	if (t->state != TENANT_ACTIVE) {
		t->state = TENANT_ACTIVE;
		tenants_save();
	}
	t->busy = 1;	/* tenant_idle_tick: its leftovers after its last */
	*uid = t->uid;
	*gid = t->gid;
	*home = xstrdup(t->home);
	return (1);
}
