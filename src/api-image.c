/*
 * api-image.c: the routes of images that travel (docs/containers.md,
 * "Images that travel"): whether the host has an image, and loading one
 * the client has synced into the blob store.  The work is image.c's.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "gmux.h"

/* {"id":ID,"state":S[,"error":E]}: a new object. */
static json_t *
api_image_json(const char *id, const char *state, const char *error)
{
	return (json_pack("{s:s,s:s,s:s?}", "id", id, "state", state,
	    "error", error));
}

/* Replies with o and drops it. */
static void
api_image_reply(struct evhttp_request *req, int code, json_t *o)
{
	api_reply(req, code, o);
	json_decref(o);
}

/* GET /v1/images/ID: present, loading, failed; 404 if unknown here. */
void
api_image_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	const char	*state, *error;

	(void)who;
	if (!digest_valid(id)) {
		api_error(req, 400, "id: '%.80s' is not an image's ID (64 "
		    "hex digits)", id);
		return;
	}
	if ((state = image_state(id, 1, &error)) == NULL) {
		api_error(req, 404, "no image %.12s here", id);
		return;
	}
	api_image_reply(req, 200, api_image_json(id, state, error));
}

/*
 * Whether every file of m is in the store: NULL, or the digests missing
 * (a new array).
 */
static json_t *
api_image_missing(struct cas *c, const struct manifest *m)
{
	json_t	*missing = NULL;
	size_t	 i;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].type != MENTRY_FILE ||
		    cas_has(c, m->v[i].digest, NULL))
			continue;
		if (missing == NULL)
			missing = json_array();
		json_array_append_new(missing, json_string(m->v[i].digest));
	}
	return (missing);
}

/* POST /v1/images {"id":ID,"manifest":D}: loads the image synced as D. */
void
api_images_post(struct evhttp_request *req, const char *unused,
    const struct api_who *who)
{
	struct manifest	 m;
	struct cas	*c;
	json_t		*o, *missing;
	const char	*id, *md, *state, *error;
	char		*cause = NULL;
	int		 code;

	(void)unused;
	(void)who;
	if ((o = api_body(req, &cause)) == NULL) {
		api_error(req, 400, "%s", cause);
		free(cause);
		return;
	}
	id = json_string_value(json_object_get(o, "id"));
	md = json_string_value(json_object_get(o, "manifest"));
	if (id == NULL || !digest_valid(id)) {
		api_error(req, 400,
		    "id: must be an image's ID (64 hex digits)");
		goto out;
	}
	if (md == NULL || !digest_valid(md)) {
		api_error(req, 400, "manifest: must be a digest");
		goto out;
	}
	if ((state = image_state(id, 0, &error)) != NULL &&
	    strcmp(state, "failed") != 0) {
		api_image_reply(req, strcmp(state, "present") == 0 ? 200 : 202,
		    api_image_json(id, state, NULL));
		goto out;
	}
	if ((c = api_remote_cas(req)) == NULL)
		goto out;
	manifest_init(&m);
	if ((code = remote_host_load(c, md, &m, &cause)) != 0) {
		api_error(req, code, "manifest: %s", cause);
		free(cause);
		goto out;
	}
	if ((missing = api_image_missing(c, &m)) != NULL) {
		api_image_reply(req, 412, json_pack("{s:s,s:o}", "error",
		    "manifest: some of its blobs are not here", "missing",
		    missing));
	} else if (image_load(c, id, &m, &code, &cause) != 0) {
		api_error(req, code, "%s", cause);
		free(cause);
	} else
		api_image_reply(req, 202, api_image_json(id, "loading", NULL));
	manifest_clear(&m);
out:
	json_decref(o);
}
