/*
 * client.c: the CLI's side of the API.  client_call() is one request and
 * its JSON reply; client_stream() is a request whose reply is a frame
 * stream (run, logs -f, attach).  Both go to the local daemon or, when
 * hosts.c says so, to remote hosts over pinned TLS (conn.c).  Underneath is
 * client_multi(): several requests at once, each on its own connection,
 * driven by one poll() loop that also watches a pipe the SIGINT handler
 * writes to, so Ctrl-C is seen at once.  The local daemon gets one
 * connection per request, closed after its reply; a remote host's
 * connection is kept for the command's next request to it (each new one
 * costs a TLS handshake), and a request that finds its kept connection
 * closed by the host goes again on a new one.  Only an idempotent request
 * may go again: a submission (POST /v1/jobs) takes a kept connection only
 * if the host has not begun to close it, and is sent once, whatever
 * happens to it.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define CLIENT_CONNECT_MS	10000	/* connect and handshake, remotes */
#define CLIENT_IDLE_MS		15000	/* a stream this quiet is dead */
#define CLIENT_CHUNK		(256 * 1024)
#define CLIENT_BODY_MAX		(256 * 1024 * 1024)
#define CLIENT_KEEP		8	/* idle remote connections kept */

struct client_buf {
	char	*data;
	size_t	 len;
};

/* One request on its way. */
struct client_xfer {
	struct client_req	*req;
	struct conn		*conn;
	char			*head;		/* may hold a token: wiped */
	size_t			 headlen;
	const char		*out;		/* what is being written */
	size_t			 outlen;
	size_t			 outoff;
	int			 phase;		/* 0 head, 1 body, 2 fd body */
	char			*chunk;
	uint64_t		 fdsent;
	int			 sending;
	struct http_resp	 resp;
	struct client_buf	 body;		/* a reply, not streamed */
	struct client_buf	 pending;	/* a frame not yet whole */
	int			 reused;	/* a kept connection */
	uint64_t		 got;		/* bytes of reply read */
	int			 done;		/* the reply is complete */
	int			 failed;
	int			 stopped;	/* a callback ended it */
	int			 late;		/* a deadline passed */
	char			*cause;
	int64_t			 start;
	int64_t			 start_us;
	int64_t			 heard;		/* last byte from the peer */
};

static int	client_sig_pipe[2] = { -1, -1 };

/* Connections to remotes, idle, for the next request to the same one. */
static struct client_kept {
	struct conn	*conn;
	char		*key;		/* TOKEN@HOST:PORT#PIN: wiped */
} client_kept[CLIENT_KEEP];

static void
client_kept_free(struct client_kept *k)
{
	conn_close(k->conn);
	k->conn = NULL;
	if (k->key != NULL) {
		explicit_bzero(k->key, strlen(k->key));
		free(k->key);
		k->key = NULL;
	}
}

/* A kept connection to t (same host, pin and token), or NULL. */
static struct conn *
client_take(const struct target *t)
{
	struct conn	*c = NULL;
	char		*key = target_format(t);
	u_int		 i;

	for (i = 0; i < CLIENT_KEEP && c == NULL; i++) {
		if (client_kept[i].conn != NULL &&
		    strcmp(client_kept[i].key, key) == 0) {
			c = client_kept[i].conn;
			client_kept[i].conn = NULL;
			client_kept_free(&client_kept[i]);
		}
	}
	explicit_bzero(key, strlen(key));
	free(key);
	return (c);
}

static void
client_keep(const struct target *t, struct conn *c)
{
	u_int	 i;

	for (i = 0; i < CLIENT_KEEP - 1; i++) {
		if (client_kept[i].conn == NULL)
			break;
	}
	client_kept_free(&client_kept[i]);
	client_kept[i].conn = c;
	client_kept[i].key = target_format(t);
}

/* Is a daemon listening on this home's socket? */
int
client_daemon_running(void)
{
	struct conn	*c;

	if ((c = conn_open_unix(path_socket())) == NULL)
		return (0);
	conn_close(c);
	return (1);
}

static void
buf_add(struct client_buf *b, const void *data, size_t len)
{
	b->data = xrealloc(b->data, b->len + len + 1);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

static void printflike(2, 3)
client_fail(struct client_xfer *x, const char *fmt, ...)
{
	va_list	 ap;

	if (x->failed)
		return;
	x->failed = 1;
	if (x->cause == NULL) {
		va_start(ap, fmt);
		xvasprintf(&x->cause, fmt, ap);
		va_end(ap);
	}
}

/* Hands every whole frame in the pending bytes to the stream callback. */
static void
client_frames(struct client_xfer *x)
{
	const struct client_stream_cbs	*cbs = x->req->cbs;
	struct frame			 f;
	ssize_t				 n = 0;
	size_t				 at = 0;

	while (!x->stopped && !x->failed && (n = frame_parse(x->pending.data +
	    at, x->pending.len - at, &f, &x->cause)) > 0) {
		at += (size_t)n;
		if (cbs->frame(&f, cbs->arg) != 0)
			x->stopped = 1;
	}
	if (n == -1)
		x->failed = 1;
	memmove(x->pending.data, x->pending.data + at, x->pending.len - at);
	x->pending.len -= at;
}

static void
client_body_cb(const char *data, size_t len, void *arg)
{
	struct client_xfer	*x = arg;
	struct client_req	*q = x->req;

	if (x->failed || x->stopped)
		return;
	if (q->cbs != NULL && x->resp.status == 200) {
		buf_add(&x->pending, data, len);
		client_frames(x);
	} else if (q->sinkfd != -1 && x->resp.status / 100 == 2) {
		if (write_all(q->sinkfd, data, len) == -1)
			client_fail(x, "writing: %s", strerror(errno));
	} else if (x->body.len + len > CLIENT_BODY_MAX)
		client_fail(x, "%s: the reply is too large",
		    conn_name(x->conn));
	else
		buf_add(&x->body, data, len);
}

/* The request's head: the token, for a remote, in its one header. */
static void
client_head(struct client_xfer *x)
{
	struct client_req	*q = x->req;
	const struct target	*t = q->target;
	const char		*ctype = q->ctype;
	char			*host, *auth = NULL;
	uint64_t		 len;

	len = q->bodyfd != -1 ? q->bodysize : q->len;
	if (ctype == NULL && len > 0)
		ctype = "application/json";
	host = t != NULL ? target_hostport(t) : xstrdup("gmux");
	if (t != NULL)
		xasprintf(&auth, "Authorization: Bearer %s\r\n", t->token);
	xasprintf(&x->head, "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s%s"
	    "Content-Length: %llu\r\n\r\n", q->method, q->path, host,
	    t == NULL ? "Connection: close\r\n" : "", auth != NULL ? auth : "",
	    ctype != NULL ? "Content-Type: " : "", ctype != NULL ? ctype : "",
	    ctype != NULL ? "\r\n" : "", (unsigned long long)len);
	x->headlen = strlen(x->head);
	x->phase = 0;
	x->fdsent = 0;
	x->outoff = 0;
	if (auth != NULL) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(host);
	x->out = x->head;
	x->outlen = x->headlen;
}

/*
 * May q be sent again when its connection drops before the answer?  Every
 * route is idempotent but POST /v1/jobs, which starts a job: the host may
 * have started it already (docs/api.md).
 */
static int
client_idempotent(const struct client_req *q)
{
	size_t	 len = strlen("/v1/jobs");

	return (strcmp(q->method, "POST") != 0 ||
	    strncmp(q->path, "/v1/jobs", len) != 0 ||
	    (q->path[len] != '\0' && q->path[len] != '?'));
}

/*
 * A kept connection for a request that is never sent again: only one with
 * nothing to read and no hangup.  The host keeps an idle connection an
 * hour (server-api.c), so within one command a kept one is closed only if
 * the host went away, which shows here; the race left is reported, not
 * resent.
 */
static struct conn *
client_take_live(const struct target *t)
{
	struct conn	*c;
	struct pollfd	 pfd;

	if ((c = client_take(t)) == NULL)
		return (NULL);
	pfd.fd = conn_fd(c);
	pfd.events = POLLIN;
	if (conn_pending(c) == 0 && poll(&pfd, 1, 0) == 0)
		return (c);
	log_debug("%s: %s: closing or closed", __func__, conn_name(c));
	conn_close(c);
	return (NULL);
}

static void
client_xfer_start(struct client_xfer *x, struct client_req *q, int64_t now)
{
	const struct target	*t = q->target;

	x->req = q;
	x->start = x->heard = now;
	x->start_us = clock_mono_us();
	http_resp_init(&x->resp);
	if (t == NULL) {
		if ((x->conn = conn_open_unix(path_socket())) == NULL) {
			if (errno == ENOENT || errno == ECONNREFUSED)
				client_fail(x, "no gmux daemon serves %s "
				    "(start one with: gmux serve -d)",
				    path_home());
			else
				client_fail(x, "%s: %s", path_socket(),
				    strerror(errno));
			return;
		}
	} else if ((x->conn = client_idempotent(q) ? client_take(t) :
	    client_take_live(t)) != NULL)
		x->reused = 1;
	else if ((x->conn = conn_open_tcp(t->host, t->port, t->pin,
	    &x->cause)) == NULL) {
		x->failed = 1;
		return;
	}
	client_head(x);
	x->sending = 1;
}

/*
 * A kept connection that fails before any byte of the reply was closed
 * by the host meanwhile: the request goes again on a new one.
 */
static void
client_xfer_retry(struct client_xfer *x)
{
	const struct target	*t = x->req->target;

	if (!x->failed || !x->reused || x->got != 0 ||
	    !client_idempotent(x->req))
		return;
	log_debug("%s: %s: kept connection closed; again", __func__,
	    conn_name(x->conn));
	conn_close(x->conn);
	x->reused = 0;
	x->failed = 0;
	free(x->cause);
	x->cause = NULL;
	if ((x->conn = conn_open_tcp(t->host, t->port, t->pin,
	    &x->cause)) == NULL) {
		x->failed = 1;
		return;
	}
	explicit_bzero(x->head, x->headlen);
	free(x->head);
	http_resp_init(&x->resp);
	client_head(x);
	x->sending = 1;
}

/* Sets out to the next piece of the request; 0 when all is written. */
static int
client_next_out(struct client_xfer *x)
{
	struct client_req	*q = x->req;
	uint64_t		 left;
	ssize_t			 n;

	if (x->phase == 0) {
		explicit_bzero(x->head, x->headlen);
		x->phase = 1;
		if (q->body != NULL && q->len > 0) {
			x->out = q->body;
			x->outlen = q->len;
			x->outoff = 0;
			return (1);
		}
	}
	if (q->bodyfd == -1 || x->fdsent == q->bodysize)
		return (0);
	x->phase = 2;
	if (x->chunk == NULL)
		x->chunk = xmalloc(CLIENT_CHUNK);
	left = q->bodysize - x->fdsent;
	n = pread(q->bodyfd, x->chunk, left < CLIENT_CHUNK ? (size_t)left :
	    CLIENT_CHUNK, (off_t)(q->bodyoff + x->fdsent));
	if (n <= 0) {
		client_fail(x, "reading what to send: %s", n == 0 ?
		    "the file is shorter than it was" : strerror(errno));
		return (0);
	}
	x->fdsent += (uint64_t)n;
	x->out = x->chunk;
	x->outlen = (size_t)n;
	x->outoff = 0;
	return (1);
}

static void
client_xfer_send(struct client_xfer *x)
{
	ssize_t	 n;

	while (!x->failed) {
		if (x->outoff == x->outlen && !client_next_out(x)) {
			x->sending = 0;
			return;
		}
		n = conn_write(x->conn, x->out + x->outoff, x->outlen -
		    x->outoff);
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1) {
			/* The host may have answered (and closed) early. */
			client_fail(x, "%s: sending the request: %s",
			    conn_name(x->conn), strerror(errno));
			return;
		}
		x->outoff += (size_t)n;
	}
}

static void
client_xfer_recv(struct client_xfer *x, int64_t now)
{
	char	 buf[65536];
	ssize_t	 n;
	int	 r;

	while (!x->failed && !x->stopped && !x->done) {
		n = conn_read(x->conn, buf, sizeof buf);
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1) {
			client_fail(x, "%s: %s", conn_name(x->conn),
			    strerror(errno));
			return;
		}
		x->heard = now;
		x->got += (uint64_t)n;
		r = http_resp_feed(&x->resp, buf, (size_t)n, client_body_cb, x,
		    &x->cause);
		if (r == -1)
			x->failed = 1;
		else if (r == 1)
			x->done = 1;
	}
}

static void
client_xfer_step(struct client_xfer *x, int64_t now)
{
	if (!conn_ready(x->conn)) {
		if (conn_advance(x->conn, &x->cause) != 0) {
			x->failed = 1;
			return;
		}
		if (!conn_ready(x->conn))
			return;
	}
	if (x->sending)
		client_xfer_send(x);
	if (!x->sending && !x->failed)
		client_xfer_recv(x, now);
	client_xfer_retry(x);
}

static int
client_active(const struct client_xfer *x)
{
	return (!x->done && !x->failed && !x->stopped);
}

/*
 * Ctrl-C: a stream with an interrupt callback decides (stop the job,
 * detach); any other request is abandoned, and the byte is left in the
 * pipe so an enclosing stream sees the Ctrl-C too.
 */
static void
client_interrupted(struct client_xfer *x, u_int n)
{
	const struct client_stream_cbs	*cbs;
	u_int				 i;
	char				 c;

	for (i = 0; i < n; i++) {
		cbs = x[i].req->cbs;
		if (client_active(&x[i]) && cbs != NULL &&
		    cbs->interrupt != NULL)
			break;
	}
	if (i == n) {
		for (i = 0; i < n; i++) {
			if (client_active(&x[i]))
				client_fail(&x[i], "interrupted");
		}
		return;
	}
	while (read(client_sig_pipe[0], &c, 1) == 1) {
		if (cbs->interrupt(cbs->arg) != 0) {
			x[i].stopped = 1;
			return;
		}
	}
}

/*
 * When x's own deadline falls due (0: none): the connect and handshake's,
 * then, until the first byte of the answer, the request's answer_ms, and
 * a stream's silence.  *what says which (a format for the time), for
 * the error.
 */
static int64_t
client_due(const struct client_xfer *x, const char **what, int64_t *ms)
{
	const struct client_req	*q = x->req;

	if (!conn_ready(x->conn)) {
		*what = "no connection within %s";
		*ms = q->connect_ms > 0 ? q->connect_ms : CLIENT_CONNECT_MS;
		return (x->start + *ms);
	}
	if (x->got == 0 && q->answer_ms > 0) {
		*what = "no answer within %s";
		*ms = q->answer_ms;
		return (x->start + *ms);
	}
	if (q->cbs != NULL) {
		*what = "no word from it for %s; the connection is taken "
		    "for dead";
		*ms = CLIENT_IDLE_MS;
		return (x->heard + *ms);
	}
	return (0);
}

/* When the next timeout falls due (ms from now; -1: none). */
static int
client_timeouts(struct client_xfer *x, u_int n, int64_t deadline,
    int64_t now)
{
	const char	*what;
	char		*in, *msg;
	int64_t		 due, ms, next = deadline;
	u_int		 i;

	for (i = 0; i < n; i++) {
		if (!client_active(&x[i]))
			continue;
		if (deadline != 0 && now >= deadline) {
			x[i].late = 1;
			client_fail(&x[i], "%s: no answer in time",
			    conn_name(x[i].conn));
		}
		due = client_due(&x[i], &what, &ms);
		if (due != 0 && now >= due && client_active(&x[i])) {
			x[i].late = 1;
			in = format_duration(ms);
			xasprintf(&msg, what, in);
			client_fail(&x[i], "%s: %s", conn_name(x[i].conn),
			    msg);
			free(msg);
			free(in);
		}
		if (due != 0 && (next == 0 || due < next))
			next = due;
	}
	if (next == 0)
		return (-1);
	return (next <= now ? 0 : (int)(next - now));
}

/* Fills the request's reply from what came back. */
static void
client_xfer_finish(struct client_xfer *x)
{
	struct client_reply	*r = &x->req->reply;
	json_t			*err;

	memset(r, 0, sizeof *r);
	r->status = x->resp.status;
	r->lost = x->failed && x->conn != NULL && x->resp.status == 0;
	x->req->stopped = x->stopped && !x->failed;
	x->req->late = x->failed && x->late;
	x->req->took_us = clock_mono_us() - x->start_us;
	if (x->failed) {
		r->error = x->cause;
		x->cause = NULL;
	} else {
		if (x->body.len > 0)
			r->body = json_loadb(x->body.data, x->body.len, 0,
			    NULL);
		if (r->status >= 400) {
			err = r->body ? json_object_get(r->body, "error") :
			    NULL;
			if (json_is_string(err))
				r->error = xstrdup(json_string_value(err));
			else
				xasprintf(&r->error, "the %s refused the "
				    "request (HTTP %ld)", x->req->target ?
				    "host" : "daemon", r->status);
		}
	}
	free(x->cause);
	free(x->body.data);
	free(x->pending.data);
	free(x->chunk);
	if (x->head != NULL) {
		explicit_bzero(x->head, x->headlen);
		free(x->head);
	}
	if (x->done && !x->failed && !x->stopped && !x->resp.close &&
	    x->req->target != NULL)
		client_keep(x->req->target, x->conn);
	else
		conn_close(x->conn);
}

void
client_req_init(struct client_req *q, const struct target *t,
    const char *method, const char *path)
{
	memset(q, 0, sizeof *q);
	q->target = t;
	q->method = method;
	q->path = path;
	q->bodyfd = -1;
	q->sinkfd = -1;
}

/*
 * Runs n requests at once, each on its own connection, until every one
 * has its reply or has failed; timeout_ms (0: none) bounds the whole.
 * Each request's reply (and stopped) is filled in.
 */
void
client_multi(struct client_req *v, u_int n, int timeout_ms)
{
	struct client_xfer	*x;
	struct pollfd		*pfd;
	u_int			*map, i, np, k;
	int64_t			 now, deadline;
	int			 wait;
	void			(*oldpipe)(int);

	x = xcalloc(n, sizeof *x);
	pfd = xcalloc(n + 1, sizeof *pfd);
	map = xcalloc(n, sizeof *map);
	oldpipe = signal(SIGPIPE, SIG_IGN);
	now = clock_mono_ms();
	deadline = timeout_ms > 0 ? now + timeout_ms : 0;
	for (i = 0; i < n; i++)
		client_xfer_start(&x[i], &v[i], now);
	for (;;) {
		wait = client_timeouts(x, n, deadline, now);
		for (i = np = 0; i < n; i++) {
			if (!client_active(&x[i]))
				continue;
			if (conn_ready(x[i].conn) && !x[i].sending &&
			    conn_pending(x[i].conn) > 0)
				wait = 0;
			pfd[np].fd = conn_fd(x[i].conn);
			pfd[np].events = (short)conn_events(x[i].conn,
			    x[i].sending ? POLLOUT : POLLIN);
			pfd[np].revents = 0;
			map[np++] = i;
		}
		if (np == 0)
			break;
		pfd[np] = (struct pollfd){ client_sig_pipe[0], POLLIN, 0 };
		if (poll(pfd, np + 1, wait) == -1 && errno != EINTR)
			fatal("poll");
		now = clock_mono_ms();
		if (pfd[np].revents != 0)
			client_interrupted(x, n);
		for (k = 0; k < np; k++) {
			i = map[k];
			if (client_active(&x[i]) && (pfd[k].revents != 0 ||
			    (conn_ready(x[i].conn) && conn_pending(x[i].conn) >
			    0)))
				client_xfer_step(&x[i], now);
		}
	}
	for (i = 0; i < n; i++)
		client_xfer_finish(&x[i]);
	signal(SIGPIPE, oldpipe);
	free(map);
	free(pfd);
	free(x);
}

/* One request; 0 if a reply came, 1 if a callback ended it, -1 if not. */
int
client_request(struct client_req *q)
{
	client_multi(q, 1, 0);
	if (q->stopped)
		return (1);
	return (q->reply.error != NULL && q->reply.status < 400 ? -1 : 0);
}

/* Prepares a JSON body for q; the text is the caller's to free. */
static char *
client_json_body(struct client_req *q, json_t *body)
{
	char	*text;

	if (body == NULL)
		return (NULL);
	text = json_dumps(body, JSON_COMPACT);
	q->body = text;
	q->len = strlen(text);
	return (text);
}

/*
 * One request to target t (NULL: the local daemon) and its reply.  Returns
 * 0 if a reply came (whatever its status), -1 with r->error if the daemon
 * could not be reached.
 */
int
client_call_at(const struct target *t, const char *method, const char *path,
    json_t *body, struct client_reply *r)
{
	struct client_req	 q;
	char			*text;
	int			 rc;

	client_req_init(&q, t, method, path);
	text = client_json_body(&q, body);
	rc = client_request(&q);
	free(text);
	*r = q.reply;
	return (rc == 0 ? 0 : -1);
}

/* One request to wherever this command goes (hosts.c). */
int
client_call(const char *method, const char *path, json_t *body,
    struct client_reply *r)
{
	if (hosts_remote() || hosts_names_remote(path))
		return (hosts_call(method, path, body, r));
	return (client_call_at(NULL, method, path, body, r));
}

void
client_reply_clear(struct client_reply *r)
{
	json_decref(r->body);
	free(r->error);
	memset(r, 0, sizeof *r);
}

static void
client_sigint(int sig)
{
	int	 saved = errno;

	if (client_sig_pipe[1] != -1)
		(void)!write(client_sig_pipe[1], "i", 1);
	errno = saved;
}

/* From now on, Ctrl-C is reported to stream callbacks instead of killing. */
void
client_catch_interrupts(void)
{
	struct sigaction	 sa;

	if (client_sig_pipe[0] != -1)
		return;
	if (pipe2(client_sig_pipe, O_CLOEXEC|O_NONBLOCK) == -1)
		fatal("pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = client_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

/*
 * Takes one Ctrl-C that no stream has seen (a plain request abandoned
 * for it leaves it in the pipe): 1 if there was one.
 */
int
client_take_interrupt(void)
{
	char	 c;

	return (client_sig_pipe[0] != -1 &&
	    read(client_sig_pipe[0], &c, 1) == 1);
}

/*
 * A request to target t whose 200 reply is a frame stream; each frame goes
 * to cbs->frame.  Returns 0 when the stream ended, 1 if a callback ended it
 * (detach), -1 with r->error if the connection failed or broke.  A non-200
 * reply returns 0 with r->status and r->error set.
 */
int
client_stream_at(const struct target *t, const char *method,
    const char *path, json_t *body, const struct client_stream_cbs *cbs,
    struct client_reply *r)
{
	struct client_req	 q;
	char			*text;
	int			 rc;

	client_req_init(&q, t, method, path);
	q.cbs = cbs;
	text = client_json_body(&q, body);
	rc = client_request(&q);
	free(text);
	*r = q.reply;
	return (rc);
}

int
client_stream(const char *method, const char *path, json_t *body,
    const struct client_stream_cbs *cbs, struct client_reply *r)
{
	if (hosts_remote() || hosts_names_remote(path))
		return (hosts_stream(method, path, body, cbs, r));
	return (client_stream_at(NULL, method, path, body, cbs, r));
}

/* Prints the reply's error as "gmux CMD: ERROR" if it failed; 0 if fine. */
int
client_ok(struct client_reply *r, const char *cmd)
{
	if (r->error == NULL && r->status < 400)
		return (0);
	fprintf(stderr, "gmux %s: %s\n", cmd, r->error ? r->error :
	    "request failed");
	return (-1);
}

void
client_die(struct client_reply *r, const char *cmd)
{
	client_ok(r, cmd);
	exit(1);
}
