/*
 * server.c: the daemon.  One libevent loop owns all state: the HTTP API on
 * the Unix socket, the keepers' links, inotify on followed logs, signals
 * and a one-second tick.  Stopping the daemon (SIGTERM, Ctrl-C) leaves the
 * jobs running under their keepers; the next daemon re-adopts them.
 */

#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gmux.h"

struct event_base	*server_base;
struct cards		 server_cards;

static struct evhttp	*server_http;
static struct event	*server_tick_ev;
static int		 server_lock_fd = -1;

int			 server_audit_report_only;
static int		 server_usage_busy;	/* a usage query in flight */
#define SERVER_USAGE_TICKS	2		/* measure every 2 s */
struct ledger		*server_ledger;
int64_t			 server_started;

static void	server_tick(void);

/* Takes the home's lock; a second daemon on one home is refused. */
static int
server_lock(char **cause)
{
	char	*path, buf[32];
	ssize_t	 n;

	xasprintf(&path, "%s/gmux.pid", path_home());
	server_lock_fd = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
	free(path);
	if (server_lock_fd == -1) {
		xasprintf(cause, "%s: %s", path_home(), strerror(errno));
		return (-1);
	}
	if (flock(server_lock_fd, LOCK_EX|LOCK_NB) == -1) {
		n = pread(server_lock_fd, buf, sizeof buf - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		xasprintf(cause, "a daemon already serves %s (pid %s)",
		    path_home(), *buf ? buf : "?");
		close(server_lock_fd);
		server_lock_fd = -1;
		return (-1);
	}
	return (0);
}

static void
server_write_pid(void)
{
	char	 buf[32];
	int	 n;

	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(server_lock_fd, 0) == 0)
		pwrite(server_lock_fd, buf, (size_t)n, 0);
}

static int
server_listen(char **cause)
{
	struct sockaddr_un	 sun;
	const char		*path = path_socket();
	mode_t			 old;
	int			 fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: socket path too long; set a shorter "
		    "GMUX_HOME", path);
		return (-1);
	}
	memcpy(sun.sun_path, path, strlen(path));
	unlink(path);	/* stale: the lock says no daemon runs */
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0);
	if (fd == -1)
		fatal("socket");
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		umask(old);
		xasprintf(cause, "%s: %s", path, strerror(errno));
		close(fd);
		return (-1);
	}
	umask(old);
	chmod(path, 0600);
	if (listen(fd, 128) == -1)
		fatal("listen");
	return (fd);
}

static void
server_signal_cb(evutil_socket_t sig, short events, void *arg)
{
	pid_t	 pid;
	int	 ws;

	switch (sig) {
	case SIGCHLD:
		/*
		 * Keepers are our children until we go; job ends come by link.
		 * The vendors' tools are children too: their ends are theirs.
		 */
		while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
			proc_async_reaped(pid, ws);
		break;
	case SIGINT:
	case SIGTERM:
		log_info("signal %d: stopping; jobs keep running", (int)sig);
		event_base_loopexit(server_base, NULL);
		break;
	}
}

static void
server_tick_cb(evutil_socket_t fd, short events, void *arg)
{
	server_tick();
}

/*
 * An audit's answer: the driver's GPU processes, checked against the jobs
 * running now (some may have ended or started while the tools ran).  What
 * is found is shown on the job (gmux ps) until it ends.
 */
static void
server_audit_done(const struct card_procs *ps, void *arg)
{
	struct audit_job	*aj = NULL;
	struct audit_offender	*off = NULL;
	struct job		*j;
	u_int			 n = 0, noff, i, c;
	char			 card[32];

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state != JOB_RUNNING || j->cards == 0)
			continue;
		aj = xreallocarray(aj, n + 1, sizeof *aj);
		aj[n].id = j->id;
		aj[n].keeper = j->keeper_pid;
		aj[n].cards = j->cards;
		aj[n].cmem = j->cmem;
		aj[n].cap = j->cmem != NULL ? 0 : j->mem;
		for (c = 0; j->cmem != NULL && c < server_cards.n; c++) {
			if (j->cards & (1ULL << c))
				aj[n].cap += j->cmem[c];
		}
		n++;
	}
	noff = audit_act(ps, aj, n, server_audit_report_only, &off);
	for (i = 0; i < noff; i++) {
		if ((j = job_find_id(off[i].job)) == NULL)
			continue;
		*card = '\0';
		if (off[i].card >= 0)
			snprintf(card, sizeof card, " (card %d)", off[i].card);
		free(j->audit);
		xasprintf(&j->audit, "pid %ld: %s%s%s", (long)off[i].pid,
		    off[i].why, card, off[i].stop && !server_audit_report_only ?
		    " (stopped)" : "");
	}
	free(off);
	free(aj);
}

/* The cards' measured use came in: kept for top, /metrics, the cluster. */
static void
server_usage_done(struct card_usages *us, const char *cause, void *arg)
{
	u_int	 i;

	server_usage_busy = 0;
	for (i = 0; us != NULL && i < us->n; i++) {
		if (us->v[i].card < 0 || (u_int)us->v[i].card >= server_cards.n)
			continue;
		server_cards.v[us->v[i].card].util = us->v[i].util;
		server_cards.v[us->v[i].card].mem_measured = us->v[i].mem_used;
	}
}

/* Asks the real cards' tools how busy they are, without waiting. */
static void
server_tick_usage(void)
{
	static u_int	 ticks;
	char		*cause = NULL;

	if (server_usage_busy || ticks++ % SERVER_USAGE_TICKS != 0)
		return;
	switch (cards_usage_start(&server_cards, server_usage_done, NULL,
	    &cause)) {
	case 0:
		server_usage_busy = 1;
		break;
	case -1:
		log_debug("%s: %s", __func__, cause);
		free(cause);
		break;
	}
}

/* Once a second: work that is due. */
static void
server_tick(void)
{
	char	*cause = NULL;

	enforce_tick(&server_cards, server_audit_done, NULL);
	server_tick_usage();
	server_sched_tick();
	jobspec_host_tick();
	job_start_tick();
	follow_heartbeat(clock_mono_ms());
	if (server_ledger != NULL &&
	    ledger_tick(server_ledger, clock_ms(), &cause) != 0) {
		log_warnx("ledger: %s", cause);
		free(cause);
	}
	retention_tick();
	tenant_tick();
	worktree_tick();
}

static void
server_detach(int *ready)
{
	int	 p[2];
	char	 c;
	pid_t	 pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("pipe");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid != 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	setsid();
	*ready = p[1];
}

/* Once it serves, a detached daemon lets go of the terminal. */
static void
server_ready(int ready)
{
	int	 fd;

	if (ready == -1)
		return;
	if (chdir("/") == -1)
		log_warn("chdir /");
	if ((fd = open("/dev/null", O_RDWR)) != -1) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	write_all(ready, "r", 1);
	close(ready);
}

/*
 * Reconnects to the keepers of the jobs that were running.  The list is
 * taken first: adopting one that ended may start a queued job, which has
 * a keeper of its own already.
 */
static void
server_adopt_keepers(void)
{
	struct job	**v = NULL;
	u_int		  n = 0, i;
	struct job	 *j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state != JOB_RUNNING)
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = j;
	}
	for (i = 0; i < n; i++)
		job_adopt(v[i]);
	free(v);
}

/* Whether job id is running (a container of one that is not is orphaned). */
static int
server_job_running(u_int id)
{
	struct job	*j;
	char		 name[16];

	snprintf(name, sizeof name, "j%u", id);
	return ((j = job_find(name)) != NULL && j->state == JOB_RUNNING);
}

static int
server_setup(const char *fake, char **cause)
{
	struct evconnlistener	*l;
	int			 fd;

	if (config_load(cause) != 0)
		return (-1);
	/* a bad cluster setting is said before anything is served or said */
	if (cluster_check(cause) < 0)
		return (-1);
	if (server_tls_addr == NULL)
		server_tls_addr = config_get("ADDR");	/* docs/cluster.md */
	if (cards_detect(&server_cards, fake, cause) != 0)
		return (-1);
	if (server_sched_init(cause) != 0)
		return (-1);
	enforce_init(&server_cards);
	if (state_open(cause) != 0)
		return (-1);
	if ((server_ledger = ledger_open(path_db(), cause)) == NULL)
		return (-1);
	server_base = event_base_new();
	proc_async_init(server_base);
	follow_init();
	/*
	 * The scheduler first knows every job as it was, then the keepers are
	 * asked: one that ended while no daemon ran then frees its room for
	 * the queue, and a --requeue victim that died meanwhile is requeued.
	 * Last, a running job the scheduler could not take back is stopped,
	 * and one pass admits what fits.
	 */
	state_load_jobs();
	job_array_load();
	prepare_restore();
	api_build_restore();
	server_sched_restore();
	server_adopt_keepers();
	container_sweep(server_job_running);
	container_account_sweep(server_job_running);
	container_config_start();
	server_sched_resume();
	if ((fd = server_listen(cause)) == -1)
		return (-1);
	server_http = evhttp_new(server_base);
	api_setup(server_http);
	l = evconnlistener_new(server_base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE|LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (l == NULL || evhttp_bind_listener(server_http, l) == NULL)
		fatalx("evhttp_bind_listener");
	if (server_tls_addr != NULL) {
		jail_serve_check();
		if (server_tls_start(cause) != 0)
			return (-1);
	}
	if (server_announce_start(cause) != 0)
		return (-1);
	if (cluster_init(server_base, cause) != 0)
		return (-1);
	ui_start();
	return (0);
}

static void
server_add_signal(int sig)
{
	struct event	*ev;

	ev = evsignal_new(server_base, sig, server_signal_cb, NULL);
	event_add(ev, NULL);
}

/*
 * Says once what this daemon serves: its socket, its cards, its address.
 * In the log; on stderr too in the foreground (a detached one has said
 * what it had to on its way out: the invite).
 */
static void
server_say_serving(int detached)
{
	char	*cards = NULL, *s, *mem;
	u_int	 i;

	for (i = 0; i < server_cards.n; i++) {
		mem = format_size(server_cards.v[i].memory);
		xasprintf(&s, "%s%s%s %s %s%s", cards ? cards : "", cards ?
		    ", " : "", vendor_name(server_cards.v[i].vendor),
		    server_cards.v[i].model, mem, server_cards.v[i].fake ?
		    " (fake)" : "");
		free(cards);
		free(mem);
		cards = s;
	}
	xasprintf(&s, "serving %s: %u card%s%s%s%s%s", path_socket(),
	    server_cards.n, server_cards.n == 1 ? "" : "s", cards ? " (" : "",
	    cards ? cards : "", cards ? ")" : "", server_tls_addr != NULL ?
	    "; TLS on " : "");
	log_info("%s%s", s, server_tls_addr ? server_tls_addr : "");
	if (!detached)
		fprintf(stderr, "gmux serve: %s%s\n", s, server_tls_addr ?
		    server_tls_addr : "");
	free(s);
	free(cards);
}

/*
 * The home's lock goes with the daemon: no gmux.pid is left behind.  It
 * is removed while still locked, once everything it guards is closed: a
 * daemon starting meanwhile is refused by this one's lock, or makes a
 * file of its own.
 */
static void
server_unlock(void)
{
	char	*path;

	xasprintf(&path, "%s/gmux.pid", path_home());
	if (unlink(path) != 0 && errno != ENOENT)
		log_warn("%s", path);
	free(path);
	close(server_lock_fd);
	server_lock_fd = -1;
}

/*
 * Runs the daemon: in the foreground, or detached once it serves.  Returns
 * the process's exit status.
 */
int
server_main(const char *fake, int detach)
{
	struct timeval	 one = { 1, 0 };
	char		*cause = NULL, *logpath, *rundir;
	int		 ready = -1;

	if (mkdir_p(path_home(), 0700) != 0 || mkdir_p(path_jobs(), 0700) != 0)
		fatal("%s", path_home());
	rundir = xstrdup(path_socket());
	*strrchr(rundir, '/') = '\0';
	if (mkdir_p(rundir, 0700) != 0)
		fatal("%s", rundir);
	free(rundir);
	if (server_lock(&cause) != 0)
		goto fail;
	if (detach) {
		server_detach(&ready);
		xasprintf(&logpath, "%s/gmux.log", path_home());
		log_open(log_level() > 0 ? log_level() : 1, logpath);
		free(logpath);
	}
	server_write_pid();
	server_started = clock_ms();
	signal(SIGPIPE, SIG_IGN);
	if (server_setup(fake, &cause) != 0)
		goto fail;
	server_add_signal(SIGINT);
	server_add_signal(SIGTERM);
	server_add_signal(SIGCHLD);
	server_tick_ev = event_new(server_base, -1, EV_PERSIST, server_tick_cb,
	    NULL);
	event_add(server_tick_ev, &one);
	server_say_serving(ready != -1);
	server_ready(ready);
	event_base_dispatch(server_base);
	cluster_shutdown();
	evhttp_free(server_http);
	server_announce_stop();
	server_tls_stop();
	api_remote_close();
	unlink(path_socket());
	proc_async_shutdown();
	enforce_shutdown();
	ledger_close(server_ledger);
	server_ledger = NULL;
	state_close();
	server_unlock();
	return (0);
fail:
	fprintf(stderr, "gmux serve: %s\n", cause);
	log_warnx("%s", cause);
	free(cause);
	return (1);
}
