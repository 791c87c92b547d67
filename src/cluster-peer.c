/*
 * cluster-peer.c: members calling members (docs/cluster.md, "Members
 * calling members").  Every member mirrors the member records (m/), so
 * that it knows where each member is and which pin its key has: to check
 * the member it calls (the pin, inside the handshake) and the member that
 * calls it (the pin of the client certificate it showed).  A call is
 * libevent's HTTP client, the one etcd.c uses, over an OpenSSL
 * bufferevent (tls.c); it carries the owner it acts for, never a token.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cluster-int.h"

#define PEER_TIMEOUT_S	30	/* a call that is not a stream */
#define PEER_OWNER_MAX	256
#define PEER_RELAY_HIGH	(1024 * 1024)	/* unsent to a relay's client */

static struct mirror	*peer_m;

struct peer_call {
	struct evhttp_connection *evcon;
	struct evhttp_request	*req;		/* ours, to the member */
	struct evhttp_request	*client;	/* relayed to, or NULL */
	struct evbuffer		*body;		/* a call's reply */
	peer_cb			 cb;
	void			*arg;
	char			*member;
	int			 started;	/* the relayed reply began */
	int			 failed;	/* an evhttp error came */
	int			 busy;		/* a chunk is going out */
	int			 sent;		/* a chunk went out */
	int			 ending;	/* the end waits for it */
	int			 turn;		/* the end waits for a turn */
	int			 paused;	/* the member is not read */
	peer_sink		 sink;		/* a fetch's bytes go there */
	uint64_t		 size;		/* its Content-Length; 0 */
	uint64_t		 got;
	char			*sink_err;	/* why the sink refused */
};

/* A member record, parsed once: the mirror's cache of it. */
struct cluster_parsed {
	int			 ok;
	struct cluster_member	 m;
};

void
cluster_member_cache_free(void *arg)
{
	struct cluster_parsed	*p = arg;

	cluster_member_clear(&p->m);
	free(p);
}

/*
 * A mirrored member record, parsed on first use and kept as the entry's
 * cache (free it with cluster_member_cache_free); NULL if corrupt, said
 * once per key and revision.
 */
const struct cluster_member *
cluster_member_cached(struct mirror_entry *me)
{
	struct cluster_parsed	*p = me->cache;
	char			*cause = NULL;

	if (p == NULL) {
		me->cache = p = xcalloc(1, sizeof *p);
		if (cluster_member_parse(me->val, &p->m, &cause) != 0) {
			log_warnx("cluster: %s (revision %lld): %s; skipped",
			    me->key, (long long)me->mod_rev, cause);
			free(cause);
			return (NULL);
		}
		p->ok = 1;
	}
	return (p->ok ? &p->m : NULL);
}

void
cluster_peer_start(void)
{
	peer_m = mirror_create(cluster->etcd, cluster_key("m/"), NULL, NULL);
	mirror_cache_free(peer_m, cluster_member_cache_free);
}

void
cluster_peer_stop(void)
{
	mirror_free(peer_m);
	peer_m = NULL;
}

/* Each tick: the watch again if it ended. */
void
cluster_peer_tick(void)
{
	if (peer_m != NULL)
		mirror_restart(peer_m);
}

/*
 * Whose pin is this: the name of the live member of this cluster whose
 * record names it, or NULL.  A member that is not itself live now (its
 * lease lapsed, or never joined) takes no member for one: its mirror may
 * be stale, and it must not act for owners meanwhile.
 */
static const char *
cluster_peer_by_pin(const char *pin)
{
	const struct cluster_member	*m;
	struct mirror_entry		*me;
	size_t				 it = 0;

	if (cluster == NULL || peer_m == NULL || !cluster->registered ||
	    cluster->lease == 0 || !mirror_ready(peer_m))
		return (NULL);
	while (mirror_next(peer_m, &it, &me)) {
		if ((m = cluster_member_cached(me)) != NULL && m->pin != NULL &&
		    digest_valid(m->pin) && digest_equal(m->pin, pin))
			return (m->name);
	}
	return (NULL);
}

/* The live member whose certificate a server connection showed, or NULL. */
const char *
cluster_peer_conn(struct bufferevent *bev)
{
	char	 pin[DIGEST_HEX];

	if (tls_bev_client_pin(bev, pin) != 0)
		return (NULL);
	return (cluster_peer_by_pin(pin));
}

/*
 * Is owner a name a peer may say it acts for: 1-255 printable ASCII
 * characters (a header's value; an owner is a token's or a user's name).
 */
int
cluster_peer_owner_ok(const char *owner)
{
	size_t	 i, n = strlen(owner);

	if (n == 0 || n >= PEER_OWNER_MAX)
		return (0);
	for (i = 0; i < n; i++) {
		if (owner[i] <= ' ' || owner[i] > '~')
			return (0);
	}
	return (1);
}

/*
 * Splits a member's ADDR ([HOST]:PORT, HOST:PORT, :PORT) into host (the
 * member's name when empty) and port; -1 if it is not one.
 */
int
cluster_peer_split(const char *addr, const char *name, char **host,
    u_int *port)
{
	const char	*colon = strrchr(addr, ':');
	char		*end;
	unsigned long	 n;

	if (colon == NULL || colon[1] < '0' || colon[1] > '9')
		return (-1);
	n = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || n == 0 || n > 65535)
		return (-1);
	if (colon == addr)
		*host = xstrdup(name);
	else if (*addr == '[' && colon[-1] == ']' && colon - addr > 2)
		*host = xstrndup(addr + 1, (size_t)(colon - addr - 2));
	else if (*addr != '[' && memchr(addr, ':', (size_t)(colon - addr)) ==
	    NULL)
		*host = xstrndup(addr, (size_t)(colon - addr));
	else
		return (-1);
	*port = (u_int)n;
	return (0);
}

static void
peer_free(struct peer_call *pc)
{
	if (pc->client != NULL)
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    pc->client), NULL, NULL);
	if (pc->evcon != NULL)
		evhttp_connection_free(pc->evcon);
	if (pc->body != NULL)
		evbuffer_free(pc->body);
	free(pc->sink_err);
	free(pc->member);
	free(pc);
}

static void
peer_free_cb(evutil_socket_t fd, short events, void *arg)
{
	peer_free(arg);
}

/* Why the call failed, as the caller says it (the caller frees it). */
static char *
peer_why(struct peer_call *pc)
{
	char	*why;

	why = tls_peer_pin_error(evhttp_connection_get_bufferevent(pc->evcon));
	if (why == NULL)
		xasprintf(&why, "member %s did not answer", pc->member);
	return (why);
}

/* Frees the call on the loop's next turn (after evhttp is done with it). */
static void
peer_later(struct peer_call *pc)
{
	struct timeval	 tv = { 0, 0 };

	event_base_once(cluster->base, -1, EV_TIMEOUT, peer_free_cb, pc, &tv);
}

/* The relayed reply ends; the reply's end may free the client's request. */
static void
peer_relay_end(struct peer_call *pc)
{
	evhttp_connection_set_closecb(evhttp_request_get_connection(
	    pc->client), NULL, NULL);
	evhttp_send_reply_end(pc->client);
	pc->client = NULL;
	peer_later(pc);
}

static void
peer_relay_end_cb(evutil_socket_t fd, short events, void *arg)
{
	struct peer_call	*pc = arg;

	pc->turn = 0;
	if (pc->client == NULL)		/* it went meanwhile */
		peer_free(pc);
	else
		peer_relay_end(pc);
}

/*
 * What was sent has gone out to the client.  The end waits for it:
 * libevent 2.1 loses what an end follows while a chunk is being written
 * (follow.c).  A member no longer read (peer_chunk) is read again.
 */
static void
peer_written(struct evhttp_connection *c, void *arg)
{
	struct peer_call	*pc = arg;

	pc->busy = 0;
	if (pc->paused && pc->req != NULL)
		bufferevent_enable(evhttp_connection_get_bufferevent(
		    pc->evcon), EV_READ);
	pc->paused = 0;
	if (pc->ending)
		peer_relay_end(pc);
}

/* The call is over: its answer, then it goes. */
static void
peer_done(struct evhttp_request *req, void *arg)
{
	struct peer_call	*pc = arg;
	struct timeval		 tv = { 0, 0 };
	char			*why = NULL;
	int			 code;

	code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	log_debug("%s: %s: %d%s", __func__, pc->member, code, pc->failed ?
	    " (failed)" : "");
	if (code == 0 || (pc->failed && !pc->started))
		why = peer_why(pc);
	pc->req = NULL;
	if (pc->client != NULL && pc->started) {
		pc->ending = 1;		/* when what was sent has gone out */
		if (!pc->busy && !pc->sent) {	/* the head alone: a turn */
			pc->turn = 1;
			event_base_once(cluster->base, -1, EV_TIMEOUT,
			    peer_relay_end_cb, pc, &tv);
		}
		else if (!pc->busy)
			peer_relay_end(pc);
		free(why);
		return;
	}
	if (pc->client != NULL) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    pc->client), NULL, NULL);
		api_error(pc->client, 502, "%s", why);
		pc->client = NULL;
	} else
		pc->cb(why != NULL ? 0 : code, pc->body, why, pc->arg);
	free(why);
	peer_later(pc);
}

static void
peer_error(enum evhttp_request_error e, void *arg)
{
	struct peer_call	*pc = arg;

	pc->failed = 1;
}

/* A fetch's sink refused: its answer is the sink's reason, then it goes. */
static void
peer_sink_end_cb(evutil_socket_t fd, short events, void *arg)
{
	struct peer_call	*pc = arg;

	pc->cb(0, pc->body, pc->sink_err, pc->arg);
	peer_free(pc);
}

/*
 * A fetch's part (cluster_peer_fetch) to its sink; one it refuses ends the
 * call at once (the rest is not read), its answer on the loop's next turn.
 */
static void
peer_sink_part(struct peer_call *pc, struct evbuffer *in)
{
	struct timeval	 tv = { 0, 0 };
	size_t		 len = evbuffer_get_length(in);

	if (pc->sink_err != NULL || len == 0)
		return;
	if (pc->sink(pc->arg, pc->size, pc->got, evbuffer_pullup(in, -1),
	    len, &pc->sink_err) == 0) {
		pc->got += len;
		return;
	}
	if (pc->sink_err == NULL)
		pc->sink_err = xstrdup("refused");
	evhttp_cancel_request(pc->req);	/* peer_done is not called */
	pc->req = NULL;
	event_base_once(cluster->base, -1, EV_TIMEOUT, peer_sink_end_cb, pc,
	    &tv);
}

/*
 * A call's reply, kept whole (a buffered call), given part by part to a
 * fetch's sink, or passed on to the relay's client.  A client that reads
 * less than the member sends holds the member back, not this daemon's
 * memory: past PEER_RELAY_HIGH unsent, the member's connection is not
 * read until what waits has gone out.
 */
static void
peer_chunk(struct evhttp_request *req, void *arg)
{
	struct peer_call	*pc = arg;
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct bufferevent	*out;

	if (pc->client == NULL && pc->sink != NULL && pc->size > 0 &&
	    evhttp_request_get_response_code(req) == 200) {
		peer_sink_part(pc, in);
		return;
	}
	if (pc->client == NULL) {
		evbuffer_add_buffer(pc->body, in);
		return;
	}
	if (pc->started && evbuffer_get_length(in) > 0) {
		pc->busy = pc->sent = 1;
		evhttp_send_reply_chunk_with_cb(pc->client, in, peer_written,
		    pc);
		out = evhttp_connection_get_bufferevent(
		    evhttp_request_get_connection(pc->client));
		if (evbuffer_get_length(bufferevent_get_output(out)) >
		    PEER_RELAY_HIGH) {
			bufferevent_disable(evhttp_connection_get_bufferevent(
			    pc->evcon), EV_READ);
			pc->paused = 1;
		}
	}
	evbuffer_drain(in, evbuffer_get_length(in));
}

/* The member's head came: the relayed reply begins with its status. */
static int
peer_head(struct evhttp_request *req, void *arg)
{
	struct peer_call	*pc = arg;
	const char		*ct, *cl;
	int			 code = evhttp_request_get_response_code(req);

	if (pc->sink != NULL && code == 200 && (cl = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Content-Length")) != NULL)
		pc->size = strtoull(cl, NULL, 10);
	if (pc->client == NULL || code == 0)
		return (0);
	ct = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Content-Type");
	if (ct != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(
		    pc->client), "Content-Type", ct);
	evhttp_send_reply_start(pc->client, code,
	    evhttp_request_get_response_code_line(req));
	pc->started = 1;
	return (0);
}

/* The client that a relay answers went: so does the call. */
static void
peer_client_gone(struct evhttp_connection *c, void *arg)
{
	struct peer_call	*pc = arg;

	log_debug("%s: relay from %s ends", __func__, pc->member);
	if (pc->req != NULL)
		evhttp_cancel_request(pc->req);
	pc->req = NULL;
	pc->client = NULL;
	if (!pc->turn)		/* else the end's turn frees it */
		peer_free(pc);
}

/* The request's headers: who it is for (the owner), never a token. */
static void
peer_headers(struct evhttp_request *req, const char *host,
    const struct api_who *who)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, PEER_OWNER_HEADER, who->owner);
	if (who->admin)
		evhttp_add_header(h, PEER_ADMIN_HEADER, "1");
}

/*
 * A TLS bufferevent for member (evhttp, or the caller, connects it to
 * *host and *port): it shows this member's certificate and checks,
 * inside the handshake, the pin of member's live record.  NULL with
 * *cause.
 */
struct bufferevent *
cluster_peer_bev(const char *member, char **host, u_int *port, char **cause)
{
	const struct tls_identity	*id = server_tls_identity();
	const struct cluster_member	*m = NULL;
	struct mirror_entry		*me;
	struct bufferevent		*bev;

	if (peer_m != NULL && (me = mirror_get(peer_m, cluster_key("m/%s",
	    member))) != NULL && me->val != NULL)
		m = cluster_member_cached(me);
	if (m == NULL) {
		xasprintf(cause, "member %s is not live", member);
		return (NULL);
	}
	if (m->addr == NULL || m->pin == NULL) {
		xasprintf(cause, "member %s serves no TLS (ADDR), so no member "
		    "can call it", member);
		return (NULL);
	}
	if (id == NULL) {
		xasprintf(cause, "this member serves no TLS (ADDR), so it "
		    "cannot call member %s", member);
		return (NULL);
	}
	if (cluster_peer_split(m->addr, m->name, host, port) != 0) {
		xasprintf(cause, "member %s: cannot call it at '%s'", member,
		    m->addr);
		return (NULL);
	}
	if ((bev = tls_peer_bev(cluster->base, id, m->pin, m->addr,
	    cause)) == NULL) {
		free(*host);
		*host = NULL;
	}
	return (bev);
}

/* Starts a call of member's uri for who; NULL with *cause. */
static struct peer_call *
peer_open(const char *member, enum evhttp_cmd_type method, const char *uri,
    const struct api_who *who, int stream, char **cause)
{
	struct bufferevent		*bev;
	struct peer_call		*pc;
	char				*host;
	u_int				 port;

	if (!cluster_peer_owner_ok(who->owner)) {
		xasprintf(cause, "member %s: cannot call it for '%s'", member,
		    who->owner);
		return (NULL);
	}
	if ((bev = cluster_peer_bev(member, &host, &port, cause)) == NULL)
		return (NULL);
	pc = xcalloc(1, sizeof *pc);
	pc->member = xstrdup(member);
	pc->body = evbuffer_new();
	pc->evcon = evhttp_connection_base_bufferevent_new(cluster->base,
	    NULL, bev, host, (ev_uint16_t)port);
	if (pc->evcon == NULL)
		fatalx("evhttp_connection_base_bufferevent_new");
	if (!stream)
		evhttp_connection_set_timeout(pc->evcon, PEER_TIMEOUT_S);
	pc->req = evhttp_request_new(peer_done, pc);
	evhttp_request_set_error_cb(pc->req, peer_error);
	evhttp_request_set_chunked_cb(pc->req, peer_chunk);
	evhttp_request_set_header_cb(pc->req, peer_head);
	peer_headers(pc->req, host, who);
	free(host);
	if (evhttp_make_request(pc->evcon, pc->req, method, uri) != 0)
		fatalx("evhttp_make_request");
	log_debug("%s: %s %s for %s", __func__, member, uri, who->owner);
	return (pc);
}

/*
 * Calls member's uri (a GET) for who; cb gets the status and the whole
 * reply, or status 0 and why it failed.
 */
int
cluster_peer_call(const char *member, const char *uri,
    const struct api_who *who, peer_cb cb, void *arg, char **cause)
{
	struct peer_call	*pc;

	if ((pc = peer_open(member, EVHTTP_REQ_GET, uri, who, 0,
	    cause)) == NULL)
		return (-1);
	pc->cb = cb;
	pc->arg = arg;
	return (0);
}

/*
 * As cluster_peer_call, for a reply too large to hold: a 200's body with a
 * Content-Length goes to sink as it comes, part by part (its size, the
 * offset of the part, the part), and cb gets the status and what was not
 * given to sink (an error's body; a body without a length, or empty).  A
 * part sink refuses (-1 with its *cause) ends the call: cb gets status 0
 * and that cause.
 */
int
cluster_peer_fetch(const char *member, const char *uri,
    const struct api_who *who, peer_sink sink, peer_cb cb, void *arg,
    char **cause)
{
	struct peer_call	*pc;

	if ((pc = peer_open(member, EVHTTP_REQ_GET, uri, who, 0,
	    cause)) == NULL)
		return (-1);
	pc->sink = sink;
	pc->cb = cb;
	pc->arg = arg;
	return (0);
}

/*
 * Answers client with member's reply to a GET of uri for who, streamed as
 * it comes (a log that follows its job lasts as long as the job's output
 * does, or until client goes); 502 if the member does not answer.
 */
void
cluster_peer_relay(const char *member, const char *uri,
    const struct api_who *who, struct evhttp_request *client)
{
	struct peer_call	*pc;
	char			*cause = NULL;

	if ((pc = peer_open(member, EVHTTP_REQ_GET, uri, who, 1,
	    &cause)) == NULL) {
		api_error(client, 502, "%s", cause);
		free(cause);
		return;
	}
	pc->client = client;
	evhttp_connection_set_closecb(evhttp_request_get_connection(client),
	    peer_client_gone, pc);
}

/*
 * The live members' names (the caller frees the vector, not the names,
 * which last until the mirror next changes: use them at once).
 */
static const char **
peer_names(u_int *n)
{
	const struct cluster_member	*m;
	struct mirror_entry		*me;
	const char			**v;
	size_t				 it = 0;

	*n = 0;
	if (peer_m == NULL)
		return (xcalloc(1, sizeof *v));
	v = xcalloc(mirror_count(peer_m) + 1, sizeof *v);
	while (mirror_next(peer_m, &it, &me)) {
		if ((m = cluster_member_cached(me)) != NULL)
			v[(*n)++] = m->name;
	}
	return (v);
}

/* One question put to every live member (cluster_peer_each). */
struct peer_each {
	peer_take_cb	 take;
	void		(*done)(void *);
	void		*arg;
	u_int		 waiting;	/* calls, and the asking loop */
};

struct peer_each_call {
	struct peer_each *e;
	char		*name;
};

static void
peer_each_end(struct peer_each *e)
{
	if (--e->waiting == 0) {
		e->done(e->arg);
		free(e);
	}
}

static void
peer_each_answer(int code, struct evbuffer *body, const char *err, void *arg)
{
	struct peer_each_call	*c = arg;
	struct peer_each	*e = c->e;

	e->take(c->name, code, body, err, e->arg);
	free(c->name);
	free(c);
	peer_each_end(e);
}

/*
 * Asks uri of every live member but skip (if not NULL), as who: take has
 * each one's answer (or err: why there is none), then done, once all are
 * in (at once if there is no member to ask).
 */
void
cluster_peer_each(const char *uri, const struct api_who *who,
    const char *skip, peer_take_cb take, void (*done)(void *), void *arg)
{
	struct peer_each	*e;
	struct peer_each_call	*c;
	const char		**names;
	char			*cause = NULL;
	u_int			 i, n;

	e = xcalloc(1, sizeof *e);
	e->take = take;
	e->done = done;
	e->arg = arg;
	e->waiting = 1;
	names = peer_names(&n);
	for (i = 0; i < n; i++) {
		if (skip != NULL && strcmp(names[i], skip) == 0)
			continue;
		e->waiting++;
		c = xcalloc(1, sizeof *c);
		c->e = e;
		c->name = xstrdup(names[i]);
		if (cluster_peer_call(names[i], uri, who, peer_each_answer, c,
		    &cause) != 0) {
			peer_each_answer(0, NULL, cause, c);
			free(cause);
			cause = NULL;
		}
	}
	free(names);
	peer_each_end(e);
}

/* This member's name, or NULL on a host that is not a cluster's member. */
const char *
cluster_peer_self(void)
{
	return (cluster != NULL ? cluster->name : NULL);
}
