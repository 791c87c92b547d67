/*
 * ui.c: the dashboard (docs/ui.md).  The daemon serves its page under /ui
 * from files built into the program, and lets a browser use the API with
 * the token kept in a cookie: POST /ui/login turns a token shown once in
 * an Authorization header into an HttpOnly, Secure, SameSite=Strict
 * cookie; every later TCP request that carries the cookie and no header
 * is treated as if it carried the header (so the same routes and owner
 * rules apply), and one that changes something must also carry the CSRF
 * value GET /v1/session gave the page, which another site cannot read.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"
#include "ui-int.h"
#include "ui-assets.h"

int	ui_on;		/* serve --ui, or UI=1 in the config */
json_t	*(*ui_cluster_json)(void);

/* The cluster's members and leader, or JSON null when not clustered. */
json_t *
ui_cluster(void)
{
	json_t	*o = ui_cluster_json != NULL ? ui_cluster_json() : NULL;

	return (o != NULL ? o : json_null());
}

#define UI_CSP	"default-src 'none'; script-src 'self'; style-src 'self'; " \
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; " \
	"frame-ancestors 'none'; base-uri 'none'"

/* The asset called name (without a directory), or NULL. */
const struct ui_asset *
ui_asset_find(const char *name)
{
	u_int	 i;

	for (i = 0; i < nitems(ui_assets); i++) {
		if (strcmp(ui_assets[i].name, name) == 0)
			return (&ui_assets[i]);
	}
	return (NULL);
}

const char *
ui_asset_type(const char *name)
{
	const char	*dot = strrchr(name, '.');

	if (dot == NULL)
		return ("application/octet-stream");
	if (strcmp(dot, ".html") == 0)
		return ("text/html; charset=utf-8");
	if (strcmp(dot, ".js") == 0)
		return ("text/javascript; charset=utf-8");
	if (strcmp(dot, ".css") == 0)
		return ("text/css; charset=utf-8");
	if (strcmp(dot, ".svg") == 0)
		return ("image/svg+xml");
	return ("application/octet-stream");
}

/*
 * Finds cookie name in a Cookie header's value and copies its value to
 * out (at most outlen - 1 bytes).  Returns 0, or -1 if it is not there or
 * does not fit.
 */
int
ui_cookie_get(const char *header, const char *name, char *out, size_t outlen)
{
	const char	*p = header, *eq, *end;
	size_t		 nlen = strlen(name), vlen;

	while (p != NULL && *p != '\0') {
		p += strspn(p, " \t;");
		end = p + strcspn(p, ";");
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq != NULL && (size_t)(eq - p) == nlen &&
		    strncmp(p, name, nlen) == 0) {
			vlen = (size_t)(end - eq - 1);
			while (vlen > 0 && strchr(" \t", eq[vlen]) != NULL)
				vlen--;
			if (vlen >= outlen)
				return (-1);
			memcpy(out, eq + 1, vlen);
			out[vlen] = '\0';
			return (0);
		}
		p = end;
	}
	return (-1);
}

/* The CSRF value of a token: not the token, and not guessable without it. */
void
ui_csrf_of(const char *token, char *out)
{
	char	*text, hex[DIGEST_HEX];

	xasprintf(&text, "gmux-csrf:%s", token);
	digest_buf(text, strlen(text), hex);
	explicit_bzero(text, strlen(text));
	free(text);
	memcpy(out, hex, UI_CSRF_LEN);
	out[UI_CSRF_LEN] = '\0';
}

/* Compares n bytes in time that does not depend on where they differ. */
static int
ui_equal(const char *a, const char *b, size_t n)
{
	u_char	 d = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		d |= (u_char)a[i] ^ (u_char)b[i];
	return (d == 0);
}

static const char *
ui_header(struct evhttp_request *req, const char *name)
{
	return (evhttp_find_header(evhttp_request_get_input_headers(req),
	    name));
}

static const char *
ui_path(struct evhttp_request *req)
{
	const char	*p;

	p = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	return (p != NULL ? p : "/");
}

/*
 * Routes a browser reaches before it has logged in: the page itself (it
 * asks for a login when the API says 401) and logging out, which only
 * clears a cookie.
 */
int
ui_tls_public(struct evhttp_request *req)
{
	enum evhttp_cmd_type	 m = evhttp_request_get_command(req);
	const char		*path = ui_path(req);

	if (strcmp(path, "/ui/logout") == 0)
		return (m == EVHTTP_REQ_POST);
	if (strcmp(path, "/ui/login") == 0 && m == EVHTTP_REQ_POST)
		return (0);
	if (strcmp(path, "/ui") != 0 && strncmp(path, "/ui/", 4) != 0)
		return (0);
	return (m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD);
}

/* Does a change come from the page (Origin, if sent, is this host)? */
static int
ui_origin_ok(struct evhttp_request *req)
{
	const char	*origin = ui_header(req, "Origin");
	const char	*host = ui_header(req, "Host");

	if (origin == NULL)
		return (1);
	if (host == NULL || strncmp(origin, "https://", 8) != 0)
		return (0);
	return (strcmp(origin + 8, host) == 0);
}

/*
 * Does a change made with the cookie's token tok carry its CSRF value and
 * come from this origin?  Returns 0, or -1 with *cause (a 403).
 */
static int
ui_csrf_check(struct evhttp_request *req, const char *tok, char **cause)
{
	const char	*sent = ui_header(req, UI_CSRF_HEADER);
	char		 csrf[UI_CSRF_LEN + 1];
	int		 rc = 0;

	ui_csrf_of(tok, csrf);
	if (sent == NULL || strlen(sent) != UI_CSRF_LEN ||
	    !ui_equal(sent, csrf, UI_CSRF_LEN) || !ui_origin_ok(req)) {
		xasprintf(cause, "%s: the dashboard's CSRF check failed "
		    "(reload the page)", UI_CSRF_HEADER);
		rc = -1;
	}
	explicit_bzero(csrf, sizeof csrf);
	return (rc);
}

/*
 * A TCP request with the dashboard's cookie and no Authorization header
 * gets the header from the cookie; one that is not a GET must carry the
 * CSRF value too and come from this origin.  Returns 0, or -1 with *cause
 * (a 403).  The caller checks the token as for any request.
 */
int
ui_tls_cookie(struct evhttp_request *req, char **cause)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	enum evhttp_cmd_type	 m = evhttp_request_get_command(req);
	const char		*cookie;
	char			 tok[300], *auth;
	int			 rc = 0;

	if (evhttp_find_header(h, "Authorization") != NULL ||
	    (cookie = evhttp_find_header(h, "Cookie")) == NULL ||
	    ui_cookie_get(cookie, UI_COOKIE, tok, sizeof tok) != 0 ||
	    *tok == '\0')
		return (0);
	if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD)
		rc = ui_csrf_check(req, tok, cause);
	if (rc == 0) {
		xasprintf(&auth, "Bearer %s", tok);
		evhttp_add_header(h, "Authorization", auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	explicit_bzero(tok, sizeof tok);
	return (rc);
}

/*
 * For the TCP guard: does a request head carry a valid token in the
 * dashboard's cookie (so the connection is trusted, as with the header)?
 */
int
ui_head_cookie_ok(const struct http_head *head)
{
	struct tokens	*tk = server_tls_tokens(NULL);
	char		*v, tok[300];
	int		 ok = 0;

	if (tk == NULL || (v = http_head_get(head, "Cookie")) == NULL)
		return (0);
	if (ui_cookie_get(v, UI_COOKIE, tok, sizeof tok) == 0)
		ok = *tok != '\0' && tokens_check(tk, tok) != NULL;
	explicit_bzero(tok, sizeof tok);
	explicit_bzero(v, strlen(v));
	free(v);
	return (ok);
}

static void
ui_security_headers(struct evhttp_request *req)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Security-Policy", UI_CSP);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "X-Frame-Options", "DENY");
	evhttp_add_header(h, "Cache-Control", "no-store");
}

/*
 * A TCP connection that has not shown a token is cut by the guard a few
 * seconds after it opened (server-guard.c): one that served the login
 * page is closed after its reply, so the browser does not reuse it for
 * the dashboard's streams once it has logged in.
 */
static void
ui_close_anonymous(struct evhttp_request *req, const struct api_who *who)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	const char		*cookie = evhttp_find_header(h, "Cookie");
	const char		*auth = evhttp_find_header(h, "Authorization");
	struct tokens		*tk = server_tls_tokens(NULL);
	char			 tok[300];
	int			 ok = 0;

	if (who->transport != API_TCP)
		return;
	if (auth != NULL && strncmp(auth, "Bearer ", 7) == 0 && tk != NULL)
		ok = tokens_check(tk, auth + 7) != NULL;
	else if (cookie != NULL && tk != NULL && ui_cookie_get(cookie,
	    UI_COOKIE, tok, sizeof tok) == 0)
		ok = tokens_check(tk, tok) != NULL;
	explicit_bzero(tok, sizeof tok);
	if (!ok)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
}

/* GET /ui, /ui/ and /ui/NAME: the page and its files. */
void
ui_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const struct ui_asset	*a;
	struct evbuffer		*b;
	const char		*name = id, *path = ui_path(req);

	/* "/ui" and "/ui/" have no file segment (and no id). */
	if (strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0)
		name = "index.html";

	if (!ui_on) {
		api_error(req, 404, "the dashboard is off (gmux serve --ui, "
		    "or UI=1 in the config)");
		return;
	}
	if (strcmp(name, "login") == 0)
		name = "login.html";
	if ((a = ui_asset_find(name)) == NULL) {
		api_error(req, 404, "no such file: /ui/%s", name);
		return;
	}
	b = evbuffer_new();
	evbuffer_add_reference(b, a->data, a->len, NULL, NULL);
	ui_security_headers(req);
	ui_close_anonymous(req, who);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", ui_asset_type(a->name));
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
ui_set_cookie(struct evhttp_request *req, const char *value, int clear)
{
	char	*c;

	xasprintf(&c, "%s=%s; Path=/; HttpOnly; Secure; SameSite=Strict%s",
	    UI_COOKIE, value, clear ? "; Max-Age=0" : "");
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Set-Cookie", c);
	explicit_bzero(c, strlen(c));
	free(c);
}

/*
 * POST /ui/login with Authorization: Bearer TOKEN (checked already, as on
 * every TCP request): the token goes into the cookie.  The page sends it
 * once, from a form, never in a URL.
 */
void
ui_login(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const char	*auth = ui_header(req, "Authorization");
	json_t		*o;

	if (!ui_on) {
		api_error(req, 404, "the dashboard is off");
		return;
	}
	if (who->transport != API_TCP) {
		api_error(req, 400, "login: on the host's socket no token is "
		    "needed (gmux ui)");
		return;
	}
	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 ||
	    strcspn(auth + 7, ";, \t\"\\") != strlen(auth + 7)) {
		api_error(req, 400, "Authorization: a bearer token is needed");
		return;
	}
	ui_set_cookie(req, auth + 7, 0);
	/* The page's next requests come with the cookie, on new connections. */
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Connection", "close");
	o = json_pack("{s:s}", "owner", who->owner);
	api_reply(req, 200, o);
	json_decref(o);
}

/*
 * POST /ui/logout: the cookie is cleared (nothing else to undo).  A
 * request that carries the cookie must carry its CSRF value too, as any
 * change: another site's form must not log the page out.  One without a
 * cookie has nothing to clear, and is answered as done.
 */
void
ui_logout(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const char	*cookie = ui_header(req, "Cookie");
	char		 tok[300], *cause = NULL;
	int		 rc = 0;

	if (cookie != NULL &&
	    ui_cookie_get(cookie, UI_COOKIE, tok, sizeof tok) == 0) {
		if (*tok != '\0')
			rc = ui_csrf_check(req, tok, &cause);
		explicit_bzero(tok, sizeof tok);
	}
	if (rc != 0) {
		api_error(req, 403, "%s", cause);
		free(cause);
		return;
	}
	ui_set_cookie(req, "", 1);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Connection", "close");
	api_reply(req, 200, NULL);
}

/*
 * GET /v1/session: who the page is (owner, whether it sees every owner's
 * work), the CSRF value its changes must carry, and whether this host is
 * part of a cluster (the dashboard shows the members only then).
 */
void
api_session(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const char	*cookie = ui_header(req, "Cookie");
	char		 tok[300], csrf[UI_CSRF_LEN + 1];
	json_t		*o;
	int		 tcp = who->transport == API_TCP;

	/* a token without this member's cluster sees no cluster here */
	o = json_pack("{s:s,s:b,s:s,s:b,s:o,s:s}", "owner", who->owner,
	    "admin", who->admin, "via", tcp ? "tls" : "socket", "ui", ui_on,
	    "cluster", who->ungranted ? json_null() : ui_cluster(), "version",
	    GMUX_VERSION);
	if (tcp && cookie != NULL &&
	    ui_cookie_get(cookie, UI_COOKIE, tok, sizeof tok) == 0) {
		ui_csrf_of(tok, csrf);
		json_object_set_new(o, "csrf", json_string(csrf));
		explicit_bzero(tok, sizeof tok);
	} else
		json_object_set_new(o, "csrf", json_null());
	api_reply(req, 200, o);
	json_decref(o);
}

/* Once the daemon serves: the dashboard's sampler, and where it is. */
void
ui_start(void)
{
	const char	*v = config_get("UI"), *host;
	u_int		 port;

	if (!ui_on && (v == NULL || strcmp(v, "1") != 0))
		return;
	ui_on = 1;
	ui_events_start();
	if ((port = server_tls_port()) != 0) {
		if ((host = server_tls_host()) == NULL)
			host = "THIS-HOST";
		fprintf(stderr, "gmux: dashboard at https://%s%s%s:%u/ui/\n",
		    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ?
		    "]" : "", port);
	} else
		fprintf(stderr, "gmux: dashboard on this host: run gmux ui\n");
}
