/*
 * server-tls.c: the daemon's TCP listener (gmux serve --addr), TLS with the
 * host's own key (tls.c) and the same route table as the Unix socket.
 * Every request that comes this way carries a bearer token: it is checked
 * before the route runs, failures are counted per source and a source
 * that fails too often is refused for a while (429).  The token's owner
 * is the owner of what the request does.  Routes that manage the host
 * itself (tokens, pruning the books) answer only on the Unix socket.  What
 * a connection may cost before it has shown a good token is bounded by
 * server-guard.c.
 */

#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gmux.h"

#define TLS_FAILS_MAX		10		/* failures per source ... */
#define TLS_FAILS_WINDOW_MS	(60 * 1000)	/* ... within this ... */
#define TLS_BLOCK_MS		(60 * 1000)	/* ... block it this long */
#define TLS_SOURCES_MAX		4096
#define TLS_MAX_BODY		(REMOTE_MANIFEST_MAX + 65536)

const char			*server_tls_addr;	/* --addr, or NULL */

static struct tls_identity	*tls_id;
static void			*tls_ctx;
static struct tokens		*tls_tokens;
static struct ratelimit		*tls_rl;
static struct evhttp		*tls_http;
static char			*tls_host;	/* --addr's; NULL: any */
static u_int			 tls_port;	/* as bound */

/*
 * The host's tokens, $GMUX_HOME/tls/tokens.json or the file TOKENS names
 * (one that hosts share, docs/cluster.md), read once, then kept.
 */
struct tokens *
server_tls_tokens(char **cause)
{
	const char	*shared = config_get("TOKENS");
	char		*path;

	if (tls_tokens != NULL)
		return (tls_tokens);
	if (shared != NULL && *shared != '\0') {
		if (*shared != '/') {
			xasprintf(cause, "TOKENS: %s is not an absolute path",
			    shared);
			return (NULL);
		}
		tls_tokens = tokens_open(shared, cause);
		return (tls_tokens);
	}
	xasprintf(&path, "%s/tls", path_home());
	if (mkdir_p(path, 0700) != 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (NULL);
	}
	free(path);
	xasprintf(&path, "%s/tls/tokens.json", path_home());
	tls_tokens = tokens_open(path, cause);
	free(path);
	return (tls_tokens);
}

/*
 * The line a token's new holder pastes on their machine, if this daemon
 * listens on TCP; NULL otherwise.  The caller wipes and frees it.
 */
char *
server_tls_invite(const char *token)
{
	if (tls_id == NULL)
		return (NULL);
	return (remotes_invite(token, tls_host, tls_port,
	    tls_identity_pin(tls_id)));
}

/*
 * Where other members reach this daemon (HOST:PORT, the host empty if it
 * listens on every address) and its pin; 0, or -1 if it serves no TLS.
 */
int
server_tls_where(char **addr, const char **pin)
{
	if (tls_id == NULL)
		return (-1);
	if (tls_host != NULL && strchr(tls_host, ':') != NULL)
		xasprintf(addr, "[%s]:%u", tls_host, tls_port);
	else
		xasprintf(addr, "%s:%u", tls_host != NULL ? tls_host : "",
		    tls_port);
	*pin = tls_identity_pin(tls_id);
	return (0);
}

/* Splits [HOST]:PORT; host NULL means every address. */
static int
server_tls_parse(const char *addr, char **host, u_int *port, char **cause)
{
	const char	*colon, *p;
	char		*end;
	unsigned long	 n;

	*host = NULL;
	if ((colon = strrchr(addr, ':')) == NULL)
		p = addr;
	else {
		p = colon + 1;
		if (*addr == '[' && colon > addr && colon[-1] == ']')
			*host = xstrndup(addr + 1, (size_t)(colon - addr - 2));
		else if (colon != addr && memchr(addr, ':', (size_t)(colon -
		    addr)) == NULL)
			*host = xstrndup(addr, (size_t)(colon - addr));
		else if (colon != addr)
			goto bad;
	}
	n = strtoul(p, &end, 10);
	if (*p < '0' || *p > '9' || *end != '\0' || n > 65535)
		goto bad;
	*port = (u_int)n;
	if (*host != NULL && **host == '\0') {
		free(*host);
		*host = NULL;
	}
	return (0);
bad:
	free(*host);
	*host = NULL;
	xasprintf(cause, "--addr: '%s' is not [HOST]:PORT (like :7070, "
	    "127.0.0.1:7070 or [::1]:7070)", addr);
	return (-1);
}

/* A listening socket for one address; -1 with errno. */
static int
server_tls_socket(const struct sockaddr *sa, socklen_t len)
{
	int	 fd, on = 1, off = 0;

	fd = socket(sa->sa_family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (fd == -1)
		return (-1);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	/* Inherited by accepted sockets: a reply's records go out at once
	 * (a kept connection would otherwise wait on delayed ACKs). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
	if (bind(fd, sa, len) != 0 || listen(fd, 128) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/* Binds host:port (every address, both families, if host is NULL). */
static int
server_tls_listen(const char *host, u_int port, char **cause)
{
	struct addrinfo		 hints, *ai, *a;
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof ss;
	char			 serv[16];
	int			 fd = -1, r, err = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = host == NULL ? AF_INET6 : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE|AI_NUMERICSERV;
	snprintf(serv, sizeof serv, "%u", port);
	if ((r = getaddrinfo(host, serv, &hints, &ai)) != 0 && host == NULL) {
		hints.ai_family = AF_INET;	/* a host without IPv6 */
		r = getaddrinfo(host, serv, &hints, &ai);
	}
	if (r != 0) {
		xasprintf(cause, "--addr %s: %s", host ? host : "", r ==
		    EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return (-1);
	}
	for (a = ai; a != NULL && fd == -1; a = a->ai_next) {
		if ((fd = server_tls_socket(a->ai_addr, a->ai_addrlen)) == -1)
			err = errno;
	}
	freeaddrinfo(ai);
	if (fd == -1) {
		xasprintf(cause, "--addr %s:%u: %s", host ? host : "", port,
		    strerror(err));
		return (-1);
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		tls_port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	return (fd);
}

/* The live token or invite req carries (checked already), or NULL. */
static const struct token *
server_tls_token(struct evhttp_request *req)
{
	const char	*h;

	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	if (tls_tokens == NULL || h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return (NULL);
	return (tokens_check(tls_tokens, h + 7));
}

/* Did req come with an invite rather than a token (POST /v1/join)? */
static int
server_tls_invited(struct evhttp_request *req)
{
	const struct token	*tk = server_tls_token(req);

	return (tk != NULL && tk->expires != 0);
}

/*
 * POST /v1/join: trades the request's invite for a token of the invite's
 * owner, made for the machine that asks.  201 {"id", "owner", "token"};
 * 409 for a token (nothing to trade); 400 on the Unix socket.
 */
void
api_join(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const struct token	*tk = NULL;
	json_t			*o;
	char			*cause = NULL, *secret, *tid, *owner;

	if (who->transport == API_TCP)
		tk = server_tls_token(req);
	if (tk == NULL) {
		api_error(req, 400, "join trades an invite, over TCP");
		return;
	}
	owner = xstrdup(tk->owner);
	if (tokens_join(tls_tokens, tk, &secret, &tid, &cause) != 0) {
		api_error(req, 409, "%s", cause);
		free(cause);
		free(owner);
		return;
	}
	log_info("token %s made for %s (joined)", tid, owner);
	o = json_pack("{s:s, s:s, s:s}", "id", tid, "owner", owner, "token",
	    secret);
	api_reply(req, 201, o);
	json_decref(o);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	free(tid);
	free(owner);
}

/* Routes that change the host itself: never over TCP. */
static int
server_tls_local_only(const char *path)
{
	return (strncmp(path, "/v1/tokens", 10) == 0 ||
	    strncmp(path, "/v1/tenants", 11) == 0 ||
	    strncmp(path, "/v1/usage/prune", 15) == 0);
}

/*
 * A request with a good token: it acts as the token's owner, an admin if
 * that is the daemon's own user, and what it names and runs is confined.
 * One of the dashboard's public routes (owner NULL: its page, logging
 * out) acts as nobody in particular, never as an admin.
 */
static void
server_tls_route(struct evhttp_request *req, const char *owner)
{
	struct api_who	 who;

	memset(&who, 0, sizeof who);
	who.transport = API_TCP;
	who.owner = owner != NULL ? owner : "";
	who.admin = owner != NULL && strcmp(owner, api_me()) == 0;
	who.confined = 1;
	who.ungranted = !cluster_grant_ok(server_tls_token(req));
	if (!cluster_grant_refuse(req, evhttp_uri_get_path(
	    evhttp_request_get_evhttp_uri(req)), &who))
		api_dispatch(req, &who);
}

/*
 * A member's call (docs/cluster.md, "Members calling members"): the
 * owner it acts for is believed only from a live member of this cluster,
 * shown by its client certificate, on a request without a token.  It acts
 * as that owner, confined, as any TCP request.
 */
static void
server_tls_peer(struct evhttp_request *req, const char *owner)
{
	struct evhttp_connection	*c = evhttp_request_get_connection(req);
	struct evkeyvalq		*h;
	struct api_who			 who;
	const char			*member, *admin;

	h = evhttp_request_get_input_headers(req);
	member = cluster_peer_conn(evhttp_connection_get_bufferevent(c));
	if (member == NULL || evhttp_find_header(h, "Authorization") != NULL) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
		api_error(req, 403, PEER_OWNER_HEADER ": only a member of this "
		    "cluster may say whom it acts for");
		return;
	}
	if (!cluster_peer_owner_ok(owner)) {
		api_error(req, 400, PEER_OWNER_HEADER ": not an owner's name");
		return;
	}
	log_debug("%s: %s for %s", __func__, member, owner);
	admin = evhttp_find_header(h, PEER_ADMIN_HEADER);
	memset(&who, 0, sizeof who);
	who.transport = API_TCP;
	who.owner = owner;
	who.admin = admin != NULL && strcmp(admin, "1") == 0;
	who.confined = 1;
	who.proxied = 1;
	api_dispatch(req, &who);
}

/* Every TCP request: the token first, then the route table. */
static void
server_tls_dispatch(struct evhttp_request *req, void *arg)
{
	const char	*auth, *path, *as;
	char		*peer, key[64], *owner = NULL, *cause = NULL, ra[16];
	ev_uint16_t	 port;
	int		 code, retry = 0;

	evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer,
	    &port);
	as = evhttp_find_header(evhttp_request_get_input_headers(req),
	    PEER_OWNER_HEADER);
	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (as != NULL && (path == NULL || !server_tls_local_only(path))) {
		server_tls_peer(req, as);
		return;
	}
	/* The dashboard: its page is public, its cookie stands for a token. */
	if (ui_tls_public(req)) {
		server_tls_route(req, NULL);
		return;
	}
	if (ui_tls_cookie(req, &cause) != 0) {
		api_error(req, 403, "%s", cause);
		free(cause);
		return;
	}
	ratelimit_key(peer, key, sizeof key);
	auth = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	code = tokens_authorize(tls_tokens, tls_rl, key, auth, clock_ms(),
	    &owner, &retry, &cause);
	log_debug("%s: %s from %s: %d", __func__, path ? path : "?", peer,
	    code);
	if (code == 429) {
		snprintf(ra, sizeof ra, "%d", retry);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Retry-After", ra);
	}
	if (code != 200) {
		/* A connection that showed no good token is kept no longer. */
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
		api_error(req, code, "%s", cause);
	} else if (server_tls_invited(req) && (path == NULL ||
	    strcmp(path, "/v1/join") != 0))
		api_error(req, 403, "this is an invite: it is good only for "
		    "gmux remote add, which trades it for a token of its own");
	else if (path != NULL && server_tls_local_only(path))
		api_error(req, 403, "%s is served on the host's own socket "
		    "only", path);
	else
		server_tls_route(req, owner);
	free(owner);
	free(cause);
}

/*
 * A token made on a member is granted the member's cluster (docs/
 * cluster.md, "Several clusters"); on a standalone host, nothing.
 */
int
server_tls_grant_own(const char *id, char **cause)
{
	const char	*own = cluster_grant_own();

	if (own == NULL)
		return (0);
	return (tokens_grant(tls_tokens, id, own, 1, NULL, cause));
}

/*
 * The first start with --addr: an invite for the daemon's user, shown
 * once, in the words of the product's description: what it serves, and
 * the line to paste on each machine that will use it.
 */
static int
server_tls_first_token(char **cause)
{
	char	*secret, *id, *me, *line;

	if (tls_tokens->n != 0)
		return (0);
	me = user_name(getuid());
	if (tokens_invite(tls_tokens, me, &secret, &id, cause) != 0 ||
	    server_tls_grant_own(id, cause) != 0) {
		free(me);
		return (-1);
	}
	if ((line = server_tls_invite(secret)) == NULL)
		fatalx("%s: no identity", __func__);
	printf("gmux serving machines without a GPU on %s:%u over TLS\n"
	    "on each of them, run:\n%s\n", tls_host != NULL ? tls_host : "",
	    tls_port, line);
	fflush(stdout);
	log_info("made invite %s for %s (shown once)", id, me);
	explicit_bzero(line, strlen(line));
	explicit_bzero(secret, strlen(secret));
	free(line);
	free(secret);
	free(id);
	free(me);
	return (0);
}

/*
 * Starts serving TCP on server_tls_addr: the identity (made on the first
 * start), the tokens, the listener.  Returns 0 or -1 with *cause.
 */
int
server_tls_start(char **cause)
{
	struct evconnlistener	*l;
	const char		*mode;
	char			*dir;
	int			 fd;

	if (server_tls_parse(server_tls_addr, &tls_host, &tls_port,
	    cause) != 0)
		return (-1);
	xasprintf(&dir, "%s/tls", path_home());
	tls_id = tls_identity_load(dir, 1, cause);
	free(dir);
	if (tls_id == NULL || (tls_ctx = tls_server_create(tls_id,
	    cause)) == NULL || server_tls_tokens(cause) == NULL)
		return (-1);
	/* A member's peers show their certificates (cluster-peer.c). */
	if ((mode = config_get("CLUSTER_MODE")) != NULL &&
	    strcmp(mode, "member") == 0)
		tls_server_ask_certificates(tls_ctx);
	tls_rl = ratelimit_create(TLS_FAILS_MAX, TLS_FAILS_WINDOW_MS,
	    TLS_BLOCK_MS, TLS_SOURCES_MAX);
	if ((fd = server_tls_listen(tls_host, tls_port, cause)) == -1)
		return (-1);
	tls_http = evhttp_new(server_base);
	api_setup(tls_http);
	evhttp_set_gencb(tls_http, server_tls_dispatch, NULL);
	evhttp_set_max_body_size(tls_http, TLS_MAX_BODY);
	/* Limits before a token is shown: server-guard.c. */
	server_guard_init();
	evhttp_set_bevcb(tls_http, server_guard_bev, tls_ctx);
	l = evconnlistener_new(server_base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE|LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (l == NULL || evhttp_bind_listener(tls_http, l) == NULL)
		fatalx("evhttp_bind_listener");
	if (server_tls_first_token(cause) != 0)
		return (-1);
	log_info("serving TLS on %s:%u, pin %s", tls_host ? tls_host : "*",
	    tls_port, tls_identity_pin(tls_id));
	return (0);
}

/* The host's TLS identity (NULL: not serving TCP). */
const struct tls_identity *
server_tls_identity(void)
{
	return (tls_id);
}

/* The port the listener has (0: none), and its --addr host (NULL: any). */
u_int
server_tls_port(void)
{
	return (tls_id != NULL ? tls_port : 0);
}

const char *
server_tls_host(void)
{
	return (tls_host);
}

void
server_tls_stop(void)
{
	if (tls_http != NULL)
		evhttp_free(tls_http);
	tls_http = NULL;
	tls_server_free(tls_ctx);
	tls_ctx = NULL;
	tls_identity_free(tls_id);
	tls_id = NULL;
	ratelimit_free(tls_rl);
	tls_rl = NULL;
	tokens_free(tls_tokens);
	tls_tokens = NULL;
	free(tls_host);
	tls_host = NULL;
}
