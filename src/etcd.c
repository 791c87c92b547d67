/*
 * etcd.c: etcd 3.4's JSON gateway under /v3/, the one place that knows its
 * wire format.  Requests go through libevent's evhttp client (already
 * linked for the server; no third HTTP client), asynchronously on the
 * daemon's loop: a call's callback gets the parsed reply or an error.
 * Keys and values are base64 on the wire and 64-bit numbers are strings.
 * Streams (watch, observe) and campaigns, which wait, have a connection
 * of their own; every other call takes, in turn, one of a few connections
 * per endpoint, and a transport failure moves the next call to the next
 * endpoint.
 */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "cluster-int.h"

static json_t		*etcd_b64(const char *, size_t);
static char		*etcd_prefix_end(const char *);

#define ETCD_TIMEOUT_S		5	/* a unary call */
#define ETCD_WAIT_TIMEOUT_S	3600	/* a campaign or a stream */
#define ETCD_MAX_ENDPOINTS	16
#define ETCD_CONNS		4	/* unary calls at once, per endpoint */

struct etcd_ep {
	char			*host;
	u_int			 port;
	/* unary calls, in turn; each made when first needed */
	struct evhttp_connection *conn[ETCD_CONNS];
};

struct etcd {
	struct event_base	*base;
	struct etcd_ep		*eps;
	u_int			 neps;
	u_int			 cur;
	u_int			 turn;		/* the next unary connection */
	uint64_t		 calls;
	int64_t			 skew_ms;	/* our clock - etcd's (Date:) */
	int			 skew_known;
	char			 name[300];
	/* calls waiting on a connection, freed with it by etcd_free */
	LIST_HEAD(, etcd_call)	 calls_live;
};

struct etcd_call {
	struct etcd		*e;
	etcd_cb			 cb;
	void			*arg;
	void			(*free_arg)(void *); /* if cb is never called */
	struct evhttp_request	*req;
	struct evhttp_connection *own;	/* a stream's or campaign's */
	u_int			 ep;
	int			 stream;
	int			 in_cb;
	int			 cancelled;
	int			 dying;		/* a free is scheduled */
	struct evbuffer		*partial;	/* a stream's unfinished line */
	int			 listed;	/* on its etcd's calls */
	LIST_ENTRY(etcd_call)	 entry;
};

/* Parses one "http://HOST:PORT" into ep; the path must be empty. */
static int
etcd_parse_url(const char *url, struct etcd_ep *ep, char **cause)
{
	const char	*h, *colon, *end;
	char		*p;
	long		 port;

	if (strncmp(url, "http://", 7) != 0) {
		xasprintf(cause, "ETCD: %s: only http:// URLs are supported",
		    url);
		return (-1);
	}
	h = url + 7;
	end = h + strcspn(h, "/");
	if (*end == '/' && end[1] != '\0') {
		xasprintf(cause, "ETCD: %s: a URL has no path", url);
		return (-1);
	}
	if (*h == '[') {
		if ((colon = strchr(h, ']')) == NULL || colon[1] != ':')
			goto bad;
		ep->host = xstrndup(h + 1, (size_t)(colon - h - 1));
		colon++;
	} else {
		if ((colon = memchr(h, ':', (size_t)(end - h))) == NULL)
			goto bad;
		ep->host = xstrndup(h, (size_t)(colon - h));
	}
	port = strtol(colon + 1, &p, 10);
	if (*ep->host == '\0' || p == colon + 1 || p != end || port < 1 ||
	    port > 65535) {
		free(ep->host);
		goto bad;
	}
	ep->port = (u_int)port;
	memset(ep->conn, 0, sizeof ep->conn);
	return (0);
bad:
	xasprintf(cause, "ETCD: %s: not http://HOST:PORT", url);
	return (-1);
}

/*
 * A client of the etcd cluster at urls (comma-separated http://HOST:PORT);
 * NULL with *cause if one is malformed.  The caller frees it with
 * etcd_free.
 */
struct etcd *
etcd_create(struct event_base *base, const char *urls, char **cause)
{
	struct etcd	*e;
	char		*copy, *s, *url;

	e = xcalloc(1, sizeof *e);
	e->base = base;
	LIST_INIT(&e->calls_live);
	copy = s = xstrdup(urls);
	while ((url = strsep(&s, ",")) != NULL) {
		url = strtrim(url);
		if (*url == '\0')
			continue;
		if (e->neps == ETCD_MAX_ENDPOINTS) {
			xasprintf(cause, "ETCD: more than %d URLs",
			    ETCD_MAX_ENDPOINTS);
			goto fail;
		}
		e->eps = xreallocarray(e->eps, e->neps + 1, sizeof *e->eps);
		if (etcd_parse_url(url, &e->eps[e->neps], cause) != 0)
			goto fail;
		e->neps++;
	}
	free(copy);
	if (e->neps == 0) {
		xasprintf(cause, "ETCD: no URL");
		etcd_free(e);
		return (NULL);
	}
	return (e);
fail:
	free(copy);
	etcd_free(e);
	return (NULL);
}

static void	etcd_call_free(struct etcd_call *);

/*
 * Frees the client.  Calls still waiting for a reply (a keepalive sent to
 * an etcd member that went silent, a muted call) are freed with it, their
 * callbacks never called (libevent frees a connection's requests without
 * telling them, and a callback could only send again): an argument that
 * was the callback's to free is freed here (etcd_call_owns).
 */
void
etcd_free(struct etcd *e)
{
	struct etcd_call	*c;
	u_int			 i, k;

	if (e == NULL)
		return;
	for (i = 0; i < e->neps; i++) {
		for (k = 0; k < ETCD_CONNS; k++) {
			if (e->eps[i].conn[k] != NULL)
				evhttp_connection_free(e->eps[i].conn[k]);
		}
		free(e->eps[i].host);
	}
	while ((c = LIST_FIRST(&e->calls_live)) != NULL) {
		if (c->own == NULL)
			c->req = NULL;	/* freed with its connection */
		if (c->free_arg != NULL && !c->cancelled)
			c->free_arg(c->arg);
		etcd_call_free(c);
	}
	free(e->eps);
	free(e);
}

/* The endpoint the next call goes to, as HOST:PORT. */
const char *
etcd_endpoint(const struct etcd *e)
{
	struct etcd	*w = (struct etcd *)e;

	snprintf(w->name, sizeof w->name, "%s:%u", e->eps[e->cur].host,
	    e->eps[e->cur].port);
	return (w->name);
}

static struct evhttp_connection *
etcd_connect(struct etcd *e, u_int ep, int timeout)
{
	struct evhttp_connection	*c;

	c = evhttp_connection_base_new(e->base, NULL, e->eps[ep].host,
	    (uint16_t)e->eps[ep].port);
	if (c == NULL)
		fatalx("evhttp_connection_base_new");
	evhttp_connection_set_timeout(c, timeout);
	evhttp_connection_set_retries(c, 0);
	evhttp_connection_set_max_body_size(c, ETCD_MAX_REPLY);
	return (c);
}

/* ------------------------------------------------------------------ */
/* Replies. */

static int
etcd_int(json_t *o, const char *name, int64_t *v, char **cause)
{
	json_t		*x = json_object_get(o, name);
	const char	*s;
	char		*end;
	long long	 n;

	*v = 0;
	if (x == NULL)
		return (0);	/* proto3 leaves zeroes out */
	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return (0);
	}
	if (!json_is_string(x))
		goto bad;
	s = json_string_value(x);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0)
		goto bad;
	*v = n;
	return (0);
bad:
	xasprintf(cause, "etcd reply: bad %s", name);
	return (-1);
}

/* Decodes the base64 string member name of o into *out (NUL-terminated). */
static int
etcd_bytes(json_t *o, const char *name, char **out, size_t *len,
    char **cause)
{
	json_t		*x = json_object_get(o, name);
	const char	*s;
	size_t		 n;
	ssize_t		 got;

	*out = NULL;
	if (x == NULL) {
		*out = xstrdup("");
		if (len != NULL)
			*len = 0;
		return (0);
	}
	if (!json_is_string(x))
		goto bad;
	s = json_string_value(x);
	n = json_string_length(x);
	*out = xmalloc(n / 4 * 3 + 1);
	if ((got = base64_decode(s, n, (u_char *)*out)) < 0)
		goto bad;
	if (len != NULL)
		*len = (size_t)got;
	else if (strlen(*out) != (size_t)got)
		goto bad;	/* a key with a NUL in it is none of ours */
	return (0);
bad:
	free(*out);
	*out = NULL;
	xasprintf(cause, "etcd reply: bad %s", name);
	return (-1);
}

static int
etcd_kv_parse(json_t *o, struct etcd_kv *kv, char **cause)
{
	memset(kv, 0, sizeof *kv);
	if (!json_is_object(o)) {
		xasprintf(cause, "etcd reply: a key is not an object");
		return (-1);
	}
	if (etcd_bytes(o, "key", &kv->key, NULL, cause) != 0)
		return (-1);
	if (etcd_bytes(o, "value", &kv->value, &kv->vlen, cause) != 0 ||
	    etcd_int(o, "create_revision", &kv->create_rev, cause) != 0 ||
	    etcd_int(o, "mod_revision", &kv->mod_rev, cause) != 0 ||
	    etcd_int(o, "version", &kv->version, cause) != 0 ||
	    etcd_int(o, "lease", &kv->lease, cause) != 0) {
		free(kv->key);
		free(kv->value);
		memset(kv, 0, sizeof *kv);
		return (-1);
	}
	return (0);
}

static int
etcd_kv_add(struct etcd_reply *r, json_t *o, int deleted, char **cause)
{
	struct etcd_kv	 kv;

	if (etcd_kv_parse(o, &kv, cause) != 0)
		return (-1);
	kv.deleted = deleted;
	r->kvs = xreallocarray(r->kvs, r->nkvs + 1, sizeof *r->kvs);
	r->kvs[r->nkvs++] = kv;
	return (0);
}

static int
etcd_kvs_add(struct etcd_reply *r, json_t *a, char **cause)
{
	size_t	 i;

	if (a == NULL)
		return (0);
	if (!json_is_array(a)) {
		xasprintf(cause, "etcd reply: kvs is not a list");
		return (-1);
	}
	for (i = 0; i < json_array_size(a); i++) {
		if (etcd_kv_add(r, json_array_get(a, i), 0, cause) != 0)
			return (-1);
	}
	return (0);
}

/* A Txn's responses: the keys its ranges read. */
static int
etcd_responses(struct etcd_reply *r, json_t *a, char **cause)
{
	json_t	*x, *rr;
	size_t	 i;

	if (a == NULL)
		return (0);
	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, x) {
		if (!json_is_object(x))
			goto bad;
		if ((rr = json_object_get(x, "response_range")) == NULL)
			continue;
		if (!json_is_object(rr))
			goto bad;
		if (etcd_kvs_add(r, json_object_get(rr, "kvs"), cause) != 0)
			return (-1);
	}
	return (0);
bad:
	xasprintf(cause, "etcd reply: bad responses");
	return (-1);
}

static int
etcd_events(struct etcd_reply *r, json_t *a, char **cause)
{
	json_t		*x, *t;
	size_t		 i;
	int		 del;

	if (a == NULL)
		return (0);
	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, x) {
		if (!json_is_object(x))
			goto bad;
		t = json_object_get(x, "type");
		if (t != NULL && !json_is_string(t))
			goto bad;
		del = t != NULL && strcmp(json_string_value(t), "DELETE") == 0;
		if (etcd_kv_add(r, json_object_get(x, "kv"), del, cause) != 0)
			return (-1);
	}
	return (0);
bad:
	xasprintf(cause, "etcd reply: bad events");
	return (-1);
}

/* A campaign's {"leader": {"name", "key", "rev", "lease"}}. */
static int
etcd_leader_key(struct etcd_reply *r, json_t *o, char **cause)
{
	if (o == NULL)
		return (0);
	if (!json_is_object(o)) {
		xasprintf(cause, "etcd reply: bad leader");
		return (-1);
	}
	if (etcd_bytes(o, "key", &r->leader.key, NULL, cause) != 0 ||
	    etcd_bytes(o, "name", &r->leader.value, &r->leader.vlen,
	    cause) != 0 ||
	    etcd_int(o, "rev", &r->leader.create_rev, cause) != 0 ||
	    etcd_int(o, "lease", &r->leader.lease, cause) != 0)
		return (-1);
	return (0);
}

static int
etcd_error(json_t *o, char **cause)
{
	json_t		*x = json_object_get(o, "error"), *m;
	const char	*s = NULL;

	if (x == NULL)
		return (0);
	if (json_is_string(x))
		s = json_string_value(x);
	if ((m = json_object_get(json_is_object(x) ? x : o, "message")) !=
	    NULL && json_is_string(m))
		s = json_string_value(m);
	xasprintf(cause, "etcd: %.200s", s != NULL ? s : "error");
	return (-1);
}

static int
etcd_reply_fields(json_t *o, struct etcd_reply *r, char **cause)
{
	json_t	*x;

	if ((x = json_object_get(o, "header")) != NULL && json_is_object(x) &&
	    etcd_int(x, "revision", &r->rev, cause) != 0)
		return (-1);
	x = json_object_get(o, "succeeded");
	r->succeeded = x != NULL && json_is_true(x);
	r->created = json_is_true(json_object_get(o, "created"));
	r->canceled = json_is_true(json_object_get(o, "canceled"));
	if (etcd_int(o, "count", &r->count, cause) != 0 ||
	    etcd_int(o, "ID", &r->id, cause) != 0 ||
	    etcd_int(o, "TTL", &r->ttl, cause) != 0)
		return (-1);
	if (etcd_kvs_add(r, json_object_get(o, "kvs"), cause) != 0 ||
	    etcd_responses(r, json_object_get(o, "responses"), cause) != 0 ||
	    etcd_events(r, json_object_get(o, "events"), cause) != 0 ||
	    etcd_leader_key(r, json_object_get(o, "leader"), cause) != 0)
		return (-1);
	if ((x = json_object_get(o, "kv")) != NULL &&
	    etcd_kv_add(r, x, 0, cause) != 0)
		return (-1);
	return (0);
}

/*
 * Parses one reply (or one line of a stream, {"result": ...}) into r,
 * which the caller clears with etcd_reply_clear either way.  An error
 * reply is -1 with etcd's message in *cause.
 */
int
etcd_reply_parse(const char *buf, size_t len, struct etcd_reply *r,
    char **cause)
{
	json_error_t	 err;
	json_t		*o, *res;
	int		 rc = -1;

	memset(r, 0, sizeof *r);
	if ((o = json_loadb(buf, len, 0, &err)) == NULL ||
	    !json_is_object(o)) {
		xasprintf(cause, "etcd reply: not a JSON object");
		goto out;
	}
	if (etcd_error(o, cause) != 0)
		goto out;
	if ((res = json_object_get(o, "result")) != NULL) {
		if (!json_is_object(res) || etcd_error(res, cause) != 0) {
			if (*cause == NULL)
				xasprintf(cause, "etcd reply: bad result");
			goto out;
		}
	} else
		res = o;
	rc = etcd_reply_fields(res, r, cause);
out:
	json_decref(o);
	return (rc);
}

static void
etcd_kv_clear(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

void
etcd_reply_clear(struct etcd_reply *r)
{
	u_int	 i;

	for (i = 0; i < r->nkvs; i++)
		etcd_kv_clear(&r->kvs[i]);
	free(r->kvs);
	etcd_kv_clear(&r->leader);
	memset(r, 0, sizeof *r);
}

/* The reply's key named key, or NULL. */
const struct etcd_kv *
etcd_reply_find(const struct etcd_reply *r, const char *key)
{
	u_int	 i;

	for (i = 0; i < r->nkvs; i++) {
		if (strcmp(r->kvs[i].key, key) == 0)
			return (&r->kvs[i]);
	}
	return (NULL);
}

/* ------------------------------------------------------------------ */
/* Requests. */

/* A base64 JSON string of len bytes of s. */
static json_t *
etcd_b64(const char *s, size_t len)
{
	char	*out;
	json_t	*o;

	out = xmalloc((len + 2) / 3 * 4 + 1);
	base64_encode((const u_char *)s, len, out);
	o = json_string(out);
	free(out);
	return (o);
}

static json_t *
etcd_key(const char *s)
{
	return (etcd_b64(s, strlen(s)));
}

/* The end of the range of keys that start with prefix (caller frees). */
static char *
etcd_prefix_end(const char *prefix)
{
	char	*end = xstrdup(prefix);
	size_t	 n = strlen(end);

	while (n > 0 && (u_char)end[n - 1] == 0xff)
		end[--n] = '\0';
	if (n > 0)
		end[n - 1]++;
	return (end);
}

static void
etcd_set_int(json_t *o, const char *name, int64_t v)
{
	char	 buf[32];

	snprintf(buf, sizeof buf, "%lld", (long long)v);
	json_object_set_new(o, name, json_string(buf));
}

static json_t *
etcd_range_body(const char *key, int prefix)
{
	json_t	*o = json_object();
	char	*end;

	json_object_set_new(o, "key", etcd_key(key));
	if (prefix) {
		end = etcd_prefix_end(key);
		json_object_set_new(o, "range_end", etcd_key(end));
		free(end);
	}
	return (o);
}

/* A Txn's put of key (under lease, if not 0). */
json_t *
etcd_op_put(const char *key, const char *value, int64_t lease)
{
	json_t	*o = json_object();

	json_object_set_new(o, "key", etcd_key(key));
	json_object_set_new(o, "value", etcd_key(value));
	if (lease != 0)
		etcd_set_int(o, "lease", lease);
	return (json_pack("{s:o}", "request_put", o));
}

json_t *
etcd_op_delete(const char *key)
{
	return (json_pack("{s:{s:o}}", "request_delete_range", "key",
	    etcd_key(key)));
}

json_t *
etcd_op_range(const char *key, int prefix)
{
	return (json_pack("{s:o}", "request_range",
	    etcd_range_body(key, prefix)));
}

/*
 * A Txn's compare: target "CREATE", "MOD" or "VERSION" of key equals v
 * (a create revision of 0: the key does not exist).
 */
json_t *
etcd_cmp(const char *key, const char *target, int64_t v)
{
	json_t		*o = json_object();
	const char	*field;

	if (strcmp(target, "CREATE") == 0)
		field = "create_revision";
	else if (strcmp(target, "MOD") == 0)
		field = "mod_revision";
	else
		field = "version";
	json_object_set_new(o, "key", etcd_key(key));
	json_object_set_new(o, "target", json_string(target));
	json_object_set_new(o, "result", json_string("EQUAL"));
	etcd_set_int(o, field, v);
	return (o);
}

static void
etcd_deliver(struct etcd_call *c, const char *buf, size_t len,
    const char *err)
{
	struct etcd_reply	 r;
	char			*cause = NULL;

	memset(&r, 0, sizeof r);
	if (err == NULL && etcd_reply_parse(buf, len, &r, &cause) != 0)
		err = cause;
	c->in_cb = 1;
	if (!c->cancelled)
		c->cb(err != NULL ? NULL : &r, err, c->arg);
	c->in_cb = 0;
	etcd_reply_clear(&r);
	free(cause);
}

/* Hands a stream's whole lines to its callback. */
static void
etcd_stream_lines(struct etcd_call *c, struct evbuffer *in)
{
	char	*line;
	size_t	 n;

	if (in != NULL)
		evbuffer_add_buffer(c->partial, in);
	while (!c->cancelled && (line = evbuffer_readln(c->partial, &n,
	    EVBUFFER_EOL_LF)) != NULL) {
		if (n > 0)
			etcd_deliver(c, line, n, NULL);
		free(line);
	}
	if (evbuffer_get_length(c->partial) > ETCD_MAX_REPLY)
		evbuffer_drain(c->partial, evbuffer_get_length(c->partial));
}

/* What a stream left without a newline: its last message. */
static void
etcd_stream_rest(struct etcd_call *c)
{
	size_t	 n = evbuffer_get_length(c->partial);

	if (n > 0 && !c->cancelled)
		etcd_deliver(c, (char *)evbuffer_pullup(c->partial, -1), n,
		    NULL);
	evbuffer_drain(c->partial, n);
}

static void
etcd_chunk(struct evhttp_request *req, void *arg)
{
	struct etcd_call	*c = arg;

	etcd_stream_lines(c, evhttp_request_get_input_buffer(req));
}

/*
 * Call c's argument is its callback's to free: etcd_free frees it with
 * free_arg if the callback was never called.  Returns c.
 */
struct etcd_call *
etcd_call_owns(struct etcd_call *c, void (*free_arg)(void *))
{
	c->free_arg = free_arg;
	return (c);
}

/* The call is no longer etcd_free's to free (or is freed). */
static void
etcd_call_unlist(struct etcd_call *c)
{
	if (c->listed)
		LIST_REMOVE(c, entry);
	c->listed = 0;
}

static void
etcd_call_free_cb(evutil_socket_t fd, short events, void *arg)
{
	etcd_call_free(arg);
}

static void
etcd_call_free(struct etcd_call *c)
{
	etcd_call_unlist(c);
	if (c->own != NULL)
		evhttp_connection_free(c->own);
	if (c->partial != NULL)
		evbuffer_free(c->partial);
	free(c);
}

/*
 * How far our wall clock is from the etcd member's, from its reply's Date
 * header (whole seconds: good for minutes of skew, not for milliseconds).
 */
static void
etcd_date(struct etcd *e, struct evhttp_request *req)
{
	const char	*d;
	struct tm	 tm;
	char		*end;

	d = evhttp_find_header(evhttp_request_get_input_headers(req), "Date");
	memset(&tm, 0, sizeof tm);
	if (d == NULL || (end = strptime(d, "%a, %d %b %Y %H:%M:%S GMT",
	    &tm)) == NULL || *end != '\0')
		return;
	e->skew_ms = clock_ms() - (int64_t)timegm(&tm) * 1000;
	e->skew_known = 1;
}

/* Our clock minus etcd's, in ms; 0 if not known yet. */
int64_t
etcd_skew(const struct etcd *e, int *known)
{
	*known = e->skew_known;
	return (e->skew_ms);
}

static void
etcd_done(struct evhttp_request *req, void *arg)
{
	struct etcd_call	*c = arg;
	struct evbuffer		*in;
	char			*err = NULL, *body;
	size_t			 len;
	int			 code;

	c->req = NULL;		/* libevent frees it after this returns */
	code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	if (code == 0) {
		xasprintf(&err, "etcd %s:%u: unreachable",
		    c->e->eps[c->ep].host, c->e->eps[c->ep].port);
		if (c->e->cur == c->ep)
			c->e->cur = (c->ep + 1) % c->e->neps;
		etcd_deliver(c, NULL, 0, err);
	} else if (c->stream) {
		etcd_stream_lines(c, evhttp_request_get_input_buffer(req));
		etcd_stream_rest(c);
		xasprintf(&err, "etcd: stream ended");
		etcd_deliver(c, NULL, 0, err);
	} else {
		etcd_date(c->e, req);
		in = evhttp_request_get_input_buffer(req);
		len = evbuffer_get_length(in);
		body = (char *)evbuffer_pullup(in, (ssize_t)len);
		if (code / 100 != 2 && (len == 0 || *body != '{'))
			xasprintf(&err, "etcd: HTTP %d", code);
		etcd_deliver(c, body, len, err);
	}
	free(err);
	/* A stream's own connection cannot be freed inside its callback. */
	if (c->dying)
		return;		/* etcd_cancel_later frees it */
	if (c->own != NULL) {
		etcd_call_unlist(c);
		event_base_once(c->e->base, -1, EV_TIMEOUT, etcd_call_free_cb,
		    c, NULL);
	} else
		etcd_call_free(c);
}

static struct etcd_call *
etcd_send(struct etcd *e, const char *path, json_t *body, int own,
    etcd_cb cb, void *arg)
{
	struct etcd_call		*c;
	struct evhttp_connection	*conn;
	struct evkeyvalq		*h;
	char				*text;
	u_int				 k;

	c = xcalloc(1, sizeof *c);
	c->e = e;
	c->cb = cb;
	c->arg = arg;
	c->ep = e->cur;
	LIST_INSERT_HEAD(&e->calls_live, c, entry);
	c->listed = 1;
	if (own) {
		c->own = conn = etcd_connect(e, c->ep, ETCD_WAIT_TIMEOUT_S);
		c->partial = evbuffer_new();
	} else {
		/* in turn: a big Txn does not hold up a keepalive */
		k = e->turn++ % ETCD_CONNS;
		if (e->eps[c->ep].conn[k] == NULL)
			e->eps[c->ep].conn[k] = etcd_connect(e, c->ep,
			    ETCD_TIMEOUT_S);
		conn = e->eps[c->ep].conn[k];
	}
	c->req = evhttp_request_new(etcd_done, c);
	h = evhttp_request_get_output_headers(c->req);
	evhttp_add_header(h, "Host", e->eps[c->ep].host);
	evhttp_add_header(h, "Content-Type", "application/json");
	text = json_dumps(body, JSON_COMPACT);
	evbuffer_add(evhttp_request_get_output_buffer(c->req), text,
	    strlen(text));
	free(text);
	json_decref(body);
	e->calls++;
	if (evhttp_make_request(conn, c->req, EVHTTP_REQ_POST, path) != 0)
		fatalx("evhttp_make_request");
	return (c);
}

/*
 * POSTs body (taken) to /v3/PATH; cb gets the reply.  The call is valid
 * until its callback has returned, or until etcd_cancel.
 */
struct etcd_call *
etcd_post(struct etcd *e, const char *path, json_t *body, etcd_cb cb,
    void *arg)
{
	return (etcd_send(e, path, body, 0, cb, arg));
}

struct etcd_call *
etcd_range(struct etcd *e, const char *key, int prefix, etcd_cb cb,
    void *arg)
{
	return (etcd_post(e, "/v3/kv/range", etcd_range_body(key, prefix),
	    cb, arg));
}

/* A Txn of compare, success and failure (taken; failure may be NULL). */
struct etcd_call *
etcd_txn(struct etcd *e, json_t *compare, json_t *success, json_t *failure,
    etcd_cb cb, void *arg)
{
	json_t	*o = json_object();

	json_object_set_new(o, "compare", compare);
	json_object_set_new(o, "success", success);
	if (failure != NULL)
		json_object_set_new(o, "failure", failure);
	return (etcd_post(e, "/v3/kv/txn", o, cb, arg));
}

/* A lease call: {FIELD: v} to path. */
static struct etcd_call *
etcd_lease_call(struct etcd *e, const char *path, const char *field,
    int64_t v, etcd_cb cb, void *arg)
{
	json_t	*o = json_object();

	etcd_set_int(o, field, v);
	return (etcd_post(e, path, o, cb, arg));
}

struct etcd_call *
etcd_lease_grant(struct etcd *e, u_int ttl, etcd_cb cb, void *arg)
{
	return (etcd_lease_call(e, "/v3/lease/grant", "TTL", ttl, cb, arg));
}

/* One keepalive; the reply's ttl is 0 when the lease is gone. */
struct etcd_call *
etcd_keepalive(struct etcd *e, int64_t id, etcd_cb cb, void *arg)
{
	return (etcd_lease_call(e, "/v3/lease/keepalive", "ID", id, cb, arg));
}

/* Waits (on a connection of its own) until value leads election name. */
struct etcd_call *
etcd_campaign(struct etcd *e, const char *name, const char *value,
    int64_t lease, etcd_cb cb, void *arg)
{
	json_t	*o = json_object();

	json_object_set_new(o, "name", etcd_key(name));
	json_object_set_new(o, "value", etcd_key(value));
	etcd_set_int(o, "lease", lease);
	return (etcd_send(e, "/v3/election/campaign", o, 1, cb, arg));
}

struct etcd_call *
etcd_leader(struct etcd *e, const char *name, etcd_cb cb, void *arg)
{
	return (etcd_post(e, "/v3/election/leader", json_pack("{s:o}",
	    "name", etcd_key(name)), cb, arg));
}

static json_t *
etcd_leader_body(const char *name, const struct etcd_kv *lk)
{
	json_t	*o = json_object();

	json_object_set_new(o, "name", etcd_key(name));
	json_object_set_new(o, "key", etcd_key(lk->key));
	etcd_set_int(o, "rev", lk->create_rev);
	etcd_set_int(o, "lease", lk->lease);
	return (o);
}

/* Gives up leadership held by the leader key lk. */
struct etcd_call *
etcd_resign(struct etcd *e, const char *name, const struct etcd_kv *lk,
    etcd_cb cb, void *arg)
{
	return (etcd_post(e, "/v3/election/resign", json_pack("{s:o}",
	    "leader", etcd_leader_body(name, lk)), cb, arg));
}

/*
 * Watches the keys under prefix from revision rev (0: from now): cb gets
 * each message (the first has created set) and, last, an error when the
 * stream ends.
 */
struct etcd_call *
etcd_watch(struct etcd *e, const char *prefix, int64_t rev, etcd_cb cb,
    void *arg)
{
	json_t			*o = etcd_range_body(prefix, 1);
	struct etcd_call	*c;

	if (rev > 0)
		etcd_set_int(o, "start_revision", rev);
	c = etcd_send(e, "/v3/watch", json_pack("{s:o}", "create_request", o),
	    1, cb, arg);
	c->stream = 1;
	evhttp_request_set_chunked_cb(c->req, etcd_chunk);
	return (c);
}

static void
etcd_cancel_later(evutil_socket_t fd, short events, void *arg)
{
	struct etcd_call	*c = arg;

	if (c->req != NULL)
		evhttp_cancel_request(c->req);
	c->req = NULL;
	etcd_call_free(c);
}

/*
 * Cancels a call: its callback is not called again.  A call that shares
 * a connection is only muted (its reply comes and is dropped); one with
 * a connection of its own is closed.
 */
void
etcd_cancel(struct etcd_call *c)
{
	if (c == NULL || c->cancelled)
		return;
	c->cancelled = 1;
	if (c->own == NULL)
		return;		/* freed when its reply comes */
	/* Not inside its own callbacks: from the loop, next. */
	c->dying = 1;
	etcd_call_unlist(c);
	event_base_once(c->e->base, -1, EV_TIMEOUT, etcd_cancel_later, c,
	    NULL);
}

/* Runs the loop until *done (tests and the bench; never the daemon). */
int
etcd_wait(struct etcd *e, const int *done)
{
	while (!*done) {
		if (event_base_loop(e->base, EVLOOP_ONCE) == -1)
			return (-1);
	}
	return (0);
}
