/*
 * server-guard.c: what a TCP connection may cost the host before it has
 * shown a token.  evhttp (libevent 2.1) reads a request's whole body
 * before any route runs, and has no hook between the headers and the
 * body; so the guard watches each connection's bytes as TLS hands them
 * over (a callback on the connection's input buffer, which runs before
 * evhttp reads them), finds the first request's head, and checks the
 * token there (or a member's certificate, for a member's call).  Until a
 * connection has shown a valid token:
 *
 *  - it has AUTH_TIMEOUT seconds (10) from its accept to finish the TLS
 *    handshake and send a head with a valid token;
 *  - the body after that head may hold at most 64 KiB (what a 401 needs);
 *  - the head itself may not pass 64 KiB.
 *
 * A connection past a limit is cut without a reply: its socket is shut
 * down, and libevent frees it as any connection the peer closed.  A
 * connection whose token is good is left alone: each of its requests is
 * checked again by server_tls_dispatch (which counts failures), and a
 * stream that follows a job sets its own timeouts (follow.c).
 *
 * Slots: at most TCP_CONNECTIONS_MAX (256) connections are open at once,
 * and one source (an IPv4 address, an IPv6 /64) may hold at most
 * TCP_ANON_PER_SOURCE (8) of them that have not shown a good token.  When
 * either bound is passed, a connection without a token goes (of that
 * source, or of all), never one with a token: one already closed by its
 * peer, else the oldest once it has had TCP_ANON_GRACE_MS (200) to show
 * a token, else the newcomer.  A peer that opens hundreds of idle
 * connections holds a handful of slots, a peer that opens and closes them
 * faster than a handshake cannot push out a client still in its own, and
 * a client with a token, whose handshake takes milliseconds, still gets
 * in.  Only when every slot holds a token is a new connection cut at once.
 */

#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gmux.h"

#define GUARD_HEAD_MAX		(64 * 1024)
#define GUARD_BODY_MAX		(64 * 1024)
#define GUARD_CHUNK		4096
#define GUARD_SCAN		64	/* looked at for one already closed */

enum guard_state {
	GUARD_HEAD,		/* the first head is on its way */
	GUARD_ANON,		/* it came without a valid token */
	GUARD_TRUSTED,		/* it came with one: no more limits */
	GUARD_CUT,
};

struct guard {
	struct bufferevent	*bev;
	struct event		*timer;
	struct http_head	 head;
	size_t			 body;	/* bytes after the head, anonymous */
	enum guard_state	 state;
	int			 admitted;	/* its fd known: checked */
	int64_t			 since;		/* admitted then */
	int			 listed;	/* in guard_anon */
	char			 source[64];	/* ratelimit_key()'s */
	TAILQ_ENTRY(guard)	 entry;
};

static TAILQ_HEAD(, guard) guard_anon =	/* no token yet, oldest first */
    TAILQ_HEAD_INITIALIZER(guard_anon);
static u_int	guard_live;		/* connections now, less those cut */
static u_int	guard_waiting;		/* of which not admitted yet */
static u_int	guard_max;
static u_int	guard_per_source;
static u_int	guard_secs;
static u_int	guard_grace_ms;		/* to show a token before it may go */

/* Takes g off the list of connections without a token. */
static void
guard_unlist(struct guard *g)
{
	if (g->listed) {
		TAILQ_REMOVE(&guard_anon, g, entry);
		g->listed = 0;
	}
}

/* Cuts g's connection: libevent sees it closed and frees it. */
static void
guard_cut(struct guard *g, const char *why)
{
	int	 fd = bufferevent_getfd(g->bev);

	log_debug("%s: fd %d (%s): %s", __func__, fd, g->source, why);
	if (g->state == GUARD_CUT)
		return;
	guard_unlist(g);
	guard_live--;
	g->state = GUARD_CUT;
	evtimer_del(g->timer);
	http_head_clear(&g->head);
	if (fd != -1)
		shutdown(fd, SHUT_RDWR);
}

/* Where g comes from, as the failure counts key it ("" if unknown). */
static void
guard_source(struct guard *g)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof ss;
	char			 a[INET6_ADDRSTRLEN] = "";
	const void		*in = NULL;
	int			 fd = bufferevent_getfd(g->bev);

	if (fd != -1 &&
	    getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET)
			in = &((struct sockaddr_in *)&ss)->sin_addr;
		else if (ss.ss_family == AF_INET6)
			in = &((struct sockaddr_in6 *)&ss)->sin6_addr;
	}
	if (in != NULL)
		inet_ntop(ss.ss_family, in, a, sizeof a);
	ratelimit_key(a, g->source, sizeof g->source);
}

/* How many connections without a token source has (NULL: all). */
static u_int
guard_count(const char *source)
{
	struct guard	*g;
	u_int		 n = 0;

	TAILQ_FOREACH(g, &guard_anon, entry) {
		if (source == NULL || strcmp(g->source, source) == 0)
			n++;
	}
	return (n);
}

/*
 * Of the GUARD_SCAN oldest connections without a token of source (NULL:
 * of any), one whose peer has closed or reset it already, or NULL.  A
 * peer that opens and closes connections faster than the loop reads
 * their ends leaves dead ones counted as live; cutting one costs no one
 * anything.  One poll(), not a read: their bytes stay for TLS.  Sets
 * *oldest to the oldest (NULL if none).
 */
static struct guard *
guard_dead(const char *source, struct guard **oldest)
{
	struct pollfd	 pfd[GUARD_SCAN];
	struct guard	*g, *seen[GUARD_SCAN];
	u_int		 n = 0, i;

	TAILQ_FOREACH(g, &guard_anon, entry) {
		if (source != NULL && strcmp(g->source, source) != 0)
			continue;
		seen[n] = g;
		pfd[n].fd = bufferevent_getfd(g->bev);
		pfd[n].events = POLLRDHUP;
		pfd[n].revents = 0;
		if (++n == GUARD_SCAN)
			break;
	}
	*oldest = n == 0 ? NULL : seen[0];
	if (n == 0 || poll(pfd, n, 0) <= 0)
		return (NULL);
	for (i = 0; i < n; i++) {
		if (pfd[i].revents & (POLLRDHUP|POLLHUP|POLLERR))
			return (seen[i]);
	}
	return (NULL);
}

/*
 * Which connection without a token goes to make room for g, for its
 * source's bound or (global) for all of them: a dead one; else the
 * oldest, once it has had TCP_ANON_GRACE_MS to show a token (a peer holding
 * idle connections loses them to new ones); else g, the newest, yields.
 * A churning peer's connections come by the hundred between two turns of
 * the loop: cutting the oldest then would cut a good client still in its
 * handshake.  Under the global bound a g alone from its source yields
 * to no one while others wait to be admitted (they make room as they
 * are); only when every other slot holds a token is g cut at once.
 */
static struct guard *
guard_victim(struct guard *g, int global, u_int n)
{
	struct guard	*gone, *oldest;

	gone = guard_dead(global ? NULL : g->source, &oldest);
	if (gone != NULL)
		return (gone);
	if (oldest == g)
		oldest = global ? TAILQ_NEXT(g, entry) : NULL;
	if (oldest != NULL && (!g->listed ||
	    clock_mono_ms() - oldest->since >= guard_grace_ms))
		return (oldest);
	if (!g->listed)
		return (guard_waiting == 0 ? g : NULL);
	if (global && n == 1 && guard_waiting > 0)
		return (NULL);
	return (g);
}

/*
 * A new connection, now that evhttp gave it its fd: makes room for it
 * (module comment), then gives it AUTH_TIMEOUT to show a token.
 */
static void
guard_admit(struct guard *g)
{
	struct guard	*old;
	struct timeval	 tv = { guard_secs, 0 };
	u_int		 n;

	g->admitted = 1;
	g->since = clock_mono_ms();
	guard_waiting--;
	guard_source(g);
	if (g->state != GUARD_TRUSTED) {
		TAILQ_INSERT_TAIL(&guard_anon, g, entry);
		g->listed = 1;
	}
	n = guard_count(g->source);
	if (n > guard_per_source) {
		guard_cut(guard_victim(g, 0, n), "without a token, its "
		    "source over TCP_ANON_PER_SOURCE");
		n--;
	}
	if (guard_live > guard_max && g->state != GUARD_CUT &&
	    (old = guard_victim(g, 1, n)) != NULL)
		guard_cut(old, "without a token, for room "
		    "(TCP_CONNECTIONS_MAX)");
	if (g->state != GUARD_CUT && g->state != GUARD_TRUSTED)
		evtimer_add(g->timer, &tv);
}

static void
guard_timer(evutil_socket_t fd, short events, void *arg)
{
	struct guard	*g = arg;

	if (!g->admitted)
		guard_admit(g);
	else if (g->state != GUARD_TRUSTED)
		guard_cut(g, "no valid token in time (AUTH_TIMEOUT)");
}

/* Does the head carry a token that is good now? */
static int
guard_token_ok(const struct guard *g)
{
	struct tokens	*tk = server_tls_tokens(NULL);
	char		*v;
	int		 ok;

	if (ui_head_cookie_ok(&g->head))	/* the dashboard's cookie */
		return (1);
	/* A member's call shows its certificate instead (cluster-peer.c);
	 * server_tls_dispatch checks it again with the rest of the head. */
	if ((v = http_head_get(&g->head, PEER_OWNER_HEADER)) != NULL) {
		free(v);
		return (cluster_peer_conn(g->bev) != NULL);
	}
	if (tk == NULL || (v = http_head_get(&g->head, "Authorization")) ==
	    NULL)
		return (0);
	ok = strncmp(v, "Bearer ", 7) == 0 && tokens_check(tk, v + 7) != NULL;
	explicit_bzero(v, strlen(v));
	free(v);
	return (ok);
}

/* Feeds what was added to buf since orig to the head; -1, 0 or 1. */
static int
guard_feed(struct guard *g, struct evbuffer *buf, size_t added)
{
	struct evbuffer_ptr	 p;
	char			 chunk[GUARD_CHUNK];
	size_t			 len = evbuffer_get_length(buf), at, n, rest;
	int			 rc = 0;

	at = len > added ? len - added : 0;
	while (at < len && rc == 0) {
		n = len - at < sizeof chunk ? len - at : sizeof chunk;
		if (evbuffer_ptr_set(buf, &p, at, EVBUFFER_PTR_SET) != 0 ||
		    evbuffer_copyout_from(buf, &p, chunk, n) != (ev_ssize_t)n)
			return (-1);
		rc = http_head_feed(&g->head, chunk, n, GUARD_HEAD_MAX, &rest);
		at += n;
	}
	explicit_bzero(chunk, sizeof chunk);
	if (rc == 1)
		g->body = rest + (len - at);
	return (rc);
}

/* New bytes on a connection that has not shown a token yet. */
static void
guard_input(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct guard	*g = arg;
	int		 rc;

	if (info->n_added == 0 || g->state == GUARD_TRUSTED ||
	    g->state == GUARD_CUT)
		return;
	if (g->state == GUARD_ANON)
		g->body += info->n_added;
	else if ((rc = guard_feed(g, buf, info->n_added)) == -1) {
		guard_cut(g, "a request head over 64 KiB");
		return;
	} else if (rc == 0)
		return;
	else if (guard_token_ok(g)) {
		g->state = GUARD_TRUSTED;
		guard_unlist(g);
		if (g->admitted)
			evtimer_del(g->timer);
		http_head_clear(&g->head);
		return;
	} else {
		g->state = GUARD_ANON;	/* it gets its 401 */
		http_head_clear(&g->head);
	}
	if (g->body > GUARD_BODY_MAX)
		guard_cut(g, "a body over 64 KiB without a valid token");
}

/* Called by tls.c when the connection's SSL goes, with the connection. */
static void
guard_free(void *arg)
{
	struct guard	*g = arg;

	if (g->state != GUARD_CUT)
		guard_live--;
	if (!g->admitted)
		guard_waiting--;
	guard_unlist(g);
	event_free(g->timer);
	http_head_clear(&g->head);
	free(g);
}

/* Reads the limits; once, before the listener serves. */
void
server_guard_init(void)
{
	guard_max = config_uint("TCP_CONNECTIONS_MAX", 256, 1, 65536);
	guard_per_source = config_uint("TCP_ANON_PER_SOURCE", 8, 1, 65536);
	guard_secs = config_uint("AUTH_TIMEOUT", 10, 1, 3600);
	guard_grace_ms = config_uint("TCP_ANON_GRACE_MS", 200, 0, 3600000);
	tls_server_data_free(guard_free);
}

/*
 * The evhttp_set_bevcb() callback of the TCP listener: every accepted
 * connection gets its TLS bufferevent (ctx: tls_server_create's) and a
 * guard, which admits it on the loop's next turn (its fd is set later).
 */
struct bufferevent *
server_guard_bev(struct event_base *base, void *ctx)
{
	struct guard	*g;
	struct timeval	 tv = { 0, 0 };

	g = xcalloc(1, sizeof *g);
	g->timer = evtimer_new(base, guard_timer, g);
	if (g->timer == NULL)
		fatalx("%s: evtimer_new", __func__);
	g->bev = tls_server_bev(base, ctx, g);	/* now g goes with it */
	guard_live++;
	guard_waiting++;
	if (evbuffer_add_cb(bufferevent_get_input(g->bev), guard_input, g) ==
	    NULL)
		fatalx("%s: evbuffer_add_cb", __func__);
	evtimer_add(g->timer, &tv);
	return (g->bev);
}
