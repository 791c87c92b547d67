/*
 * fence-out.c: the supervisor's own sockets, made like the job's, which
 * are what reaches the network.  Only a chosen few of the job's socket
 * options cross over (timeouts, keep-alive, Nagle, linger, v6-only):
 * nothing the job set that changes where packets go (IP_OPTIONS source
 * routes, routing headers, a deferred Fast Open connect) ever does, which
 * is why the fence makes a socket rather than connect the job's own.
 * Every system call counts here (each is a microsecond or more in a VM),
 * so options are read once and written only when not at their default.
 */

#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#define OUT_INET	1	/* INET and INET6 streams only */
#define OUT_UNIX	2	/* AF_UNIX only */
#define OUT_INET6	3	/* INET6 only */
#define OUT_KEEPALIVE	4	/* streams with SO_KEEPALIVE on only */

static const struct {
	int	 when;		/* 0: any socket */
	int	 level;
	int	 name;
} copied[] = {
	{ 0, SOL_SOCKET, SO_RCVTIMEO },
	{ 0, SOL_SOCKET, SO_SNDTIMEO },		/* [1]: the connect's limit */
	{ 0, SOL_SOCKET, SO_LINGER },
	{ OUT_INET, SOL_SOCKET, SO_KEEPALIVE },	/* [3] */
	{ OUT_INET, IPPROTO_TCP, TCP_NODELAY },
	{ OUT_INET, IPPROTO_TCP, TCP_USER_TIMEOUT },
	{ OUT_UNIX, SOL_SOCKET, SO_PASSCRED },
	{ OUT_INET6, IPPROTO_IPV6, IPV6_V6ONLY },
	{ OUT_KEEPALIVE, IPPROTO_TCP, TCP_KEEPIDLE },
	{ OUT_KEEPALIVE, IPPROTO_TCP, TCP_KEEPINTVL },
	{ OUT_KEEPALIVE, IPPROTO_TCP, TCP_KEEPCNT },
};
#define OUT_SNDTIMEO	1
#define OUT_SOKEEPALIVE	3

/* A fresh socket's values of those options, per domain and type. */
static struct defaults {
	int		 domain;
	int		 type;
	u_char		 v[nitems(copied)][32];
	socklen_t	 len[nitems(copied)];
} defaults[8];

static int
applies(u_int i, int domain, int type, int keepalive)
{
	int	 stream = type == SOCK_STREAM && domain != AF_UNIX;

	switch (copied[i].when) {
	case OUT_INET:
		return (stream);
	case OUT_UNIX:
		return (domain == AF_UNIX);
	case OUT_INET6:
		return (domain == AF_INET6);
	case OUT_KEEPALIVE:
		return (stream && keepalive);
	}
	return (1);
}

/* The defaults for a socket like fresh (which is one, just made). */
static struct defaults *
defaults_of(int fresh, int domain, int type)
{
	struct defaults	*d;
	u_int		 i;

	for (d = defaults; d < defaults + nitems(defaults); d++) {
		if (d->domain == domain && d->type == type)
			return (d);
		if (d->domain != 0)
			continue;
		for (i = 0; i < nitems(copied); i++) {
			d->len[i] = sizeof d->v[i];
			if (!applies(i, domain, type, 1) ||
			    getsockopt(fresh, copied[i].level, copied[i].name,
			    d->v[i], &d->len[i]) != 0)
				d->len[i] = 0;
		}
		d->domain = domain;
		d->type = type;
		return (d);
	}
	return (NULL);
}

/* Copies the job's options that are not at their default; *ms: SNDTIMEO. */
static void
copy_options(int from, int to, int domain, int type, int64_t *ms)
{
	struct defaults	*d = defaults_of(to, domain, type);
	struct timeval	*tv;
	u_char		 v[32];
	socklen_t	 len;
	u_int		 i;
	int		 keepalive = 0;

	for (i = 0; i < nitems(copied); i++) {
		if (!applies(i, domain, type, keepalive))
			continue;
		len = sizeof v;
		if (getsockopt(from, copied[i].level, copied[i].name, v,
		    &len) != 0)
			continue;
		if (i == OUT_SOKEEPALIVE)
			keepalive = *(int *)v != 0;
		if (i == OUT_SNDTIMEO && len == sizeof *tv) {
			tv = (struct timeval *)v;
			*ms = tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
		}
		if (d != NULL && len == d->len[i] &&
		    memcmp(v, d->v[i], len) == 0)
			continue;
		setsockopt(to, copied[i].level, copied[i].name, v, len);
	}
}

/*
 * Returns a new socket like the job's (non-blocking, close-on-exec, its
 * options copied), or -1.  *sndtimeo_ms is the job's SO_SNDTIMEO, which
 * bounds a blocking connect (0: none).
 */
int
fence_out_open(const struct fence_call *c, int64_t *sndtimeo_ms)
{
	int	 sock;

	*sndtimeo_ms = 0;
	sock = socket(c->domain, c->type|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (sock != -1)
		copy_options(c->sock, sock, c->domain, c->type, sndtimeo_ms);
	return (sock);
}

/*
 * Where a connect started on sock stands: 0 connected, EINPROGRESS still
 * going, or the error it failed with.  One call for TCP (its state).
 */
int
fence_out_state(int sock, int domain, int type)
{
	struct tcp_info	 ti;
	socklen_t	 len = sizeof ti;
	int		 err = 0;

	if (domain != AF_UNIX && type == SOCK_STREAM &&
	    getsockopt(sock, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
		if (ti.tcpi_state == TCP_ESTABLISHED)
			return (0);
		if (ti.tcpi_state == TCP_SYN_SENT)
			return (EINPROGRESS);
	}
	len = sizeof err;
	if (getsockopt(sock, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return (errno);
	return (err);
}

/* What connect() says on a TCP socket that is not fresh, or 0. */
int
fence_out_busy(const struct fence_call *c)
{
	if (c->tcp_state == -1 || c->tcp_state == TCP_CLOSE)
		return (0);
	return (c->tcp_state == TCP_SYN_SENT ? EALREADY : EISCONN);
}

/* The address as the policy sees it: IPv4-mapped IPv6 is IPv4.  */
int
fence_out_target(const struct fence_call *c, int *family, u_char *addr,
    uint16_t *port)
{
	const struct sockaddr_in	*sin = (const void *)c->addr;
	const struct sockaddr_in6	*sin6 = (const void *)c->addr;
	static const u_char		 mapped[12] = { [10] = 0xff, 0xff };

	memset(addr, 0, 16);
	if (sin->sin_family == AF_INET && c->alen >= sizeof *sin) {
		*family = AF_INET;
		memcpy(addr, &sin->sin_addr, 4);
		*port = ntohs(sin->sin_port);
		return (0);
	}
	if (sin6->sin6_family != AF_INET6 || c->alen < 24)
		return (-1);
	*port = ntohs(sin6->sin6_port);
	if (memcmp(&sin6->sin6_addr, mapped, sizeof mapped) == 0) {
		*family = AF_INET;
		memcpy(addr, (const u_char *)&sin6->sin6_addr + 12, 4);
	} else {
		*family = AF_INET6;
		memcpy(addr, &sin6->sin6_addr, 16);
	}
	return (0);
}
