/*
 * server-guard.c: what a TCP connection may cost the host before it has
 * shown a token.  evhttp (libevent 2.1) reads a request's whole body
 * before any route runs, and has no hook between the headers and the
 * body; so the guard watches each connection's bytes as TLS hands them
 * over (a callback on the connection's input buffer, which runs before
 * evhttp reads them), finds the first request's head, and checks the
 * token there.  Until a connection has shown a valid token:
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
 * stream that follows a job sets its own timeouts (follow.c).  At most
 * TCP_CONNECTIONS_MAX (256) connections are open at once; one more is cut
 * as soon as it is accepted.
 */

#include <sys/socket.h>

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
};

static u_int	guard_open;		/* connections now */
static u_int	guard_max;
static u_int	guard_secs;

/* Cuts g's connection: libevent sees it closed and frees it. */
static void
guard_cut(struct guard *g, const char *why)
{
	int	 fd = bufferevent_getfd(g->bev);

	log_debug("%s: fd %d: %s", __func__, fd, why);
	g->state = GUARD_CUT;
	evtimer_del(g->timer);
	http_head_clear(&g->head);
	if (fd != -1)
		shutdown(fd, SHUT_RDWR);
}

static void
guard_timer(evutil_socket_t fd, short events, void *arg)
{
	struct guard	*g = arg;

	if (g->state == GUARD_CUT)		/* accepted past the cap */
		guard_cut(g, "too many connections (TCP_CONNECTIONS_MAX)");
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

	guard_open--;
	event_free(g->timer);
	http_head_clear(&g->head);
	free(g);
}

/* Reads the limits; once, before the listener serves. */
void
server_guard_init(void)
{
	guard_max = config_uint("TCP_CONNECTIONS_MAX", 256, 1, 65536);
	guard_secs = config_uint("AUTH_TIMEOUT", 10, 1, 3600);
	tls_server_data_free(guard_free);
}

/*
 * The evhttp_set_bevcb() callback of the TCP listener: every accepted
 * connection gets its TLS bufferevent (ctx: tls_server_create's) and a
 * guard.  One past the cap is cut at once.
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
	guard_open++;
	if (evbuffer_add_cb(bufferevent_get_input(g->bev), guard_input, g) ==
	    NULL)
		fatalx("%s: evbuffer_add_cb", __func__);
	if (guard_open > guard_max)
		g->state = GUARD_CUT;	/* cut once evhttp gave it its fd */
	else
		tv.tv_sec = guard_secs;
	evtimer_add(g->timer, &tv);
	return (g->bev);
}
