/*
 * ui-forward.c: gmux ui's forwarder.  A browser cannot speak to a Unix
 * socket, nor pin a host's key; so gmux ui listens on loopback and passes
 * each request on, to the local daemon's socket or through pinned TLS to
 * a remote host, adding the remote's token on the way (the browser never
 * sees it).  What reaches the forwarder must show it is the browser gmux
 * ui's user opened:
 *
 *  - the address gmux ui prints carries a one-time secret; the first
 *    request that shows it gets a session cookie (HttpOnly, SameSite=
 *    Strict, random, in this process only) and is sent to /ui/; the secret
 *    then is spent;
 *  - every other request needs that cookie, a Host header naming the
 *    loopback address it came to (a page that rebinds a name to 127.0.0.1
 *    has neither), and, if it changes anything, the dashboard's CSRF
 *    header and no foreign Origin.
 *
 * Each connection is one request, handled by a child process with
 * blocking I/O (Connection: close upstream, so a stream lasts as long as
 * it should and a reply's end is the connection's); children share the
 * spent flag with the parent through one shared page.
 */

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "ui-int.h"

#define FWD_HEAD_MAX		(64 * 1024)
#define FWD_TIMEOUT_MS		10000	/* for the head, and the connect */
#define FWD_CHILDREN_MAX	64
#define FWD_SECRET_BYTES	24
#define FWD_BUF			(64 * 1024)

struct fwd_shared {
	int	 spent;			/* the one-time secret was used */
};

struct fwd {
	const struct target	*target;	/* NULL: the local socket */
	u_int			 port;		/* where it listens */
	char			 secret[FWD_SECRET_BYTES * 2 + 1];
	char			 session[FWD_SECRET_BYTES * 2 + 1];
	struct fwd_shared	*shared;
	int			 client;	/* in a child: the browser */
};

/*
 * Parses a request line, "METHOD PATH HTTP/1.x", from the start of a
 * head.  Returns 0, or -1 if it is not one (or does not fit rq).
 */
int
ui_fwd_request_line(const char *buf, size_t len, struct ui_fwd_req *rq)
{
	const char	*eol, *sp1, *sp2;
	size_t		 n;

	memset(rq, 0, sizeof *rq);
	if ((eol = memchr(buf, '\n', len)) == NULL)
		return (-1);
	if (eol > buf && eol[-1] == '\r')
		eol--;
	if ((sp1 = memchr(buf, ' ', (size_t)(eol - buf))) == NULL)
		return (-1);
	if ((sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1))) == NULL)
		return (-1);
	n = (size_t)(sp1 - buf);
	if (n == 0 || n >= sizeof rq->method || strspn(buf,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ") < n)
		return (-1);
	memcpy(rq->method, buf, n);
	n = (size_t)(sp2 - sp1 - 1);
	if (n == 0 || n >= sizeof rq->path || sp1[1] != '/')
		return (-1);
	memcpy(rq->path, sp1 + 1, n);
	if (strlen(rq->path) != n || strcspn(rq->path, " \t\r\\") != n)
		return (-1);
	if ((size_t)(eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return (-1);
	rq->minor = sp2[8] - '0';
	return (0);
}

static void
fwd_write(int fd, const char *s, size_t len)
{
	if (write_all(fd, s, len) == -1)
		log_debug("%s: %s", __func__, strerror(errno));
}

/* A reply of the forwarder's own, closing the connection. */
static void printflike(4, 5)
fwd_reply(int fd, int code, const char *extra, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg, *esc, *text;
	json_t	*o;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	o = json_pack("{s:s}", code < 400 ? "message" : "error", msg);
	esc = json_dumps(o, JSON_COMPACT);
	xasprintf(&text, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nCache-Control: no-store\r\n"
	    "Connection: close\r\n%s\r\n%s\n", code, code < 400 ? "OK" :
	    "Error", strlen(esc) + 1, extra != NULL ? extra : "", esc);
	fwd_write(fd, text, strlen(text));
	free(text);
	free(esc);
	json_decref(o);
	free(msg);
}

static int
fwd_equal(const char *a, const char *b)
{
	size_t	 n = strlen(b), i;
	u_char	 d = 0;

	if (strlen(a) != n)
		return (0);
	for (i = 0; i < n; i++)
		d |= (u_char)a[i] ^ (u_char)b[i];
	return (d == 0);
}

/* Reads the browser's head; -1 if it does not come whole in time. */
static int
fwd_read_head(struct fwd *f, struct http_head *h, size_t *rest)
{
	struct pollfd	 pfd = { f->client, POLLIN, 0 };
	int64_t		 end = clock_mono_ms() + FWD_TIMEOUT_MS;
	char		 buf[4096];
	ssize_t		 n;
	int		 rc = 0;

	while (rc == 0) {
		if (poll(&pfd, 1, (int)(end - clock_mono_ms())) <= 0)
			return (-1);
		if ((n = read(f->client, buf, sizeof buf)) <= 0)
			return (-1);
		rc = http_head_feed(h, buf, (size_t)n, FWD_HEAD_MAX, rest);
	}
	return (rc == 1 ? 0 : -1);
}

/* The one-time address: spends the secret, hands out the session. */
static void
fwd_open(struct fwd *f, const char *query)
{
	char	*cookie;
	char	 got[sizeof f->secret];

	if (query == NULL || strncmp(query, "secret=", 7) != 0 ||
	    strlen(query + 7) >= sizeof got) {
		fwd_reply(f->client, 403, NULL, "this address needs its "
		    "secret");
		return;
	}
	snprintf(got, sizeof got, "%s", query + 7);
	if (!fwd_equal(got, f->secret) ||
	    __atomic_exchange_n(&f->shared->spent, 1, __ATOMIC_SEQ_CST)) {
		fwd_reply(f->client, 403, NULL, "this address was used "
		    "already: run gmux ui again for a new one");
		return;
	}
	xasprintf(&cookie, "Set-Cookie: %s=%s; Path=/; HttpOnly; "
	    "SameSite=Strict\r\nLocation: /ui/\r\n", UI_FWD_COOKIE, f->session);
	fwd_reply(f->client, 303, cookie, "to /ui/");
	explicit_bzero(cookie, strlen(cookie));
	free(cookie);
}

/* Does the head show it comes from the browser gmux ui opened? */
static int
fwd_allowed(struct fwd *f, const struct http_head *h,
    const struct ui_fwd_req *rq, const char **why)
{
	char	*host, *cookie, *origin, *csrf, want[64], got[128];
	int	 ok = 0;

	host = http_head_get(h, "Host");
	cookie = http_head_get(h, "Cookie");
	origin = http_head_get(h, "Origin");
	csrf = http_head_get(h, UI_CSRF_HEADER);
	snprintf(want, sizeof want, "127.0.0.1:%u", f->port);
	if (host == NULL || strcmp(host, want) != 0)
		*why = "Host: not this forwarder's loopback address";
	else if (cookie == NULL || ui_cookie_get(cookie, UI_FWD_COOKIE, got,
	    sizeof got) != 0 || !fwd_equal(got, f->session))
		*why = "open the address gmux ui printed";
	else if (strcmp(rq->method, "GET") != 0 &&
	    strcmp(rq->method, "HEAD") != 0 && (csrf == NULL ||
	    (origin != NULL && (strncmp(origin, "http://", 7) != 0 ||
	    strcmp(origin + 7, want) != 0))))
		*why = "a change from outside the dashboard";
	else
		ok = 1;
	explicit_bzero(got, sizeof got);
	free(host);
	free(cookie);
	free(origin);
	free(csrf);
	return (ok);
}

/* Is a header one the forwarder replaces or drops on the way up? */
static int
fwd_dropped(const char *line, size_t len)
{
	static const char *const drop[] = { "host", "cookie", "connection",
	    "keep-alive", "authorization", "proxy-authorization", "origin",
	    "referer", "upgrade", "te", UI_CSRF_HEADER };
	const char	*colon = memchr(line, ':', len);
	size_t		 n, i;

	if (colon == NULL)
		return (1);
	n = (size_t)(colon - line);
	for (i = 0; i < nitems(drop); i++) {
		if (strlen(drop[i]) == n && strncasecmp(line, drop[i], n) == 0)
			return (1);
	}
	return (0);
}

/*
 * The head that goes upstream: the browser's, with our own Host and
 * Connection and (to a remote) Authorization.  Allocated, *len long; the
 * caller wipes and frees it.
 */
static char *
fwd_upstream_head(struct fwd *f, const struct http_head *h,
    const struct ui_fwd_req *rq, size_t *len)
{
	const char	*p, *eol, *end = h->buf + h->end;
	const char	*token = f->target != NULL ? f->target->token : NULL;
	char		*out;
	size_t		 n, size, at;

	size = h->end + sizeof rq->method + sizeof rq->path + 128 +
	    (token != NULL ? strlen(token) : 0);
	out = xmalloc(size);
	at = (size_t)snprintf(out, size, "%s %s HTTP/1.1\r\nHost: gmux\r\n"
	    "Connection: close\r\n", rq->method, rq->path);
	p = (const char *)memchr(h->buf, '\n', h->end) + 1;
	for (; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		n = (size_t)(eol - p) + 1;
		if (n <= 2 || fwd_dropped(p, n))
			continue;
		memcpy(out + at, p, n);
		at += n;
	}
	if (token != NULL)
		at += (size_t)snprintf(out + at, size - at, "Authorization: "
		    "Bearer %s\r\n", token);
	at += (size_t)snprintf(out + at, size - at, "\r\n");
	*len = at;
	return (out);
}

/* Connects upstream and waits until it is ready (and trusted). */
static struct conn *
fwd_connect(struct fwd *f, char **cause)
{
	struct conn	*c;
	struct pollfd	 pfd;
	int64_t		 end = clock_mono_ms() + FWD_TIMEOUT_MS;

	if (f->target == NULL) {
		if ((c = conn_open_unix(path_socket())) == NULL)
			xasprintf(cause, "no daemon on %s: %s", path_socket(),
			    strerror(errno));
		return (c);
	}
	c = conn_open_tcp(f->target->host, f->target->port, f->target->pin,
	    cause);
	while (c != NULL && !conn_ready(c)) {
		pfd.fd = conn_fd(c);
		pfd.events = (short)conn_events(c, POLLIN);
		if (poll(&pfd, 1, (int)(end - clock_mono_ms())) <= 0) {
			xasprintf(cause, "%s: no answer", conn_name(c));
			conn_close(c);
			return (NULL);
		}
		if (conn_advance(c, cause) != 0) {
			conn_close(c);
			return (NULL);
		}
	}
	return (c);
}

/* Writes all of buf to the upstream connection. */
static int
fwd_conn_write(struct conn *c, const char *buf, size_t len)
{
	struct pollfd	 pfd;
	ssize_t		 n;

	while (len > 0) {
		if ((n = conn_write(c, buf, len)) > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return (-1);
		pfd.fd = conn_fd(c);
		pfd.events = (short)conn_events(c, POLLOUT);
		if (poll(&pfd, 1, FWD_TIMEOUT_MS) <= 0)
			return (-1);
	}
	return (0);
}

/* Copies both ways until the host ends its reply (or the browser goes). */
static void
fwd_pump(struct fwd *f, struct conn *c)
{
	struct pollfd	 pfd[2];
	char		*buf = xmalloc(FWD_BUF);
	ssize_t		 n;

	for (;;) {
		if (conn_pending(c) == 0) {
			pfd[0].fd = conn_fd(c);
			pfd[0].events = (short)conn_events(c, POLLIN);
			pfd[1].fd = f->client;
			pfd[1].events = POLLIN;
			if (poll(pfd, 2, -1) == -1 && errno != EINTR)
				break;
			if (pfd[1].revents != 0) {
				n = read(f->client, buf, FWD_BUF);
				if (n <= 0 || fwd_conn_write(c, buf,
				    (size_t)n) != 0)
					break;
			}
			if (pfd[0].revents == 0)
				continue;
		}
		n = conn_read(c, buf, FWD_BUF);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || write_all(f->client, buf, (size_t)n) == -1)
			break;
	}
	free(buf);
}

/* One connection, in its own child process. */
static void
fwd_handle(struct fwd *f)
{
	struct http_head	 h;
	struct ui_fwd_req	 rq;
	struct conn		*c;
	const char		*why, *q;
	char			*head, *cause = NULL;
	size_t			 rest, len;

	memset(&h, 0, sizeof h);
	if (fwd_read_head(f, &h, &rest) != 0 ||
	    ui_fwd_request_line(h.buf, h.end, &rq) != 0) {
		fwd_reply(f->client, 400, NULL, "not an HTTP/1.x request");
		goto out;
	}
	q = strchr(rq.path, '?');
	if (strncmp(rq.path, "/ui/open", 8) == 0 && (rq.path[8] == '\0' ||
	    rq.path[8] == '?')) {
		fwd_open(f, q != NULL ? q + 1 : NULL);
		goto out;
	}
	if (!fwd_allowed(f, &h, &rq, &why)) {
		fwd_reply(f->client, 403, NULL, "%s", why);
		goto out;
	}
	/* A login here would hand the remote's token to the browser. */
	if (strncmp(rq.path, "/ui/log", 7) == 0 &&
	    strcmp(rq.method, "GET") != 0) {
		fwd_reply(f->client, 403, NULL, "no login through gmux ui: it "
		    "adds the token itself");
		goto out;
	}
	if ((c = fwd_connect(f, &cause)) == NULL) {
		fwd_reply(f->client, 502, NULL, "%s", cause);
		goto out;
	}
	head = fwd_upstream_head(f, &h, &rq, &len);
	if (fwd_conn_write(c, head, len) == 0 && (rest == 0 ||
	    fwd_conn_write(c, h.buf + h.end, rest) == 0))
		fwd_pump(f, c);
	explicit_bzero(head, len);
	free(head);
	conn_close(c);
out:
	free(cause);
	http_head_clear(&h);
}

/* Reaps the children that ended; returns how many still run. */
static u_int
fwd_reap(u_int n)
{
	while (n > 0 && waitpid(-1, NULL, WNOHANG) > 0)
		n--;
	return (n);
}

static void
fwd_random(char *out, size_t bytes)
{
	u_char	 raw[FWD_SECRET_BYTES];

	random_bytes(raw, bytes);
	hex_encode(raw, bytes, out);
	explicit_bzero(raw, sizeof raw);
}

/*
 * Serves the forwarder on the listening socket fd (bound to 127.0.0.1 on
 * port) until the process is stopped: prints the address to open first.
 * t is the remote host (NULL: the local daemon).  Returns only on an
 * error, -1 with *cause.
 */
int
ui_fwd_serve(const struct target *t, int fd, int port, char **cause)
{
	struct fwd	 f;
	u_int		 children = 0;
	pid_t		 pid;
	int		 c;

	memset(&f, 0, sizeof f);
	f.target = t;
	f.port = (u_int)port;
	f.shared = mmap(NULL, sizeof *f.shared, PROT_READ|PROT_WRITE,
	    MAP_SHARED|MAP_ANONYMOUS, -1, 0);
	if (f.shared == MAP_FAILED)
		fatal("mmap");
	fwd_random(f.secret, FWD_SECRET_BYTES);
	fwd_random(f.session, FWD_SECRET_BYTES);
	printf("http://127.0.0.1:%d/ui/open?secret=%s\n", port, f.secret);
	fflush(stdout);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		if ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			xasprintf(cause, "accept: %s", strerror(errno));
			return (-1);
		}
		children = fwd_reap(children);
		if (children >= FWD_CHILDREN_MAX ||
		    (pid = fork()) == -1) {
			close(c);
			continue;
		}
		if (pid == 0) {
			close(fd);
			f.client = c;
			fwd_handle(&f);
			_exit(0);
		}
		children++;
		close(c);
	}
}
