/*
 * term-relay.c: the daemon's side of an attached terminal
 * (docs/terminals.md).  Each upgraded connection gets its own tmux client,
 * attached to the job's session in a pseudo-terminal of the daemon's; the
 * relay moves the client's keystrokes into it and its screen out, framed.
 * The tmux client is the only thing that ends with the connection: the
 * session is the job's.  (The daemon's SIGCHLD handler reaps the tmux
 * client like any child; its end shows here as the pty's hangup.)  The
 * client runs as the session's user: a job that runs as its tenant's
 * account (docs/tenants.md) gets a client of that account, never the
 * daemon's (a tmux server may make its client run a command:
 * detach-client -E).
 */

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"
#include "term-int.h"

#define RELAY_WAIT_MS	20		/* for the session to be ready */
#define RELAY_WAIT_MAX	500		/* times: 10 s */
#define RELAY_HIGH	(1024 * 1024)	/* unsent to the client, at most */

struct relay {
	struct bufferevent	*bev;		/* the client's */
	struct evhttp_connection *evcon;	/* freed with it */
	struct bufferevent	*pty;		/* the tmux client's master */
	struct event		*wait_ev;
	u_int			 waits;
	u_int			 job;
	char			*dir;
	char			*term;
	struct winsize		 ws;
	pid_t			 pid;
	int			 as_account;	/* the client drops to uid */
	uid_t			 uid;
	gid_t			 gid;
	int			 closing;	/* x sent: close once flushed */
	char			 tail[128];	/* the screen's last bytes */
	size_t			 taillen;
};

static void	relay_client_read(struct bufferevent *, void *);

static void
relay_free(struct relay *r)
{
	log_debug("%s: j%u", __func__, r->job);
	if (r->wait_ev != NULL)
		event_free(r->wait_ev);
	if (r->pid > 0)
		kill(r->pid, SIGHUP);	/* detaches it: the session stays */
	if (r->pty != NULL)
		bufferevent_free(r->pty);
	bufferevent_setcb(r->bev, NULL, NULL, NULL, NULL);
	evhttp_connection_free(r->evcon);	/* and its bev */
	free(r->dir);
	free(r->term);
	free(r);
}

static void
relay_send(struct relay *r, u_char type, const void *data, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(r->bev);
	u_char		 hdr[FRAME_HDR];

	frame_header(hdr, type, (uint32_t)len);
	evbuffer_add(out, hdr, sizeof hdr);
	evbuffer_add(out, data, len);
}

/* Sends the exit frame; the connection closes once it is written. */
static void
relay_exit(struct relay *r, const char *reason, int code, const char *error)
{
	json_t	*o;
	char	*text;

	if (r->closing)
		return;
	o = json_pack("{s:s}", "reason", reason);
	if (code >= 0)
		json_object_set_new(o, "exit_code", json_integer(code));
	if (error != NULL)
		json_object_set_new(o, "error", json_string(error));
	text = json_dumps(o, JSON_COMPACT);
	relay_send(r, TERM_EXIT, text, strlen(text));
	free(text);
	json_decref(o);
	r->closing = 1;
	bufferevent_disable(r->bev, EV_READ);
	bufferevent_setwatermark(r->bev, EV_WRITE, 0, 0);
	if (evbuffer_get_length(bufferevent_get_output(r->bev)) == 0)
		relay_free(r);
}

/* The session's command's status, if it has ended; else -1. */
static int
relay_ended(struct relay *r)
{
	char	*path, *text, *cause = NULL;
	int	 code = -1;

	xasprintf(&path, "%s/exit", r->dir);
	if ((text = read_file(path, 64, NULL, &cause)) != NULL) {
		code = atoi(text);
		free(text);
	} else
		free(cause);
	free(path);
	return (code);
}

/* Keeps the last bytes of the screen: the tmux client's last words. */
static void
relay_tail(struct relay *r, const u_char *buf, size_t n)
{
	size_t	 keep = sizeof r->tail - 1;

	if (n >= keep) {
		memcpy(r->tail, buf + n - keep, keep);
		r->taillen = keep;
	} else {
		if (r->taillen + n > keep) {
			memmove(r->tail, r->tail + r->taillen + n - keep,
			    keep - n);
			r->taillen = keep - n;
		}
		memcpy(r->tail + r->taillen, buf, n);
		r->taillen += n;
	}
	r->tail[r->taillen] = '\0';
}

/* The session's screen, framed to the client. */
static void
relay_pty_read(struct bufferevent *bev, void *arg)
{
	struct relay	*r = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	u_char		 buf[TERM_FRAME_MAX];
	int		 n;

	while ((n = evbuffer_remove(in, buf, sizeof buf)) > 0) {
		relay_send(r, TERM_DATA, buf, (size_t)n);
		relay_tail(r, buf, (size_t)n);
	}
	if (evbuffer_get_length(bufferevent_get_output(r->bev)) > RELAY_HIGH)
		bufferevent_disable(bev, EV_READ);
}

/* The tmux client is gone: detached, or the session ended. */
static void
relay_pty_event(struct bufferevent *bev, short what, void *arg)
{
	struct relay	*r = arg;
	int		 code;

	if (!(what & (BEV_EVENT_EOF|BEV_EVENT_ERROR)))
		return;
	relay_pty_read(bev, r);
	r->pid = -1;
	/*
	 * Its command exited (cmd.sh wrote its status), or the tmux client
	 * says why it left: "[detached (from session gmux)]" when it was
	 * detached, "[server exited]" at a stop.
	 */
	code = relay_ended(r);
	if (code < 0 && memmem(r->tail, r->taillen, "[detached", 9) != NULL)
		relay_exit(r, "detached", -1, NULL);
	else
		relay_exit(r, "ended", code, NULL);
}

static void
relay_client_write(struct bufferevent *bev, void *arg)
{
	struct relay	*r = arg;

	if (r->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			relay_free(r);
		return;
	}
	if (r->pty != NULL)
		bufferevent_enable(r->pty, EV_READ);
}

static void
relay_client_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR|BEV_EVENT_TIMEOUT))
		relay_free(arg);
}

/* In the child: the tmux client, on the pty's slave.  Never returns. */
static dead void
relay_child(struct relay *r, int slave)
{
	char	*env[5], *argv[] = { (char *)"tmux", (char *)"-u",
	    (char *)"-S", (char *)"tmux.sock", (char *)"attach-session",
	    (char *)"-t", (char *)"gmux", NULL };
	int	 sig;

	setsid();
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	ioctl(slave, TIOCSCTTY, 0);
	dup2(slave, 0);
	dup2(slave, 1);
	dup2(slave, 2);
	closefrom(3);
	if (r->as_account && (setgroups(0, NULL) != 0 ||
	    setresgid(r->gid, r->gid, r->gid) != 0 ||
	    setresuid(r->uid, r->uid, r->uid) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0))
		_exit(126);
	if (chdir(r->dir) != 0)
		_exit(126);
	xasprintf(&env[0], "TERM=%s", r->term);
	env[1] = (char *)"PATH=/usr/local/bin:/usr/bin:/bin";
	env[2] = (char *)"LANG=C.UTF-8";
	xasprintf(&env[3], "HOME=%s", r->dir);
	env[4] = NULL;
	execvpe("tmux", argv, env);
	_exit(127);
}

/* Starts the tmux client; -1 with *cause. */
static int
relay_spawn(struct relay *r, char **cause)
{
	int	 master, slave;

	if (openpty(&master, &slave, NULL, NULL, &r->ws) != 0) {
		xasprintf(cause, "openpty: %s", strerror(errno));
		return (-1);
	}
	if ((r->pid = fork_quiet()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(master);
		close(slave);
		return (-1);
	}
	if (r->pid == 0)
		relay_child(r, slave);
	close(slave);
	fcntl(master, F_SETFD, FD_CLOEXEC);
	set_nonblock(master);
	r->pty = bufferevent_socket_new(server_base, master,
	    BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(r->pty, relay_pty_read, NULL, relay_pty_event, r);
	bufferevent_enable(r->pty, EV_READ|EV_WRITE);
	log_debug("%s: j%u: tmux client %ld", __func__, r->job, (long)r->pid);
	return (0);
}

/* Does the session's server answer on its socket? */
static int
relay_listening(struct relay *r)
{
	struct sockaddr_un	 sun;
	int			 ok, fd, dfd;

	if ((dfd = open(r->dir, O_PATH|O_DIRECTORY|O_CLOEXEC)) == -1)
		return (0);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path,
	    "/proc/self/fd/%d/tmux.sock", dfd);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0);
	ok = fd != -1 && connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
	if (fd != -1)
		close(fd);
	close(dfd);
	return (ok);
}

/*
 * Is the session's server there?  Its command has started (cmd.sh says
 * so), or its socket answers.  A server of tmux -D loads its conf, and so
 * makes the session, only once a first client comes: this attach may be
 * it (the client's command runs after the conf's).
 */
static int
relay_ready(struct relay *r)
{
	struct stat	 st;
	char		*path;
	int		 ok;

	xasprintf(&path, "%s/ready", r->dir);
	ok = stat(path, &st) == 0;
	free(path);
	return (ok || relay_listening(r));
}

/* Waits for the session, then attaches; the client's frames wait too. */
static void
relay_wait(int fd, short events, void *arg)
{
	struct relay	*r = arg;
	struct timeval	 tv = { 0, RELAY_WAIT_MS * 1000 };
	struct job	*j = job_find_id(r->job);
	char		*cause = NULL;

	if (relay_ready(r)) {
		if (relay_spawn(r, &cause) != 0) {
			relay_exit(r, "error", -1, cause);
			free(cause);
			return;
		}
		relay_client_read(r->bev, r);
		return;
	}
	if (j == NULL || job_ended(j)) {
		relay_exit(r, "ended", relay_ended(r), NULL);
		return;
	}
	if (++r->waits > RELAY_WAIT_MAX) {
		relay_exit(r, "error", -1, "the session did not start");
		return;
	}
	evtimer_add(r->wait_ev, &tv);
}

/* Runs one frame from the client; -1 closes the connection. */
static int
relay_frame(struct relay *r, const struct term_frame *f)
{
	char	*cause = NULL;
	u_int	 cols, rows;

	if (f->type == TERM_DATA) {
		bufferevent_write(r->pty, f->data, f->len);
		return (0);
	}
	if (term_window_parse(f, &cols, &rows, &cause) != 0) {
		log_debug("%s: j%u: %s", __func__, r->job, cause);
		free(cause);
		return (-1);
	}
	r->ws.ws_col = (u_short)cols;
	r->ws.ws_row = (u_short)rows;
	ioctl(bufferevent_getfd(r->pty), TIOCSWINSZ, &r->ws);
	return (0);
}

static void
relay_client_read(struct bufferevent *bev, void *arg)
{
	struct relay		*r = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);
	struct term_frame	 f;
	char			*cause = NULL;
	size_t			 len;
	ssize_t			 n;

	while (r->pty != NULL && !r->closing) {
		len = evbuffer_get_length(in);
		if (len > FRAME_HDR + TERM_FRAME_MAX)
			len = FRAME_HDR + TERM_FRAME_MAX;
		n = term_frame_parse(evbuffer_pullup(in, (ssize_t)len), len,
		    &f, &cause);
		if (n == 0)
			return;
		if (n < 0 || f.type == TERM_EXIT || relay_frame(r, &f) != 0) {
			log_debug("%s: j%u: %s", __func__, r->job, cause ?
			    cause : "a bad frame");
			free(cause);
			relay_free(r);
			return;
		}
		evbuffer_drain(in, (size_t)n);
	}
}

/*
 * Takes over an upgraded API connection as a terminal on j's session, of
 * cols by rows, the client's terminal being of type term.
 */
void
term_relay_start(struct bufferevent *bev, void *evcon, struct job *j,
    u_int cols, u_int rows, const char *term)
{
	struct relay	*r;
	char		*home, *cause = NULL;
	int		 rc;

	r = xcalloc(1, sizeof *r);
	rc = tenant_account(j->owner, &r->uid, &r->gid, &home, &cause);
	free(home);
	r->as_account = rc == 1;
	r->bev = bev;
	r->evcon = evcon;
	r->job = j->id;
	r->dir = term_dir(j->id);
	r->term = xstrdup(term);
	r->ws.ws_col = (u_short)cols;
	r->ws.ws_row = (u_short)rows;
	r->pid = -1;
	bufferevent_setcb(bev, relay_client_read, relay_client_write,
	    relay_client_event, r);
	bufferevent_set_timeouts(bev, NULL, NULL);
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_setwatermark(bev, EV_WRITE, RELAY_HIGH / 2, 0);
	evbuffer_add_printf(bufferevent_get_output(bev),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: " TERM_UPGRADE
	    "\r\nConnection: Upgrade\r\n\r\n");
	bufferevent_enable(bev, EV_READ|EV_WRITE);
	log_debug("%s: %s %ux%u %s", __func__, j->name, cols, rows, term);
	r->wait_ev = evtimer_new(server_base, relay_wait, r);
	if (rc == 0 || rc == 1)
		relay_wait(-1, 0, r);
	else
		relay_exit(r, "error", -1, cause);
	free(cause);
}
