/*
 * job.c: jobs as the daemon sees them.  A job's life: created (queued),
 * started under a keeper (running), then ended (exited, stopped, preempted
 * or failed).  The keeper's link tells the daemon the job's pid and, by
 * closing, that it ended; the status file the keeper left says how.
 */

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"

#define JOB_LINK_MAX	(64 * 1024)	/* a keeper never says this much */

struct jobs all_jobs = TAILQ_HEAD_INITIALIZER(all_jobs);

static void	job_link_cb(evutil_socket_t, short, void *);
static u_int	job_ceiling(const struct job *, u_int);
static uint64_t	job_card_mem(const struct job *, u_int);

struct job *
job_find_id(u_int id)
{
	struct job	*j;

	TAILQ_FOREACH_REVERSE(j, &all_jobs, jobs, entry) {
		if (j->id == id)
			return (j);
		if (j->id < id)
			break;
	}
	return (NULL);
}

/* Finds a job by "j12" or "12", an array's element by "j12_3". */
struct job *
job_find(const char *name)
{
	struct job	*j;
	u_int		 id;
	char		*cause = NULL;

	if (strchr(name, '_') != NULL) {
		TAILQ_FOREACH_REVERSE(j, &all_jobs, jobs, entry) {
			if (strcmp(j->name, name) == 0 || (*name != 'j' &&
			    strcmp(j->name + 1, name) == 0))
				return (j);
		}
		return (NULL);
	}
	if (*name == 'j')
		name++;
	if (parse_uint(name, 1, UINT32_MAX - 1, &id, &cause) != 0) {
		free(cause);
		return (NULL);
	}
	/* (an array's element too: its own number, as the books name it) */
	return (job_find_id(id));
}

/* Creates a queued job, taking over what req holds; the list owns it. */
struct job *
job_create(u_int id, const char *owner, struct jobreq *req)
{
	struct job	*j;

	j = xcalloc(1, sizeof *j);
	j->id = id;
	j->owner = xstrdup(owner);
	j->req = *req;
	jobreq_init(req);
	job_set_id(j, id);
	j->seats = j->req.seats;
	j->mem = j->req.mem;
	j->card = -1;
	j->by_card = -1;
	j->exit_code = -1;
	j->ctl_fd = -1;
	j->log_wd = -1;
	j->created = clock_ms();
	j->submit = j->created;
	TAILQ_INIT(&j->followers);
	TAILQ_INSERT_TAIL(&all_jobs, j, entry);
	return (j);
}

/* Names a job created with id 0 once it is sure to be kept. */
void
job_set_id(struct job *j, u_int id)
{
	const struct jobspec	*s = &j->req.spec;

	j->id = id;
	if (s->array_of != 0)
		snprintf(j->name, sizeof j->name, "j%u_%u", s->array_of,
		    s->array_index);
	else
		snprintf(j->name, sizeof j->name, "j%u", id);
}

void
job_free(struct job *j)
{
	TAILQ_REMOVE(&all_jobs, j, entry);
	if (j->ctl_ev != NULL)
		event_free(j->ctl_ev);
	if (j->ctl_fd != -1)
		close(j->ctl_fd);
	jobreq_clear(&j->req);
	free(j->ceil);
	free(j->cmem);
	free(j->link_buf);
	free(j->audit);
	free(j->owner);
	free(j->reason);
	free(j);
}

/* Appends NAME=VALUE to a NULL-terminated vector, replacing NAME if set. */
void
job_env_set(char ***envp, const char *fmt, ...)
{
	va_list	 ap;
	char	*kv, **v = *envp;
	size_t	 n, i, klen;

	va_start(ap, fmt);
	xvasprintf(&kv, fmt, ap);
	va_end(ap);
	klen = strcspn(kv, "=") + 1;
	n = strv_len(v);
	for (i = 0; i < n; i++) {
		if (strncmp(v[i], kv, klen) == 0) {
			free(v[i]);
			v[i] = kv;
			return;
		}
	}
	v = xreallocarray(v, n + 2, sizeof *v);
	v[n] = kv;
	v[n + 1] = NULL;
	*envp = v;
}

/*
 * The vendor's device variable names all the job's cards (each card's
 * enforcement set it to its own), for a job on several cards.
 */
static void
job_env_devices(struct job *j, char ***envp)
{
	const char	*var;
	char		*list = NULL, *id, *old;
	u_int		 c;

	var = vendor_device_env(server_cards.v[j->card].vendor);
	if (var == NULL || __builtin_popcountll(j->cards) < 2)
		return;
	for (c = 0; c < server_cards.n; c++) {
		if ((j->cards & (1ULL << c)) == 0)
			continue;
		id = card_device_id(&server_cards.v[c]);
		old = list;
		xasprintf(&list, "%s%s%s", old ? old : "", old ? "," : "", id);
		free(old);
		free(id);
	}
	job_env_set(envp, "%s=%s", var, list);
	free(list);
}

/*
 * A remote job's temporary files and home are its own directory
 * (jobs/jN/tmp, made empty at each start and removed at the end): /tmp
 * and the daemon's home are out of its jail.
 */
static void
job_env_jail(struct job *j, char ***envp)
{
	static const char	*vars[] = { "TMPDIR", "TMP", "TEMP", "HOME" };
	char			*tmp;
	u_int			 i;

	tmp = path_job_file(j->id, "tmp");
	for (i = 0; i < nitems(vars); i++)
		job_env_set(envp, "%s=%s", vars[i], tmp);
	free(tmp);
}

/*
 * The job's environment: the caller's, then gmux's own variables, then
 * what enforcement on each of its cards needs.  NULL with *cause if a card
 * cannot take it (enforcement refused a slot).
 */
static char **
job_env(struct job *j, char **cause)
{
	char	**env, *share;
	u_int	  c;

	/* A remote job's container takes gmux's variables only. */
	if (j->req.env != NULL && !(j->req.confined &&
	    j->req.spec.image != NULL))
		env = strv_copy(j->req.env);
	else {
		env = xcalloc(1, sizeof *env);
		job_env_set(&env, "PATH=/usr/local/bin:/usr/bin:/bin");
		if (getenv("HOME") != NULL)
			job_env_set(&env, "HOME=%s", getenv("HOME"));
	}
	share = format_share(j->seats);
	job_env_set(&env, "GMUX_JOB_ID=%s", j->name);
	job_env_set(&env, "GMUX_SHARE=%s", share);
	job_env_set(&env, "GMUX_MEM=%llu", (unsigned long long)j->mem);
	free(share);
	for (c = 0; c < server_cards.n; c++) {
		if ((j->cards & (1ULL << c)) == 0)
			continue;
		if (enforce_job_env(j->id, &server_cards.v[c], j->seats,
		    job_ceiling(j, c), job_card_mem(j, c), &env, cause) != 0) {
			strv_free(env);
			return (NULL);
		}
	}
	if (j->card >= 0)
		job_env_devices(j, &env);
	if (j->req.confined)
		job_env_jail(j, &env);
	jobspec_host_env(j, &env);
	return (env);
}

/* The job's compute ceiling on card c: its guarantee unless it bursts. */
static u_int
job_ceiling(const struct job *j, u_int c)
{
	if (j->ceil == NULL || c >= server_cards.n || j->ceil[c] < j->seats)
		return (j->seats);
	return (j->ceil[c]);
}

/*
 * The job's memory cap on card c.  A default cap is a share of each card's
 * memory, so a job on cards of different sizes has a cap per card.
 */
static uint64_t
job_card_mem(const struct job *j, u_int c)
{
	if (j->cmem == NULL || c >= server_cards.n || j->cmem[c] == 0)
		return (j->mem);
	return (j->cmem[c]);
}

/* The job's terms on card c, one of j->cards; j->mem is its first card's. */
void
job_set_terms(struct job *j, u_int c, u_int ceiling, uint64_t mem)
{
	if (c >= server_cards.n)
		return;
	if (j->ceil == NULL)
		j->ceil = xcalloc(server_cards.n, sizeof *j->ceil);
	if (j->cmem == NULL)
		j->cmem = xcalloc(server_cards.n, sizeof *j->cmem);
	j->ceil[c] = ceiling;
	j->cmem[c] = mem;
	if (j->cards != 0 && c == (u_int)__builtin_ctzll(j->cards))
		j->mem = mem;
}

/* The books: from now, the job holds what its record says. */
void
job_account(struct job *j, int64_t now)
{
	struct ledger_use	*u;
	struct card		*c;
	char			*cause = NULL;
	u_int			 i, n = 0;
	char			*fence;

	if (server_ledger == NULL || j->cards == 0)
		return;
	fence = fence_text(j->req.fence);
	u = xcalloc(server_cards.n, sizeof *u);
	for (i = 0; i < server_cards.n; i++) {
		if ((j->cards & (1ULL << i)) == 0)
			continue;
		c = &server_cards.v[i];
		u[n].job = j->id;
		u[n].owner = j->owner;
		u[n].card = i;
		u[n].vendor = vendor_name(c->vendor);
		u[n].model = c->model;
		u[n].seats = j->seats;
		u[n].ceiling = job_ceiling(j, i);
		u[n].mem = job_card_mem(j, i);
		u[n].fence = fence;
		n++;
	}
	if (ledger_set(server_ledger, j->id, u, n, now, &cause) != 0) {
		log_warnx("%s: %s: %s", __func__, j->name, cause);
		free(cause);
	}
	free(fence);
	free(u);
}

/* The books: the job holds nothing from time t. */
static void
job_account_end(struct job *j, int64_t t)
{
	char	*cause = NULL;

	if (server_ledger == NULL || j->cards == 0)
		return;
	if (ledger_end(server_ledger, j->id, t, &cause) != 0) {
		log_warnx("%s: %s: %s", __func__, j->name, cause);
		free(cause);
	}
}

static void
job_watch_link(struct job *j)
{
	j->linked = clock_mono_ms();
	j->ctl_ev = event_new(server_base, j->ctl_fd, EV_READ|EV_PERSIST,
	    job_link_cb, j);
	event_add(j->ctl_ev, NULL);
}

/*
 * A terminal's session as an account: tmux runs its commands with $SHELL,
 * else the account's login shell, which is nologin: a $SHELL that cannot
 * run here becomes /bin/sh.
 */
static void
job_account_shell(char ***env)
{
	const char	*sh = NULL, *base;
	size_t		 i;

	for (i = 0; (*env)[i] != NULL; i++) {
		if (strncmp((*env)[i], "SHELL=", 6) == 0)
			sh = (*env)[i] + 6;
	}
	if (sh != NULL && *sh == '/' && access(sh, X_OK) == 0) {
		base = strrchr(sh, '/') + 1;
		if (strcmp(base, "nologin") != 0 && strcmp(base, "false") != 0)
			return;
	}
	job_env_set(env, "SHELL=/bin/sh");
}

/*
 * With accounts, the job runs as its owner's (docs/tenants.md): its
 * keeper drops to it, its environment names it, and a remote job's or a
 * terminal's directory (and those above it) crossable, its tree and its
 * terminal's files (the tmux session's) the account's.
 */
static int
job_account_of(struct job *j, struct keeper_spec *s, struct jail_spec *js,
    char **cause)
{
	char	*home, *path, *name;
	int	 rc;

	if ((rc = tenant_account(j->owner, &s->uid, &s->gid, &home,
	    cause)) <= 0)
		return (rc);
	if (rc != 1)
		return (-1);	/* its UID not there yet: it fails */
	s->as_account = 1;
	job_env_set(&s->env, "HOME=%s", home);
	name = user_name(s->uid);
	job_env_set(&s->env, "USER=%s", name);
	job_env_set(&s->env, "LOGNAME=%s", name);
	free(name);
	if (j->req.confined)
		strv_add(&js->sockets, home);	/* its own, in its jail */
	free(home);
	if (!j->req.confined && !(j->req.flags & JOB_TERM))
		return (0);
	/* Crossed on the way to its tree, never listed; files stay 0600. */
	if (chmod(path_home(), 0711) != 0 || chmod(path_jobs(), 0711) != 0 ||
	    chmod(s->dir, 0711) != 0) {
		xasprintf(cause, "%s: %s", s->dir, strerror(errno));
		return (-1);
	}
	rc = 0;
	if (j->req.flags & JOB_TERM) {
		job_account_shell(&s->env);
		path = path_job_file(j->id, "term");
		rc = tenant_give(path, s->uid, s->gid, cause);
		free(path);
	}
	path = path_job_file(j->id, "work");
	if (rc == 0 && j->req.confined && access(path, F_OK) == 0)
		rc = tenant_give(path, s->uid, s->gid, cause);
	free(path);
	return (rc);
}

/*
 * Starts a job already placed (j->card, j->seats, j->mem set) under a new
 * keeper.  Returns -1 with *cause if the keeper could not be started.
 */
int
job_start(struct job *j, char **cause)
{
	struct keeper_spec	 s;
	struct jail_spec	 js;
	struct container_spec	 cs;
	struct overlay		*ov = NULL;
	char			*dir, *path, *out_path = NULL;
	char			*err_path = NULL, *in_path = NULL;
	char			**term_argv = NULL;
	int			 rc = -1, fd;

	/* Confined when it came, confined now, or not started at all. */
	if (j->req.confined && jail_ready(cause) != 0)
		return (-1);
	/* Over its stored tree, as it was set up, or not at all. */
	if (worktree_overlay(j->id, &ov, cause) != 0)
		return (-1);
	dir = path_job(j->id);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		overlay_free(ov);
		free(dir);
		return (-1);
	}
	/* The log exists before the keeper runs, so followers can watch it. */
	path = path_job_file(j->id, "log");
	if ((fd = open(path, O_WRONLY|O_CREAT|O_CLOEXEC, 0600)) != -1)
		close(fd);
	free(path);
	/* A requeued job's last run left a status: it is not this run's. */
	path = path_job_file(j->id, "status");
	unlink(path);
	free(path);
	memset(&s, 0, sizeof s);
	s.id = j->id;
	s.dir = dir;
	s.argv = j->req.argv;
	s.cwd = j->req.cwd;
	s.umask = j->req.umask;
	s.fence = j->req.fence;
	s.overlay = ov;
	if (s.cwd == NULL && (s.cwd = getenv("HOME")) == NULL)
		s.cwd = "/";
	memset(&js, 0, sizeof js);
	if (j->req.confined) {
		js.work = path_job_file(j->id, "work");
		js.tmp = path_job_file(j->id, "tmp");
		enforce_jail_paths(j->cards, &js);
		js.loopback = jail_open_loopback();
		s.cwd = js.work;
		s.jail = &js;
	}
	memset(&cs, 0, sizeof cs);
	if ((j->req.flags & JOB_TERM) &&
	    term_job_prepare(j, &js, &term_argv, cause) != 0)
		goto out;
	if (term_argv != NULL)
		s.argv = term_argv;
	if (j->req.spec.image != NULL) {
		/* Its fence: podman's network, or inside (container_check). */
		container_spec_make(j->cards, &j->req, &cs);
		s.container = &cs;
		if (!cs.fenced)
			s.fence = NULL;
		/* A remote job's: its container is its jail (podman's). */
		if (j->req.confined) {
			container_spec_confine(&cs, j->id, ov);
			s.jail = NULL;
			s.overlay = NULL;
			s.cwd = dir;
		}
		if (j->req.spec.workspace &&
		    workspace_volumes(j, &cs.volumes, cause) != 0)
			goto out;
	}
	if ((s.env = job_env(j, cause)) == NULL)
		goto out;
	workspace_shell_unjail(j, &s);
	if (job_account_of(j, &s, &js, cause) != 0)
		goto out;
	workspace_shell_account(j, &s);
	if (container_env_file(&cs, &j->req, &s, cause) != 0)
		goto out;
	if (container_account_cwd(&s) != 0 ||
	    tenant_publish(j, &s.argv, &s.env, j->req.confined ? &js : NULL,
	    cause) != 0)
		goto out;
	if (!j->req.confined && s.container == NULL)
		s.ro = tenant_datasets();	/* its jail reads them else */
	if (jobspec_host_paths(j, &out_path, &err_path, cause) != 0)
		goto out;
	s.out_path = out_path;
	s.err_path = err_path;
	s.orphan_ms = cluster_job_orphan_ms(j);
	s.grace_ms = j->req.grace_ms;
	if (j->req.spec.stdin_file)
		s.stdin_path = in_path = path_job_file(j->id, "stdin");
	/*
	 * Recorded as running before its keeper exists: a daemon killed in
	 * between finds a running job without a keeper (failed), never a
	 * queued one that would be started twice.
	 */
	j->started = clock_ms();
	job_set_state(j, JOB_RUNNING, JOB_QUIET);	/* told once it runs */
	j->keeper_pid = keeper_spawn(&s, &j->ctl_fd, cause);
	if (j->keeper_pid != -1) {
		/*
		 * (its keeper's pid is saved with the job's, when it says
		 * it)
		 */
		job_watch_link(j);
		job_account(j, j->started);
		rc = 0;
	} else if (j->cards != 0)
		enforce_forget(j->id);
out:
	if (rc != 0 && cs.env_file != NULL)
		container_env_forget(j->id);
	if (s.argv != j->req.argv && s.argv != term_argv)
		strv_free(s.argv);	/* its interpreter's (tenant_publish) */
	strv_free(s.env);
	strv_free(s.ro);
	strv_free(term_argv);
	free(out_path);
	free(err_path);
	free(in_path);
	jail_spec_clear(&js);
	container_spec_clear(&cs);
	overlay_free(ov);
	free(dir);
	log_debug("%s: %s card %d seats %u: %s", __func__, j->name, j->card,
	    j->seats, rc == 0 ? "running" : *cause);
	return (rc);
}

/*
 * Stops a job: a queued one at once, a running one through its keeper
 * (TERM to its group, KILL after grace_ms).  why is "stopped" or
 * "preempted".
 */
int
job_stop(struct job *j, int64_t grace_ms, const char *why)
{
	enum job_state	 s;
	char		*line;
	int64_t		 now;
	int		 rc;

	if (job_ended(j))
		return (0);
	if (j->state == JOB_QUEUED) {
		if (job_state_from_name(why, &s) != 0)
			s = JOB_STOPPED;
		j->ended = clock_ms();
		j->exit_code = -1;
		free(j->reason);	/* it waits no more */
		j->reason = NULL;
		job_set_state(j, s, 0);
		server_sched_gone(j);	/* cancelled: it leaves the queue */
		return (0);
	}
	if (strcmp(why, "stopped") == 0)
		j->stopping = 1;	/* a user's stop: no requeue */
	if (j->ctl_fd == -1)
		return (-1);
	/*
	 * Its keeper sends one TERM and may only bring the KILL forward
	 * (keeper.c): a stop that would not is not sent again (the cluster
	 * asks on every tick until the job has ended).
	 */
	now = clock_mono_ms();
	if (j->stop_kill_at != 0 && now + grace_ms >= j->stop_kill_at)
		return (0);
	xasprintf(&line, "stop %lld %s\n", (long long)grace_ms, why);
	rc = keeper_send(j->ctl_fd, line);
	free(line);
	if (rc == 0)
		j->stop_kill_at = now + grace_ms;
	log_debug("%s: %s grace %lldms (%s)%s", __func__, j->name,
	    (long long)grace_ms, why, rc == 0 ? "" : ": its keeper does not "
	    "read its link");
	return (rc);
}

/*
 * Withdraws a user's stop whose KILL is pending (gmux run's second Ctrl-C
 * detaches: the job keeps running); a preemption is not withdrawn.
 * Returns 0, or -1 if no such stop is pending.
 */
int
job_stop_cancel(struct job *j)
{
	if (j->state != JOB_RUNNING || !j->stopping || j->by != 0 ||
	    j->ctl_fd == -1 || keeper_send(j->ctl_fd, "cancel\n") != 0)
		return (-1);
	j->stopping = 0;
	j->stop_kill_at = 0;
	log_debug("%s: %s", __func__, j->name);
	return (0);
}

static void
job_close_link(struct job *j)
{
	if (j->ctl_ev != NULL) {
		event_free(j->ctl_ev);
		j->ctl_ev = NULL;
	}
	if (j->ctl_fd != -1) {
		close(j->ctl_fd);
		j->ctl_fd = -1;
	}
	free(j->link_buf);
	j->link_buf = NULL;
	j->link_len = 0;
	j->linked = 0;
}

/*
 * The keeper is gone and left no word: what is left of the job goes (its
 * session's processes, those that are this job's), and the job is billed
 * up to the books' last tick, not to now (the daemon may have been down).
 */
static void
job_lost(struct job *j, const char *why)
{
	char	 env[48];
	int64_t	 last;

	snprintf(env, sizeof env, "GMUX_JOB_ID=%s", j->name);
	if (proc_kill_session(j->keeper_pid, env, SIGKILL) != 0)
		log_warnx("%s: keeper lost; its processes killed", j->name);
	j->exit_code = -1;
	free(j->reason);
	j->reason = xstrdup(why != NULL ? why : "its keeper was lost");
	if (server_ledger != NULL &&
	    (last = ledger_last_tick(server_ledger)) > j->started)
		j->ended = last;
}

/*
 * How the job ended, from its exit status (NULL: it is unknown), into j;
 * returns the state it ends in.
 */
static enum job_state
job_end_state(struct job *j, json_t *st, const char *lost)
{
	enum job_state	 s = JOB_FAILED;
	const char	*state;

	if (st != NULL) {
		j->exit_code = (int)json_integer_value(json_object_get(st,
		    "exit_code"));
		state = json_string_value(json_object_get(st, "state"));
		if (state == NULL || job_state_from_name(state, &s) != 0)
			s = JOB_EXITED;
		j->ended = json_integer_value(json_object_get(st, "ended"));
		j->lost = (uint64_t)json_integer_value(json_object_get(st,
		    "output_lost"));
		if (json_is_string(json_object_get(st, "error"))) {
			free(j->reason);
			j->reason = xstrdup(json_string_value(
			    json_object_get(st, "error")));
		}
	} else
		job_lost(j, lost);
	if (j->unplaced)
		s = JOB_FAILED;	/* stopped for want of a place */
	if (j->ended == 0)
		j->ended = clock_ms();
	return (s);
}

/*
 * Records how the job ended, from its exit status (NULL: it is unknown,
 * and lost says why, or NULL: its keeper was lost).
 */
static void
job_record_end(struct job *j, json_t *st, const char *lost)
{
	struct sched_out	 out;
	enum job_state		 s;

	if (j->state != JOB_RUNNING)
		return;
	s = job_end_state(j, st, lost);
	if (j->cards != 0)
		enforce_forget(j->id);
	if (j->req.confined && j->req.spec.container_env != NULL)
		container_env_forget(j->id);	/* its values: not needed */
	log_debug("%s: %s %s exit %d", __func__, j->name, job_state_name(s),
	    j->exit_code);
	/*
	 * Its room goes back.  A --requeue victim of preemption waits again:
	 * its run's books close first, before it may start once more.
	 */
	memset(&out, 0, sizeof out);
	if (server_sched_release(j, s, &out) == 1) {
		job_account_end(j, j->ended);
		job_requeue(j);
		server_sched_apply(&out);
		sched_out_free(&out);
		return;
	}
	/*
	 * Its books close, then the records and its clients (job_set_state),
	 * then what its room lets start.  The caller's environment (secrets,
	 * maybe) is no longer needed, and is not written again.
	 */
	job_account_end(j, j->ended);
	strv_free(j->req.env);
	j->req.env = NULL;
	job_set_state(j, s, 0);
	server_sched_apply(&out);
	sched_out_free(&out);
	workspace_ended(j);
}

/*
 * A preempted --requeue job goes back to the queue: its run is over (its
 * log keeps the run's output and exit frame), the next run starts afresh.
 */
void
job_requeue(struct job *j)
{
	j->exit_code = -1;
	j->started = j->ended = 0;
	j->keeper_pid = j->pgid = 0;
	j->cards = 0;
	j->card = -1;
	j->by = 0;
	j->by_card = -1;
	j->stopping = 0;
	j->stop_kill_at = 0;
	j->seats = j->req.seats;
	j->mem = j->req.mem;
	j->submit = clock_ms();
	free(j->ceil);
	j->ceil = NULL;
	free(j->cmem);
	j->cmem = NULL;
	free(j->reason);
	j->reason = xstrdup("requeued after preemption");
	job_set_state(j, JOB_QUEUED, 0);
}

/*
 * The keeper is gone.  If it did not say how the job ended, its status
 * file does.
 */
static void
job_finish(struct job *j)
{
	json_t	*st;

	job_close_link(j);
	if (j->state != JOB_RUNNING)
		return;
	st = keeper_status(j->id);
	job_record_end(j, st, NULL);
	json_decref(st);
}

/* One line from the keeper; returns 1 if it ended the link. */
static int
job_link_line(struct job *j, const char *line)
{
	long	 pid, keeper;
	json_t	*st;

	keeper = 0;
	if (sscanf(line, "pid %ld %ld", &pid, &keeper) >= 1 && pid > 0) {
		j->pgid = (pid_t)pid;
		if (keeper > 0)	/* a re-adopting daemon may not have it */
			j->keeper_pid = (pid_t)keeper;
		job_save(j);	/* with its keeper's pid */
	} else if (strncmp(line, "exit ", 5) == 0) {
		if ((st = json_loads(line + 5, 0, NULL)) != NULL) {
			/* The keeper has said all it will: let it go. */
			job_close_link(j);
			job_record_end(j, st, NULL);
			json_decref(st);
			return (1);
		}
	}
	return (0);
}

static void
job_link_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job	*j = arg;
	char		 buf[4096], *line, *nl, *lines;
	ssize_t		 n;
	size_t		 used;

	n = read(fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0 || j->link_len + (size_t)n > JOB_LINK_MAX) {
		job_finish(j);
		return;
	}
	/* Lines may be split across reads: keep the unfinished one. */
	j->link_buf = xrealloc(j->link_buf, j->link_len + (size_t)n + 1);
	memcpy(j->link_buf + j->link_len, buf, (size_t)n);
	j->link_len += (size_t)n;
	j->link_buf[j->link_len] = '\0';
	if ((nl = strrchr(j->link_buf, '\n')) == NULL)
		return;
	/* Whole lines are taken out first: one may end this link. */
	used = (size_t)(nl + 1 - j->link_buf);
	lines = xstrndup(j->link_buf, used);
	memmove(j->link_buf, j->link_buf + used, j->link_len - used + 1);
	j->link_len -= used;
	for (line = lines; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		if (job_link_line(j, line) != 0)
			break;
	}
	free(lines);
}

/*
 * After a daemon restart: reconnect to the keeper of a job that was
 * running, or, if it is gone, record how the job ended.
 */
void
job_adopt(struct job *j)
{
	if ((j->ctl_fd = keeper_connect(j->id)) == -1) {
		job_finish(j);
		return;
	}
	log_debug("%s: %s re-adopted", __func__, j->name);
	job_watch_link(j);
	if (server_ledger != NULL && j->card >= 0)
		ledger_adopt(server_ledger, j->id);
}

/*
 * Once a second: a keeper that has not said its job runs (no "pid" line)
 * KEEPER_START_TIMEOUT seconds after its link opened (its fork, or this
 * daemon's adoption) is wedged (a filesystem that does not answer, a
 * lock it will never get): it and what it started are killed, and the
 * job fails saying so, its room freed.  The bound is long by default:
 * a container job's keeper may be loading its image into an account's
 * store before it starts it.
 */
void
job_start_tick(void)
{
	struct job	*j, *next;
	int64_t		 now = clock_mono_ms(), bound;
	char		*why;

	bound = (int64_t)config_uint("KEEPER_START_TIMEOUT", 600, 1,
	    86400) * 1000;
	TAILQ_FOREACH_SAFE(j, &all_jobs, entry, next) {
		if (j->state != JOB_RUNNING || j->pgid != 0 ||
		    j->ctl_fd == -1 || j->linked == 0 ||
		    now - j->linked < bound)
			continue;
		xasprintf(&why, "its keeper did not start it in %llds "
		    "(KEEPER_START_TIMEOUT): killed",
		    (long long)(bound / 1000));
		log_warnx("%s: %s", j->name, why);
		/* alive: its link is open (job_lost kills what it started) */
		if (j->keeper_pid > 1)
			kill(j->keeper_pid, SIGKILL);
		job_close_link(j);
		job_record_end(j, NULL, why);
		free(why);
	}
}

/*
 * The job's fence, and what its keeper counted (jobs/jN/fence, written
 * each second): connects refused and allowed, lookups.
 */
static void
job_json_fence(json_t *o, const struct job *j)
{
	json_t	*st = NULL;
	char	*text, *path;

	text = fence_text(j->req.fence);
	json_object_set_new(o, "fence", json_string(text));
	free(text);
	if ((j->req.fence != NULL || j->req.confined) &&
	    j->state != JOB_QUEUED) {
		path = path_job_file(j->id, "fence");
		st = json_load_file(path, 0, NULL);
		free(path);
	}
	json_object_set_new(o, "fence_stats", st != NULL ? st : json_null());
	json_object_set_new(o, "refused", json_integer(st != NULL ?
	    json_integer_value(json_object_get(st, "refused")) : 0));
}

/*
 * What the scheduler knows of a job: its cards, ceilings, flags, and for a
 * queued one its place and what it waits for, as they are now.
 */
static void
job_json_sched(json_t *o, const struct job *j)
{
	json_t	*cards, *ceil;
	char	 key[16], *why;
	u_int	 c, pos;

	cards = json_array();
	ceil = json_object();
	for (c = 0; c < server_cards.n && c < 64; c++) {
		if ((j->cards & (1ULL << c)) == 0)
			continue;
		json_array_append_new(cards, json_integer(c));
		snprintf(key, sizeof key, "%u", c);
		json_object_set_new(ceil, key, json_real(job_ceiling(j, c) /
		    100.0));
	}
	json_object_set_new(o, "cards", cards);
	json_object_set_new(o, "ceilings", ceil);
	json_object_set_new(o, "position", json_null());
	if (server_sched_where(j, &pos, &why) == 0) {
		json_object_set_new(o, "position", json_integer(pos));
		json_object_set_new(o, "reason", json_string(why));
		free(why);
	}
	json_object_set_new(o, "preempting_for", j->by ? json_integer(j->by) :
	    json_null());
	json_object_set_new(o, "burst", json_boolean(j->req.flags & JOB_BURST));
	json_object_set_new(o, "preemptible",
	    json_boolean(j->req.flags & JOB_PREEMPTIBLE));
	json_object_set_new(o, "requeue",
	    json_boolean(j->req.flags & JOB_REQUEUE));
	json_object_set_new(o, "ncards", json_integer(j->req.ncards));
	json_object_set_new(o, "confined", json_boolean(j->req.confined));
	job_json_fence(o, j);
}

/*
 * The little a stream's info frame says of its job (its id, where it is,
 * why): small whatever the command, so it always fits in a frame.
 */
json_t *
job_info_json(const struct job *j)
{
	json_t	*o;
	char	*why = NULL;
	u_int	 pos;

	o = json_pack("{s:s,s:s}", "id", j->name, "state",
	    job_state_name(j->state));
	json_object_set_new(o, "reason", j->reason ?
	    json_stringn(j->reason, strnlen(j->reason, 4096)) : json_null());
	json_object_set_new(o, "position", json_null());
	if (server_sched_where(j, &pos, &why) == 0) {
		json_object_set_new(o, "position", json_integer(pos));
		json_object_set_new(o, "reason", json_stringn(why,
		    strnlen(why, 4096)));
		free(why);
	}
	json_object_set_new(o, "card", j->card >= 0 ? json_integer(j->card) :
	    json_null());
	return (o);
}

/* Returns the job as the API shows it; the caller owns the reference. */
json_t *
job_to_json(const struct job *j)
{
	json_t	*o, *argv;
	char	*ctr;
	size_t	 i;

	o = json_object();
	json_object_set_new(o, "id", json_string(j->name));
	json_object_set_new(o, "owner", json_string(j->owner));
	json_object_set_new(o, "state", json_string(job_state_name(j->state)));
	json_object_set_new(o, "share", json_real(j->seats / 100.0));
	json_object_set_new(o, "mem", json_integer((json_int_t)j->mem));
	json_object_set_new(o, "card", j->card >= 0 ? json_integer(j->card) :
	    json_null());
	argv = json_array();
	for (i = 0; j->req.argv[i] != NULL; i++)
		json_array_append_new(argv, json_string(j->req.argv[i]));
	json_object_set_new(o, "cmd", argv);
	json_object_set_new(o, "cwd", j->req.cwd ? json_string(j->req.cwd) :
	    json_null());
	json_object_set_new(o, "exit_code", job_ended(j) && j->exit_code >= 0 ?
	    json_integer(j->exit_code) : json_null());
	json_object_set_new(o, "priority", json_integer(j->req.priority));
	json_object_set_new(o, "created", json_integer(j->created));
	json_object_set_new(o, "started", j->started ?
	    json_integer(j->started) : json_null());
	json_object_set_new(o, "ended", j->ended ? json_integer(j->ended) :
	    json_null());
	json_object_set_new(o, "pid", j->pgid ? json_integer(j->pgid) :
	    json_null());
	json_object_set_new(o, "reason", j->reason ? json_string(j->reason) :
	    json_null());
	json_object_set_new(o, "audit", j->audit ? json_string(j->audit) :
	    json_null());
	jobspec_to_json(&j->req.spec, o);
	term_publish_to_json(o, j->req.flags, j->req.publish, j->req.npublish);
	if (j->req.spec.image != NULL && j->state == JOB_RUNNING) {
		ctr = container_name(j->id);
		json_object_set_new(o, "container", json_string(ctr));
		free(ctr);
	}
	if (j->req.spec.array_of != 0) {
		json_object_set_new(o, "array_job", json_sprintf("j%u",
		    j->req.spec.array_of));
		json_object_set_new(o, "array_index",
		    json_integer(j->req.spec.array_index));
		json_object_set_new(o, "job_id", json_sprintf("j%u", j->id));
	}
	job_json_sched(o, j);
	return (o);
}
