/*
 * conn.c: one connection from the CLI to a daemon: the local Unix socket,
 * or TCP to a remote host wrapped in pinned TLS.  Everything is
 * non-blocking, so the CLI can talk to several hosts at once: the caller
 * polls conn_fd() for conn_events() and calls conn_advance() until
 * conn_ready(), then reads and writes as with read(2) and write(2).  A name
 * that resolves to several addresses (IPv6 and IPv4) is tried address by
 * address until one connects.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

enum conn_state {
	CONN_CONNECTING,
	CONN_HANDSHAKE,
	CONN_READY,
};

struct conn {
	int		 fd;
	enum conn_state	 state;
	struct tls_conn	*tls;		/* NULL: the Unix socket */
	struct addrinfo	*ai;		/* every address of the host */
	struct addrinfo	*next;		/* the next to try */
	char		 pin[DIGEST_HEX];
	char		*name;		/* HOST:PORT, for messages */
	char		*session;	/* where its TLS session is kept */
	int		 err;		/* the last address's connect error */
	int		 blocked;	/* TLS waits for tls_want() */
};

/* Opens the local daemon's socket (connected at once).  NULL with errno. */
struct conn *
conn_open_unix(const char *path)
{
	struct sockaddr_un	 sun;
	struct conn		*c;
	int			 fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		return (NULL);
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0)) == -1)
		return (NULL);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    set_nonblock(fd) == -1) {
		close(fd);
		return (NULL);
	}
	c = xcalloc(1, sizeof *c);
	c->fd = fd;
	c->state = CONN_READY;
	c->name = xstrdup(path);
	return (c);
}

/*
 * TCP for a remote's connections: no Nagle delay (requests are small and
 * wait for their answers), and keepalives, so a host that vanished is
 * noticed even on a request that streams nothing.
 */
static void
conn_tcp_options(int fd)
{
	int	 on = 1, idle = 15, intvl = 5, cnt = 3;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* Starts the TLS handshake on the connected socket. */
static int
conn_start_tls(struct conn *c, char **cause)
{
	if ((c->tls = tls_client_open(c->fd, c->pin, c->name, c->session,
	    cause)) == NULL)
		return (-1);
	c->state = CONN_HANDSHAKE;
	return (0);
}

/*
 * Where the TLS session with a host is kept for the next command to resume
 * (tls.c): one file per host, port and pin, under the state directory.
 */
static char *
conn_session_path(const char *host, u_int port, const char *pin)
{
	char	*key, hex[DIGEST_HEX], *path;

	xasprintf(&key, "%s %u %s", host, port, pin);
	digest_buf(key, strlen(key), hex);
	free(key);
	hex[32] = '\0';
	xasprintf(&path, "%s/tls/sessions/%s", path_home(), hex);
	return (path);
}

/*
 * The addresses of host: a numeric one is read as it is, without
 * AI_ADDRCONFIG's query of the interfaces (a netlink round trip).
 */
static int
conn_resolve(const char *host, u_int port, struct addrinfo **ai)
{
	struct addrinfo	 hints;
	char		 serv[16];

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV|AI_NUMERICHOST;
	snprintf(serv, sizeof serv, "%u", port);
	if (getaddrinfo(host, serv, &hints, ai) == 0)
		return (0);
	hints.ai_flags = AI_NUMERICSERV|AI_ADDRCONFIG;
	return (getaddrinfo(host, serv, &hints, ai));
}

/* Starts a connect to the next address; -1 with *cause when none is left. */
static int
conn_try_next(struct conn *c, char **cause)
{
	struct addrinfo	*a;

	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
	}
	while ((a = c->next) != NULL) {
		c->next = a->ai_next;
		c->fd = socket(a->ai_family, a->ai_socktype|SOCK_NONBLOCK|
		    SOCK_CLOEXEC, a->ai_protocol);
		if (c->fd == -1) {
			c->err = errno;
			continue;
		}
		conn_tcp_options(c->fd);
		if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0)
			return (conn_start_tls(c, cause));
		if (errno == EINPROGRESS) {
			c->state = CONN_CONNECTING;
			return (0);
		}
		c->err = errno;
		close(c->fd);
		c->fd = -1;
	}
	xasprintf(cause, "%s: %s", c->name, strerror(c->err ? c->err :
	    EHOSTUNREACH));
	return (-1);
}

/*
 * Starts a connection to a remote: host, port and the pin its key must
 * have.  Returns it (in progress: drive it with conn_advance) or NULL with
 * *cause.  Name resolution blocks (getaddrinfo); the connects do not.
 */
struct conn *
conn_open_tcp(const char *host, u_int port, const char *pin, char **cause)
{
	struct conn	*c;
	int		 r;

	c = xcalloc(1, sizeof *c);
	c->fd = -1;
	snprintf(c->pin, sizeof c->pin, "%s", pin);
	if (strchr(host, ':') != NULL)
		xasprintf(&c->name, "[%s]:%u", host, port);
	else
		xasprintf(&c->name, "%s:%u", host, port);
	c->session = conn_session_path(host, port, pin);
	if ((r = conn_resolve(host, port, &c->ai)) != 0) {
		xasprintf(cause, "%s: %s", c->name, r == EAI_SYSTEM ?
		    strerror(errno) : gai_strerror(r));
		conn_close(c);
		return (NULL);
	}
	c->next = c->ai;
	if (conn_try_next(c, cause) != 0) {
		conn_close(c);
		return (NULL);
	}
	return (c);
}

/*
 * Moves a connection on after its fd polled ready.  Returns 0 (connected
 * and trusted, or still on its way), or -1 with *cause; a host that shows
 * another key than the pinned one fails here, before anything was sent.
 */
int
conn_advance(struct conn *c, char **cause)
{
	socklen_t	 len = sizeof c->err;
	int		 r;

	if (c->state == CONN_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &c->err, &len) != 0)
			c->err = errno;
		if (c->err == EINPROGRESS || c->err == EALREADY)
			return (0);
		if (c->err != 0)
			return (conn_try_next(c, cause));
		if (conn_start_tls(c, cause) != 0)
			return (-1);
	}
	if (c->state == CONN_HANDSHAKE) {
		if ((r = tls_handshake(c->tls, cause)) == -1)
			return (-1);
		if (r == 0)
			c->state = CONN_READY;
	}
	return (0);
}

int
conn_ready(const struct conn *c)
{
	return (c->state == CONN_READY);
}

int
conn_fd(const struct conn *c)
{
	return (c->fd);
}

const char *
conn_name(const struct conn *c)
{
	return (c->name);
}

/*
 * What to poll for: while connecting, what the connect or handshake waits
 * for; once ready, what the caller wants (POLLIN to read, POLLOUT to
 * write), unless TLS said it needs the other way first.
 */
int
conn_events(const struct conn *c, int want)
{
	if (c->state == CONN_CONNECTING)
		return (POLLOUT);
	if (c->tls != NULL && (c->state == CONN_HANDSHAKE || c->blocked))
		return (tls_want(c->tls));
	return (want);
}

/* Bytes that were decrypted already: read them before polling again. */
size_t
conn_pending(const struct conn *c)
{
	return (c->tls != NULL && c->state == CONN_READY ?
	    tls_pending(c->tls) : 0);
}

ssize_t
conn_read(struct conn *c, void *buf, size_t len)
{
	ssize_t	 n;

	if (c->tls != NULL) {
		n = tls_read(c->tls, buf, len);
		c->blocked = n == -1 && errno == EAGAIN;
		return (n);
	}
	while ((n = read(c->fd, buf, len)) == -1 && errno == EINTR)
		;
	return (n);
}

ssize_t
conn_write(struct conn *c, const void *buf, size_t len)
{
	ssize_t	 n;

	if (c->tls != NULL) {
		n = tls_write(c->tls, buf, len);
		c->blocked = n == -1 && errno == EAGAIN;
		return (n);
	}
	while ((n = send(c->fd, buf, len, MSG_NOSIGNAL)) == -1 &&
	    errno == EINTR)
		;
	return (n);
}

void
conn_close(struct conn *c)
{
	if (c == NULL)
		return;
	tls_close(c->tls);
	if (c->fd != -1)
		close(c->fd);
	if (c->ai != NULL)
		freeaddrinfo(c->ai);
	free(c->name);
	free(c->session);
	free(c);
}
