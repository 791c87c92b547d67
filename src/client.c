/*
 * client.c: the CLI's side of the API.  client_call() is one request and
 * its JSON reply; client_stream() is a request whose reply is a frame
 * stream (run, logs -f, attach).  One connection per request, closed by the
 * server after its reply.  Waiting is a poll() on the connection and on a
 * pipe that the SIGINT handler writes to, so Ctrl-C is seen at once.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

struct client_buf {
	char	*data;
	size_t	 len;
};

struct client_xfer {
	struct http_resp	 resp;
	struct client_buf	 body;		/* a non-stream reply */
	struct client_buf	 pending;	/* a frame not yet whole */
	const struct client_stream_cbs *cbs;
	int			 aborted;
	char			*cause;
};

static int	client_sig_pipe[2] = { -1, -1 };

static int
client_connect(void)
{
	struct sockaddr_un	 sun;
	const char		*path = path_socket();
	int			 fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/* Is a daemon listening on this home's socket? */
int
client_daemon_running(void)
{
	int	 fd;

	if ((fd = client_connect()) == -1)
		return (0);
	close(fd);
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

/* Hands every whole frame in the pending bytes to the stream callback. */
static void
client_frames(struct client_xfer *x)
{
	struct frame	 f;
	ssize_t		 n = 0;
	size_t		 at = 0;

	while (!x->aborted && (n = frame_parse(x->pending.data + at,
	    x->pending.len - at, &f, &x->cause)) > 0) {
		at += (size_t)n;
		if (x->cbs->frame(&f, x->cbs->arg) != 0)
			x->aborted = 1;
	}
	if (n == -1)
		x->aborted = 1;
	memmove(x->pending.data, x->pending.data + at, x->pending.len - at);
	x->pending.len -= at;
}

static void
client_body_cb(const char *data, size_t len, void *arg)
{
	struct client_xfer	*x = arg;

	if (x->cbs == NULL || x->resp.status != 200 || x->aborted) {
		buf_add(&x->body, data, len);
		return;
	}
	buf_add(&x->pending, data, len);
	client_frames(x);
}

static int
client_send(int fd, const char *method, const char *path, json_t *body)
{
	char	*text = NULL, *head;
	size_t	 len = 0;
	int	 rc;

	if (body != NULL) {
		text = json_dumps(body, JSON_COMPACT);
		len = strlen(text);
	}
	xasprintf(&head, "%s %s HTTP/1.1\r\nHost: gmux\r\n"
	    "Connection: close\r\n%sContent-Length: %zu\r\n\r\n", method, path,
	    body != NULL ? "Content-Type: application/json\r\n" : "", len);
	rc = write_all(fd, head, strlen(head)) == -1 ||
	    (len > 0 && write_all(fd, text, len) == -1) ? -1 : 0;
	free(head);
	free(text);
	return (rc);
}

/* Ctrl-C during a stream: ask the callback; 1 if it ends the stream. */
static int
client_interrupted(struct client_xfer *x)
{
	char	 c;

	while (read(client_sig_pipe[0], &c, 1) == 1) {
		if (x->cbs != NULL && x->cbs->interrupt != NULL &&
		    x->cbs->interrupt(x->cbs->arg) != 0)
			return (1);
	}
	return (0);
}

/*
 * Sends one request and reads its reply into x.  Returns 0 when the reply
 * is complete, 1 if a callback ended it, -1 with x->cause on failure.
 */
static int
client_exchange(struct client_xfer *x, const char *method, const char *path,
    json_t *body)
{
	struct pollfd	 pfd[2];
	char		 buf[65536];
	ssize_t		 n;
	int		 fd, rc = -1, done = 0;

	if ((fd = client_connect()) == -1) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			xasprintf(&x->cause, "no gmux daemon serves %s (start "
			    "one with: gmux serve -d)", path_home());
		else
			xasprintf(&x->cause, "%s: %s", path_socket(),
			    strerror(errno));
		return (-1);
	}
	if (client_send(fd, method, path, body) != 0) {
		xasprintf(&x->cause, "sending the request: %s", strerror(errno));
		goto out;
	}
	http_resp_init(&x->resp);
	pfd[0] = (struct pollfd){ fd, POLLIN, 0 };
	pfd[1] = (struct pollfd){ client_sig_pipe[0], POLLIN, 0 };
	while (!done && !x->aborted) {
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			break;
		if (pfd[1].revents && client_interrupted(x)) {
			rc = 1;
			goto out;
		}
		if (pfd[0].revents == 0)
			continue;
		if ((n = read(fd, buf, sizeof buf)) == -1) {
			if (errno == EINTR)
				continue;
			xasprintf(&x->cause, "%s", strerror(errno));
			goto out;
		}
		done = http_resp_feed(&x->resp, buf, (size_t)n, client_body_cb,
		    x, &x->cause);
		if (done == -1)
			goto out;
	}
	rc = x->aborted ? (x->cause != NULL ? -1 : 1) : 0;
out:
	close(fd);
	return (rc);
}

/* Fills the reply from what came back. */
static void
client_finish(struct client_xfer *x, struct client_reply *r)
{
	json_t	*err;

	r->status = x->resp.status;
	if (x->body.len > 0)
		r->body = json_loadb(x->body.data, x->body.len, 0, NULL);
	if (r->status >= 400) {
		err = r->body ? json_object_get(r->body, "error") : NULL;
		xasprintf(&r->error, "%s", json_is_string(err) ?
		    json_string_value(err) : "the daemon refused the request");
	}
	free(x->body.data);
	free(x->pending.data);
}

/*
 * One request and its reply.  Returns 0 if a reply came (whatever its
 * status), -1 with r->error if the daemon could not be reached.
 */
int
client_call(const char *method, const char *path, json_t *body,
    struct client_reply *r)
{
	struct client_xfer	 x;

	memset(r, 0, sizeof *r);
	memset(&x, 0, sizeof x);
	if (client_exchange(&x, method, path, body) != 0) {
		r->error = x.cause;
		free(x.body.data);
		return (-1);
	}
	client_finish(&x, r);
	return (0);
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
 * A request whose 200 reply is a frame stream; each frame goes to
 * cbs->frame.  Returns 0 when the stream ended, 1 if a callback ended it
 * (detach), -1 with r->error if the connection failed or broke.  A non-200
 * reply returns 0 with r->status and r->error set.
 */
int
client_stream(const char *method, const char *path, json_t *body,
    const struct client_stream_cbs *cbs, struct client_reply *r)
{
	struct client_xfer	 x;
	int			 rc;

	memset(r, 0, sizeof *r);
	memset(&x, 0, sizeof x);
	x.cbs = cbs;
	rc = client_exchange(&x, method, path, body);
	if (rc == -1) {
		r->error = x.cause;
		r->status = x.resp.status;
		free(x.body.data);
		free(x.pending.data);
		return (-1);
	}
	client_finish(&x, r);
	return (rc);
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
