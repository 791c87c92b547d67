/*
 * proc-async.c: running a helper program (a vendor's tool) without waiting
 * for it, so that the daemon's loop never stops for a hung nvidia-smi.
 *
 * The child's standard output is a non-blocking pipe watched by a read
 * event on the loop; what it prints is collected as it comes.  The run is
 * over when the pipe has closed and the child has been reaped: done is
 * then called with the output and the exit status.  Each run has its own
 * timer: past its time limit the child's process group is killed and done
 * is called at once, without waiting for the death, because a tool stuck
 * in the driver may not die at once even of SIGKILL and a grandchild may
 * still hold the pipe.  Such a child is still reaped when it does die,
 * and until then no new run of the same program starts (a driver that
 * hangs one nvidia-smi hangs the next one too; they must not pile up).
 *
 * Children are reaped from a SIGCHLD event of this file's own.  A caller
 * that also reaps with waitpid(-1) (the daemon does, for its keepers)
 * must hand over what it reaps with proc_async_reaped().
 */

#include <sys/queue.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"

#define PA_MAX_OUTPUT	(16 * 1024 * 1024)
#define PA_CHUNK	65536

struct proc_async {
	pid_t		 pid;
	char		*name;		/* argv[0], for messages */
	int		 fd;		/* the pipe's read end, or -1 */
	struct event	*read_ev;
	struct event	*timer_ev;
	char		*buf;
	size_t		 used;
	size_t		 size;
	int		 status;
	int		 reaped;
	int		 killed;	/* killed for its time or its output */
	proc_async_cb	 cb;		/* NULL once called */
	void		*arg;
	TAILQ_ENTRY(proc_async) entry;
};
static TAILQ_HEAD(, proc_async) pa_all = TAILQ_HEAD_INITIALIZER(pa_all);
static struct event_base	*pa_base;
static struct event		*pa_sigchld;

/*
 * Sets the loop that watches the children: the daemon's server_base, or a
 * test's own.  Runs still going on an earlier loop are cancelled.
 */
void
proc_async_init(struct event_base *base)
{
	proc_async_shutdown();
	if (pa_sigchld != NULL)
		event_free(pa_sigchld);
	pa_sigchld = NULL;
	pa_base = base;
}

/* Stops watching the pipe and closes it. */
static void
pa_close(struct proc_async *p)
{
	if (p->read_ev != NULL)
		event_free(p->read_ev);
	p->read_ev = NULL;
	if (p->fd != -1)
		close(p->fd);
	p->fd = -1;
}

static void
pa_free(struct proc_async *p)
{
	TAILQ_REMOVE(&pa_all, p, entry);
	pa_close(p);
	if (p->timer_ev != NULL)
		event_free(p->timer_ev);
	free(p->buf);
	free(p->name);
	free(p);
}

/* Calls done once, handing over the output (NULL if none). */
static void
pa_finish(struct proc_async *p, char *out, int status)
{
	proc_async_cb	 cb = p->cb;

	p->cb = NULL;
	if (p->timer_ev != NULL)
		evtimer_del(p->timer_ev);
	log_debug("%s: %s (pid %ld): status %d, %zu bytes", __func__, p->name,
	    (long)p->pid, status, out != NULL ? strlen(out) : 0);
	if (cb != NULL)
		cb(out, status, p->arg);
	else
		free(out);
}

/* The run is over once the pipe is closed and the child reaped. */
static void
pa_check(struct proc_async *p)
{
	char	*out;

	if (p->fd != -1 || !p->reaped)
		return;
	if (p->cb != NULL) {
		out = p->buf != NULL ? p->buf : xstrdup("");
		p->buf = NULL;
		pa_finish(p, out, p->status);
	}
	pa_free(p);
}

/* Kills the child's group and ends the run at once with status why. */
static void
pa_kill(struct proc_async *p, int why)
{
	kill(-p->pid, SIGKILL);
	if (!p->reaped)
		kill(p->pid, SIGKILL);	/* if setpgid lost the race */
	p->killed = 1;
	pa_close(p);
	pa_finish(p, NULL, why);
	if (p->reaped)
		pa_free(p);
}

static void
pa_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct proc_async	*p = arg;

	log_warnx("%s (pid %ld): no answer in time; killed", p->name,
	    (long)p->pid);
	pa_kill(p, PROC_ASYNC_TIMEOUT);
}

static void
pa_read_cb(evutil_socket_t fd, short events, void *arg)
{
	struct proc_async	*p = arg;
	ssize_t			 n;

	for (;;) {
		if (p->used + PA_CHUNK + 1 > p->size) {
			p->size = p->size != 0 ? p->size * 2 : 2 * PA_CHUNK;
			p->buf = xrealloc(p->buf, p->size);
		}
		n = read(p->fd, p->buf + p->used, PA_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			pa_close(p);
			break;
		}
		p->used += (size_t)n;
		if (p->used > PA_MAX_OUTPUT) {
			log_warnx("%s (pid %ld): more than %d bytes; killed",
			    p->name, (long)p->pid, PA_MAX_OUTPUT);
			pa_kill(p, PROC_ASYNC_TOOBIG);
			return;
		}
	}
	if (p->buf != NULL)
		p->buf[p->used] = '\0';
	pa_check(p);
}

/*
 * Records how a child of ours ended.  Returns 1 if pid was one of ours,
 * 0 if not (the caller's own child).
 */
int
proc_async_reaped(pid_t pid, int ws)
{
	struct proc_async	*p;

	TAILQ_FOREACH(p, &pa_all, entry) {
		if (p->pid != pid || p->reaped)
			continue;
		p->reaped = 1;
		p->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
		if (p->cb == NULL)
			pa_free(p);	/* the killed one died at last */
		else
			pa_check(p);
		return (1);
	}
	return (0);
}

static void
pa_sigchld_cb(evutil_socket_t sig, short events, void *arg)
{
	struct proc_async	*p, *next;
	int			 ws;

	TAILQ_FOREACH_SAFE(p, &pa_all, entry, next) {
		if (!p->reaped && waitpid(p->pid, &ws, WNOHANG) == p->pid)
			proc_async_reaped(p->pid, ws);
	}
}

/* Says whether a killed run of name has still not died. */
static int
pa_stuck(const char *name, pid_t *pid)
{
	struct proc_async	*p;

	TAILQ_FOREACH(p, &pa_all, entry) {
		if (p->killed && !p->reaped && strcmp(p->name, name) == 0) {
			*pid = p->pid;
			return (1);
		}
	}
	return (0);
}

static struct proc_async *
pa_spawn(char *const *argv, char **cause)
{
	struct proc_async	*p;
	int			 fds[2];

	if (pipe2(fds, O_CLOEXEC) == -1) {
		xasprintf(cause, "%s: pipe: %s", argv[0], strerror(errno));
		return (NULL);
	}
	p = xcalloc(1, sizeof *p);
	if ((p->pid = fork_quiet()) == -1) {
		xasprintf(cause, "%s: fork: %s", argv[0], strerror(errno));
		close(fds[0]);
		close(fds[1]);
		free(p);
		return (NULL);
	}
	if (p->pid == 0)
		proc_exec(argv, fds[1]);
	setpgid(p->pid, p->pid);
	close(fds[1]);
	p->fd = fds[0];
	set_nonblock(p->fd);
	p->name = xstrdup(argv[0]);
	return (p);
}

/*
 * Starts argv (looked up in $PATH; stdin and stderr on /dev/null, in a
 * process group of its own) and returns at once.  done(out, status, arg)
 * is called once, from the loop: out is what it printed, NUL-terminated
 * (done frees it), status its exit status (-1: killed by a signal, 127:
 * could not be run); or out is NULL and status says why:
 * PROC_ASYNC_TIMEOUT (it ran past timeout_ms and was killed),
 * PROC_ASYNC_TOOBIG (it printed more than 16 MiB) or PROC_ASYNC_CANCELLED
 * (proc_async_shutdown).  Returns -1 with *cause if it cannot start;
 * done is then never called.
 */
int
proc_async_start(char *const *argv, int timeout_ms, proc_async_cb done,
    void *arg, char **cause)
{
	struct proc_async	*p;
	struct timeval		 tv;
	pid_t			 old;

	if (pa_base == NULL) {
		xasprintf(cause, "%s: no event loop to run it on", argv[0]);
		return (-1);
	}
	if (pa_stuck(argv[0], &old)) {
		xasprintf(cause, "%s: an earlier run (pid %ld) was killed and "
		    "has not died yet", argv[0], (long)old);
		return (-1);
	}
	if (pa_sigchld == NULL) {
		pa_sigchld = evsignal_new(pa_base, SIGCHLD, pa_sigchld_cb,
		    NULL);
		event_add(pa_sigchld, NULL);
	}
	if ((p = pa_spawn(argv, cause)) == NULL)
		return (-1);
	p->cb = done;
	p->arg = arg;
	TAILQ_INSERT_TAIL(&pa_all, p, entry);
	p->read_ev = event_new(pa_base, p->fd, EV_READ|EV_PERSIST, pa_read_cb,
	    p);
	event_add(p->read_ev, NULL);
	p->timer_ev = evtimer_new(pa_base, pa_timer_cb, p);
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evtimer_add(p->timer_ev, &tv);
	log_debug("%s: %s (pid %ld), %d ms", __func__, p->name, (long)p->pid,
	    timeout_ms);
	return (0);
}

/* How many children have not been reaped yet (killed ones included). */
u_int
proc_async_count(void)
{
	struct proc_async	*p;
	u_int			 n = 0;

	TAILQ_FOREACH(p, &pa_all, entry) {
		if (!p->reaped)
			n++;
	}
	return (n);
}

/* Waits a little for a killed child; one stuck in the driver is left. */
static void
pa_reap_killed(struct proc_async *p)
{
	int	 ws, i;

	for (i = 0; i < 50 && !p->reaped; i++) {
		if (waitpid(p->pid, &ws, WNOHANG) != 0)
			p->reaped = 1;
		else
			usleep(2000);
	}
}

/*
 * Cancels every run: each child is killed (and reaped if it dies within
 * 0.1 s), and each done not yet called is called with
 * PROC_ASYNC_CANCELLED, so its owner can free what it holds.  For the
 * daemon's exit and for tests.
 */
void
proc_async_shutdown(void)
{
	struct proc_async	*p;

	while ((p = TAILQ_FIRST(&pa_all)) != NULL) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		pa_reap_killed(p);
		pa_close(p);
		pa_finish(p, NULL, PROC_ASYNC_CANCELLED);
		pa_free(p);
	}
}
