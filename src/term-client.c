/*
 * term-client.c: the client's side of terminals and ports
 * (docs/terminals.md): an upgraded connection to the local daemon or a
 * remote host (the same pinned TLS and token as every request), then
 * either the terminal relay (raw mode, window changes, frames) or a plain
 * splice of a forwarded port's bytes.  One poll() loop each, blocking.
 */

#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include "gmux.h"
#include "term-int.h"

#define TC_CONNECT_MS	10000
#define TC_HEAD_MAX	16384
#define TC_BUF		(FRAME_HDR + TERM_FRAME_MAX)

struct tc_buf {
	u_char	*data;
	size_t	 len;
	size_t	 size;
};

static int	tc_winch[2] = { -1, -1 };

static void
tc_buf_add(struct tc_buf *b, const void *data, size_t len)
{
	if (b->len + len > b->size) {
		b->size = (b->len + len) * 2;
		b->data = xrealloc(b->data, b->size);
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

static void
tc_buf_drain(struct tc_buf *b, size_t n)
{
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

/* Waits until c can go on with want; -1 with *cause past ms. */
static int
tc_wait(struct conn *c, int want, int ms, char **cause)
{
	struct pollfd	 pfd;
	int		 n;

	if (want == POLLIN && conn_pending(c) != 0)
		return (0);
	pfd.fd = conn_fd(c);
	pfd.events = (short)conn_events(c, want);
	while ((n = poll(&pfd, 1, ms)) == -1 && errno == EINTR)
		;
	if (n == 1)
		return (0);
	xasprintf(cause, "%s: %s", conn_name(c) ? conn_name(c) : "gmux",
	    n == 0 ? "no answer" : strerror(errno));
	return (-1);
}

/* Writes all of buf (blocking); -1 with *cause. */
static int
tc_write(struct conn *c, const void *buf, size_t len, char **cause)
{
	size_t	 off = 0;
	ssize_t	 n;

	while (off < len) {
		if ((n = conn_write(c, (const char *)buf + off,
		    len - off)) > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno != EAGAIN) {
			xasprintf(cause, "write: %s", strerror(errno));
			return (-1);
		}
		if (tc_wait(c, POLLOUT, TC_CONNECT_MS, cause) != 0)
			return (-1);
	}
	return (0);
}

/* Opens the connection to t (NULL: the local daemon), ready to speak. */
static struct conn *
tc_open(const struct target *t, char **cause)
{
	struct conn	*c;

	if (t == NULL) {
		if ((c = conn_open_unix(path_socket())) == NULL)
			xasprintf(cause, "no gmux daemon serves %s (%s)",
			    path_home(), strerror(errno));
		return (c);
	}
	if ((c = conn_open_tcp(t->host, t->port, t->pin, cause)) == NULL)
		return (NULL);
	while (!conn_ready(c)) {
		if (tc_wait(c, POLLOUT, TC_CONNECT_MS, cause) != 0 ||
		    conn_advance(c, cause) != 0) {
			conn_close(c);
			return (NULL);
		}
	}
	return (c);
}

/* Reads the reply's head, byte by byte (nothing after it is taken). */
static char *
tc_head(struct conn *c, char **cause)
{
	char	*head = xmalloc(TC_HEAD_MAX + 1);
	size_t	 len = 0;
	ssize_t	 n;

	while (len < TC_HEAD_MAX) {
		if ((n = conn_read(c, head + len, 1)) == 1) {
			len++;
			if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n",
			    4) == 0) {
				head[len] = '\0';
				return (head);
			}
			continue;
		}
		if (n == 0 || (n == -1 && errno != EAGAIN)) {
			xasprintf(cause, "the connection closed before a "
			    "reply");
			break;
		}
		if (tc_wait(c, POLLIN, TC_CONNECT_MS, cause) != 0)
			break;
	}
	if (len >= TC_HEAD_MAX)
		xasprintf(cause, "the reply's head is too long");
	free(head);
	return (NULL);
}

/* A refusal's JSON error, from its body (up to Content-Length). */
static char *
tc_refusal(struct conn *c, const char *head)
{
	const char	*p = strcasestr(head, "\r\ncontent-length:");
	char		*body, *cause = NULL, *msg = NULL;
	size_t		 want = 0, len = 0;
	ssize_t		 n;
	json_t		*o;

	if (p != NULL)
		want = (size_t)strtoul(p + 17, NULL, 10);
	if (want > TC_HEAD_MAX)
		want = TC_HEAD_MAX;
	body = xmalloc(want + 1);
	while (len < want) {
		if ((n = conn_read(c, body + len, want - len)) > 0)
			len += (size_t)n;
		else if ((n == -1 && errno != EAGAIN) || n == 0 ||
		    tc_wait(c, POLLIN, TC_CONNECT_MS, &cause) != 0)
			break;
	}
	body[len] = '\0';
	free(cause);
	if ((o = json_loads(body, 0, NULL)) != NULL &&
	    json_string_value(json_object_get(o, "error")) != NULL)
		msg = xstrdup(json_string_value(json_object_get(o, "error")));
	json_decref(o);
	free(body);
	return (msg != NULL ? msg : xstrdup("the host refused"));
}

/*
 * Asks t (NULL: the local daemon) for path upgraded to proto.  Returns the
 * connection, ready for the protocol, or NULL with *cause (the host's own
 * error for a refusal) and *status (the HTTP status, 0 if none came).
 */
struct conn *
term_upgrade(const struct target *t, const char *path, const char *proto,
    long *status, char **cause)
{
	struct conn	*c;
	char		*req, *host, *head;
	int		 rc;

	*status = 0;
	if ((c = tc_open(t, cause)) == NULL)
		return (NULL);
	host = t != NULL ? target_hostport(t) : xstrdup("gmux");
	xasprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%s"
	    "Connection: Upgrade\r\nUpgrade: %s\r\n\r\n", path, host,
	    t != NULL ? "Authorization: Bearer " : "",
	    t != NULL ? t->token : "", t != NULL ? "\r\n" : "", proto);
	free(host);
	rc = tc_write(c, req, strlen(req), cause);
	explicit_bzero(req, strlen(req));
	free(req);
	if (rc != 0 || (head = tc_head(c, cause)) == NULL) {
		conn_close(c);
		return (NULL);
	}
	if (strncmp(head, "HTTP/1.1 ", 9) == 0)
		*status = strtol(head + 9, NULL, 10);
	if (*status != 101) {
		*cause = tc_refusal(c, head);
		free(head);
		conn_close(c);
		return (NULL);
	}
	free(head);
	return (c);
}

static void
tc_sigwinch(int sig)
{
	int	 e = errno;

	(void)write(tc_winch[1], "w", 1);
	errno = e;
}

/* Queues a window frame of fd's terminal's size. */
static void
tc_window(int fd, struct tc_buf *out)
{
	struct winsize	 ws;
	u_char		 f[FRAME_HDR + 4];

	if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 ||
	    ws.ws_row == 0)
		return;
	term_window_encode(f, ws.ws_col, ws.ws_row);
	tc_buf_add(out, f, sizeof f);
}

/* Queues what the keyboard typed as a data frame; -1 at its end. */
static int
tc_keys(int in, struct tc_buf *out)
{
	u_char	 buf[FRAME_HDR + 16384];
	ssize_t	 n;

	if ((n = read(in, buf + FRAME_HDR, sizeof buf - FRAME_HDR)) <= 0)
		return (n == -1 && (errno == EAGAIN || errno == EINTR) ?
		    0 : -1);
	frame_header(buf, TERM_DATA, (uint32_t)n);
	tc_buf_add(out, buf, FRAME_HDR + (size_t)n);
	return (0);
}

/*
 * The exit frame: *code is the session's status, -1 for a detach, -3 for
 * an end of unknown status.  Returns 1, or -1 with *cause if the daemon
 * could not attach.
 */
static int
tc_exit(const struct term_frame *f, int *code, char **cause)
{
	json_t		*o, *v;
	const char	*reason, *error;

	o = json_loadb((const char *)f->data, f->len, 0, NULL);
	reason = json_string_value(json_object_get(o, "reason"));
	error = json_string_value(json_object_get(o, "error"));
	*code = reason != NULL && strcmp(reason, "ended") == 0 ? -3 : -1;
	if (json_is_integer(v = json_object_get(o, "exit_code")))
		*code = (int)json_integer_value(v);
	if (error != NULL)
		*cause = xstrdup(error);
	json_decref(o);
	return (*cause != NULL ? -1 : 1);
}

/*
 * Runs the frames in b: screen bytes to out.  Returns 1 once an exit frame
 * came (its exit status in *code, -1 for a detach), -1 with *cause on
 * broken framing, else 0.
 */
static int
tc_frames(struct tc_buf *b, int out, int *code, char **cause)
{
	struct term_frame	 f;
	ssize_t			 n;

	while ((n = term_frame_parse(b->data, b->len, &f, cause)) > 0) {
		if (f.type == TERM_DATA)
			write_all(out, f.data, f.len);
		else if (f.type == TERM_EXIT)
			return (tc_exit(&f, code, cause));
		tc_buf_drain(b, (size_t)n);
	}
	return (n < 0 ? -1 : 0);
}

/* Reads what c has; -1 at its end or on an error. */
static int
tc_conn_read(struct conn *c, struct tc_buf *b)
{
	u_char	 buf[16384];
	ssize_t	 n;

	do {
		if ((n = conn_read(c, buf, sizeof buf)) > 0)
			tc_buf_add(b, buf, (size_t)n);
	} while (n > 0 && conn_pending(c) != 0);
	if (n == 0 || (n == -1 && errno != EAGAIN))
		return (-1);
	return (0);
}

/* Writes what it can of b to c; -1 on an error. */
static int
tc_conn_write(struct conn *c, struct tc_buf *b)
{
	ssize_t	 n;

	while (b->len != 0) {
		if ((n = conn_write(c, b->data, b->len)) > 0)
			tc_buf_drain(b, (size_t)n);
		else
			return (n == -1 && errno == EAGAIN ? 0 : -1);
	}
	return (0);
}

static void
tc_winch_setup(void)
{
	struct sigaction	 sa;

	if (tc_winch[0] == -1 && pipe2(tc_winch, O_CLOEXEC|O_NONBLOCK) != 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tc_sigwinch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
}

/*
 * Relays the terminal (in: the keyboard, out: the screen) over c until
 * the daemon sends its exit frame.  Returns the session's exit status, -1
 * for a detach, -3 for an end of unknown status (a stop), or -2 with
 * *cause (the connection broke).
 */
int
term_relay(struct conn *c, int in, int out, char **cause)
{
	struct tc_buf	 rb = { NULL, 0, 0 }, wb = { NULL, 0, 0 };
	struct pollfd	 pfd[3];
	char		 junk[64];
	int		 code = -2, r = 0, eof = 0;

	tc_winch_setup();
	set_nonblock(in);
	while (r == 0) {
		pfd[0].fd = conn_fd(c);
		pfd[0].events = (short)conn_events(c, POLLIN |
		    (wb.len != 0 ? POLLOUT : 0));
		pfd[1].fd = eof ? -1 : in;
		pfd[1].events = POLLIN;
		pfd[2].fd = tc_winch[0];
		pfd[2].events = POLLIN;
		if (conn_pending(c) == 0 && poll(pfd, 3, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[2].revents & POLLIN) {
			while (read(tc_winch[0], junk, sizeof junk) > 0)
				;
			tc_window(out, &wb);
		}
		if ((pfd[1].revents & (POLLIN|POLLHUP)) && tc_keys(in, &wb))
			eof = 1;
		if (tc_conn_write(c, &wb) != 0 ||
		    ((pfd[0].revents || conn_pending(c)) &&
		    tc_conn_read(c, &rb) != 0)) {
			r = tc_frames(&rb, out, &code, cause);
			if (r == 0 && *cause == NULL)
				xasprintf(cause, "the connection was lost");
			break;
		}
		r = tc_frames(&rb, out, &code, cause);
	}
	if (r < 0)
		code = -2;
	free(rb.data);
	free(wb.data);
	return (code);
}

/*
 * Splices fd (a forwarded port's local connection) and c both ways until
 * either closes.  Returns 0, or -1 on an error.
 */
int
term_splice(struct conn *c, int fd)
{
	struct tc_buf	 tofd = { NULL, 0, 0 }, toc = { NULL, 0, 0 };
	struct pollfd	 pfd[2];
	u_char		 buf[16384];
	ssize_t		 n;
	int		 done = 0, rc = 0;

	set_nonblock(fd);
	while (!done || tofd.len != 0 || toc.len != 0) {
		pfd[0].fd = conn_fd(c);
		pfd[0].events = (short)conn_events(c, (done ? 0 : POLLIN) |
		    (toc.len != 0 ? POLLOUT : 0));
		pfd[1].fd = fd;
		pfd[1].events = (short)((done ? 0 : POLLIN) |
		    (tofd.len != 0 ? POLLOUT : 0));
		if (conn_pending(c) == 0 && poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		if (!done && (pfd[1].revents & (POLLIN|POLLHUP))) {
			if ((n = read(fd, buf, sizeof buf)) > 0)
				tc_buf_add(&toc, buf, (size_t)n);
			else if (n == 0 || errno != EAGAIN)
				done = 1;
		}
		if (!done && (pfd[0].revents || conn_pending(c)) &&
		    tc_conn_read(c, &tofd) != 0)
			done = 1;
		if (tc_conn_write(c, &toc) != 0)
			break;
		if (tofd.len != 0 && (n = write(fd, tofd.data, tofd.len)) > 0)
			tc_buf_drain(&tofd, (size_t)n);
		else if (tofd.len != 0 && n == -1 && errno != EAGAIN)
			break;
	}
	free(tofd.data);
	free(toc.data);
	return (rc);
}

/* Where this command goes: NULL for the local daemon, or one remote's. */
const struct target *
term_target(void)
{
	const struct remote	*v[1];

	if (!hosts_remote() || hosts_candidates(v, 1) == 0)
		return (NULL);
	return (&v[0]->target);
}
