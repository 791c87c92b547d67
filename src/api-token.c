/*
 * api-token.c: the host's tokens, managed over the Unix socket only
 * (server-tls.c refuses these routes over TCP).  A new token is shown
 * once, in the reply that makes it, with the line its holder pastes.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"

static struct tokens *
api_tokens(struct evhttp_request *req)
{
	struct tokens	*t;
	char		*cause = NULL;

	if ((t = server_tls_tokens(&cause)) == NULL ||
	    tokens_refresh(t, &cause) != 0) {
		api_error(req, 500, "%s", cause);
		free(cause);
		return (NULL);
	}
	return (t);
}

/* GET /v1/tokens: ids, owners, dates; never a token or its hash. */
void
api_tokens_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tokens	*t;
	json_t		*a;

	if ((t = api_tokens(req)) == NULL)
		return;
	a = tokens_to_json(t, cluster_grant_own());
	api_reply(req, 200, a);
	json_decref(a);
}

/*
 * POST /v1/tokens {"owner": NAME}: a new invite for owner, shown this
 * once: each machine that pastes its line trades it for a token of its
 * own (POST /v1/join).
 */
void
api_tokens_add(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tokens	*t;
	json_t		*body, *o;
	const char	*owner;
	char		*cause = NULL, *secret, *tid, *invite;

	if ((body = api_body(req, &cause)) == NULL ||
	    (owner = json_string_value(json_object_get(body, "owner"))) ==
	    NULL) {
		api_error(req, 400, "%s", cause ? cause : "owner: a user name "
		    "is needed");
		goto out;
	}
	if (tenant_owner_ok(owner, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if ((t = api_tokens(req)) == NULL)
		goto out;
	if (tokens_invite(t, owner, &secret, &tid, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if (server_tls_grant_own(tid, &cause) != 0) {
		api_error(req, 500, "%s", cause);
		explicit_bzero(secret, strlen(secret));
		free(secret);
		free(tid);
		goto out;
	}
	o = json_pack("{s:s, s:s, s:s}", "id", tid, "owner", owner, "token",
	    secret);
	if ((invite = server_tls_invite(secret)) != NULL) {
		json_object_set_new(o, "invite", json_string(invite));
		explicit_bzero(invite, strlen(invite));
		free(invite);
	}
	log_info("invite %s made for %s", tid, owner);
	api_reply(req, 201, o);
	json_decref(o);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	free(tid);
out:
	free(cause);
	json_decref(body);
}

/*
 * The cluster a grant's body names ({"cluster": ID}); NULL with 400 sent
 * if it names none, or *none set if the body is empty and may be.
 */
static json_t *
api_token_cluster(struct evhttp_request *req, int *none)
{
	struct evbuffer	*b = evhttp_request_get_input_buffer(req);
	json_t		*body;
	char		*cause = NULL;

	*none = 0;
	if (evbuffer_get_length(b) == 0) {
		*none = 1;
		return (NULL);
	}
	if ((body = api_body(req, &cause)) == NULL ||
	    !json_is_string(json_object_get(body, "cluster"))) {
		api_error(req, 400, "%s", cause != NULL ? cause : "cluster: "
		    "a cluster id is needed");
		free(cause);
		json_decref(body);
		return (NULL);
	}
	return (body);
}

/*
 * POST /v1/tokens/ID/grant {"cluster"} (on), or revoke with a cluster:
 * the token is granted it, or no longer, at once on every host that
 * reads its file.
 */
static void
api_token_grant_set(struct evhttp_request *req, const char *id,
    json_t *body, int on)
{
	struct tokens	*t;
	json_t		*o;
	const char	*cid = json_string_value(json_object_get(body,
			    "cluster"));
	char		*cause = NULL;

	if ((t = api_tokens(req)) == NULL)
		return;
	if (tokens_grant(t, id, cid, on, cluster_grant_own(), &cause) != 0) {
		api_error(req, strncmp(cause, "no token", 8) == 0 ? 404 : 400,
		    "%s", cause);
		free(cause);
		return;
	}
	log_info("token %s %s cluster %s", id, on ? "granted" : "revoked",
	    cid);
	o = json_pack("{s:s, s:s, s:b}", "id", id, "cluster", cid, "granted",
	    on);
	api_reply(req, 200, o);
	json_decref(o);
}

void
api_token_grant(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*body;
	int	 none;

	if ((body = api_token_cluster(req, &none)) == NULL) {
		if (none)
			api_error(req, 400, "cluster: a cluster id is needed");
		return;
	}
	api_token_grant_set(req, id, body, 1);
	json_decref(body);
}

/*
 * POST /v1/tokens/ID/revoke: the token stops working at once; with a
 * body {"cluster"}, only its grant of that cluster goes.
 */
void
api_token_revoke(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tokens	*t;
	json_t		*o, *body;
	char		*cause = NULL;
	int		 none;

	if ((body = api_token_cluster(req, &none)) != NULL) {
		api_token_grant_set(req, id, body, 0);
		json_decref(body);
		return;
	}
	if (!none || (t = api_tokens(req)) == NULL)
		return;
	if (tokens_revoke(t, id, &cause) != 0) {
		api_error(req, 404, "%s", cause);
		free(cause);
		return;
	}
	log_info("token %s revoked", id);
	o = json_pack("{s:s, s:b}", "id", id, "revoked", 1);
	api_reply(req, 200, o);
	json_decref(o);
}
