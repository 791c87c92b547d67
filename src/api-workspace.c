/*
 * api-workspace.c: a workspace's images through the daemon, so that an
 * owner on a laptop has them too (docs/containers.md, "Saving a
 * workspace"): POST /v1/jobs/ID/save commits the workspace's container,
 * GET /v1/images lists the caller's saved images.  Podman runs off the
 * loop (proc_async), as the podman that sees the owner's containers: its
 * tenant account's, in its home (its own store), else the daemon's.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "gmux.h"

#define SAVE_MS		(10 * 60 * 1000)
#define IMAGES_MS	(60 * 1000)

/*
 * What a save runs, before the owner's podman: it waits (30 s at most)
 * for podman to know the container (a workspace is running before its
 * container is made), then commits it with the owner's label.  Names are
 * arguments, never part of the script.
 */
#define SAVE_SH "exec 2>&1; c=$1 i=$2 o=$3; shift 3; n=0; " \
    "until \"$@\" container exists \"$c\"; do n=$((n + 1)); " \
    "[ $n -lt 300 ] || break; sleep 0.1; done; " \
    "exec \"$@\" commit -q --change \"LABEL gmux.owner=$o\" \"$c\" \"$i\""

struct ws_call {
	struct evhttp_request	*req;
	char			*image;		/* saved as */
};

/*
 * Adds the owner's podman to *argv: as its account where it has one,
 * else the daemon's.  0, or -1 with *cause (no podman, no account yet).
 */
static int
ws_podman(const char *owner, char ***argv, char **cause)
{
	const char	*podman;
	uid_t		 uid;
	gid_t		 gid;
	char		*home = NULL, **acct;
	size_t		 i;
	int		 rc;

	if ((podman = container_podman(cause)) == NULL)
		return (-1);
	if ((rc = tenant_account(owner, &uid, &gid, &home, cause)) != 0 &&
	    rc != 1) {
		free(home);
		return (-1);
	}
	if (rc == 0) {
		strv_add(argv, podman);
		return (0);
	}
	acct = container_account_argv(uid, gid, home, NULL, 0);
	for (i = 0; acct[i] != NULL; i++)
		strv_add(argv, acct[i]);
	strv_free(acct);
	free(home);
	return (0);
}

/* Runs argv off the loop for req; done answers.  -1 answered if not. */
static int
ws_start(struct evhttp_request *req, char **argv, int ms, proc_async_cb done,
    const char *image)
{
	struct ws_call	*w;
	char		*cause = NULL;

	w = xcalloc(1, sizeof *w);
	w->req = req;
	w->image = image != NULL ? xstrdup(image) : NULL;
	if (proc_async_start(argv, ms, done, w, &cause) == 0)
		return (0);
	api_error(req, 500, "podman: %s", cause);
	free(cause);
	free(w->image);
	free(w);
	return (-1);
}

/* The last line of out (podman's reason), in place. */
static const char *
ws_last_line(char *out)
{
	char	*p;

	if (out == NULL)
		return ("");
	while ((p = strrchr(out, '\n')) != NULL && p[1] == '\0')
		*p = '\0';
	return ((p = strrchr(out, '\n')) != NULL ? p + 1 : out);
}

static void
ws_call_free(struct ws_call *w)
{
	free(w->image);
	free(w);
}

/* A save's end: 200 {"image", "id"}, or 502 and podman's reason. */
static void
ws_saved(char *out, int status, void *arg)
{
	struct ws_call	*w = arg;
	const char	*line = ws_last_line(out);
	json_t		*o;

	log_debug("%s: %s: %d", __func__, w->image, status);
	if (status == 0) {
		o = json_pack("{s:s,s:s}", "image", w->image, "id", line);
		api_reply(w->req, 200, o);
		json_decref(o);
	} else
		api_error(w->req, 502, "save: podman commit failed (%d): %s",
		    status, line);
	free(out);
	ws_call_free(w);
}

/*
 * The name a save is kept as: over TCP, in the owner's own namespace,
 * localhost/OWNER/NAME[:TAG] (image "NAME[:TAG]" or "localhost/NAME..."),
 * so that owners' names never meet; on the host itself, image as given.
 * NULL with *cause.
 */
static char *
ws_save_name(const char *image, const struct api_who *who, char **cause)
{
	const char	*rest = image;
	char		*name;

	if (jobspec_image_ok(image, cause) != 0)
		return (NULL);
	if (who->transport != API_TCP)
		return (xstrdup(image));
	if (strncmp(rest, "localhost/", 10) == 0)
		rest += 10;
	if (strchr(rest, '/') != NULL || strchr(rest, '@') != NULL) {
		xasprintf(cause, "image: a remote save is named NAME[:TAG] "
		    "(kept as localhost/%s/NAME[:TAG])", who->owner);
		return (NULL);
	}
	xasprintf(&name, "localhost/%s/%s", who->owner, rest);
	if (jobspec_image_ok(name, cause) != 0) {
		free(name);
		return (NULL);
	}
	return (name);
}

/* The body's "image" (the only key), or NULL answered 400. */
static char *
ws_save_body(struct evhttp_request *req, const struct api_who *who)
{
	json_t		*body, *v;
	const char	*key;
	char		*cause = NULL, *name = NULL;

	if ((body = api_body(req, &cause)) == NULL)
		goto out;
	json_object_foreach(body, key, v) {
		if (strcmp(key, "image") != 0) {
			xasprintf(&cause, "%.64s: unknown key (image is the "
			    "only one)", key);
			goto out;
		}
	}
	if (!json_is_string(v = json_object_get(body, "image")))
		xasprintf(&cause, "image: a string is needed");
	else
		name = ws_save_name(json_string_value(v), who, &cause);
out:
	if (name == NULL)
		api_error(req, 400, "%s", cause);
	free(cause);
	json_decref(body);
	return (name);
}

/* POST /v1/jobs/ID/save {"image"}: 200 {"image", "id"} once committed. */
void
api_job_save(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	char		*name, *ctr, **argv = NULL, *cause = NULL;

	if ((name = ws_save_body(req, who)) == NULL)
		return;
	if ((j = api_job_lookup(req, id, who)) == NULL)
		goto out;
	if (!j->req.spec.workspace || j->req.spec.image == NULL) {
		api_error(req, 400, "%s is not a workspace", j->name);
		goto out;
	}
	if (j->state != JOB_RUNNING) {
		api_error(req, 409, "%s is not running (%s)", j->name,
		    job_state_name(j->state));
		goto out;
	}
	argv = xcalloc(1, sizeof *argv);
	ctr = container_name(j->id);
	strv_add(&argv, "/bin/sh");
	strv_add(&argv, "-c");
	strv_add(&argv, SAVE_SH);
	strv_add(&argv, "sh");
	strv_add(&argv, ctr);
	strv_add(&argv, name);
	strv_add(&argv, j->owner);
	free(ctr);
	if (ws_podman(j->owner, &argv, &cause) != 0) {
		api_error(req, 503, "%s", cause);
		free(cause);
		goto out;
	}
	log_debug("%s: %s as %s", __func__, j->name, name);
	(void)ws_start(req, argv, SAVE_MS, ws_saved, name);
out:
	strv_free(argv);
	free(name);
}

/*
 * One image of podman images --format json as the listing has it:
 * {"image" (its first name), "names", "id" (12 digits), "created" (ms),
 * "size"}.  A new object.
 */
static json_t *
ws_image_json(json_t *e)
{
	json_t		*names = json_object_get(e, "Names");
	const char	*id = json_string_value(json_object_get(e, "Id"));
	char		 short_id[13];

	snprintf(short_id, sizeof short_id, "%s", id != NULL ? id : "");
	if (!json_is_array(names))
		names = json_array();
	else
		json_incref(names);
	return (json_pack("{s:O,s:o,s:s,s:I,s:I}", "image",
	    json_array_size(names) > 0 ? json_array_get(names, 0) :
	    json_null(), "names", names, "id", short_id, "created",
	    (json_int_t)json_integer_value(json_object_get(e, "Created")) *
	    1000, "size", (json_int_t)json_integer_value(json_object_get(e,
	    "Size"))));
}

/* The listing's end: 200 {"images": [...]}, or 502. */
static void
ws_listed(char *out, int status, void *arg)
{
	struct ws_call	*w = arg;
	json_t		*all, *e, *v;
	size_t		 i;

	all = status == 0 && out != NULL ? json_loads(out, 0, NULL) : NULL;
	if (!json_is_array(all)) {
		api_error(w->req, 502, "images: podman images failed (%d)",
		    status);
		goto out;
	}
	v = json_array();
	json_array_foreach(all, i, e)
		json_array_append_new(v, ws_image_json(e));
	e = json_pack("{s:o}", "images", v);
	api_reply(w->req, 200, e);
	json_decref(e);
out:
	json_decref(all);
	free(out);
	ws_call_free(w);
}

/* GET /v1/images: the caller's saved images (labelled gmux.owner). */
void
api_images_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	char	**argv, *label, *cause = NULL;

	argv = xcalloc(1, sizeof *argv);
	if (ws_podman(who->owner, &argv, &cause) != 0) {
		api_error(req, 503, "%s", cause);
		free(cause);
		strv_free(argv);
		return;
	}
	xasprintf(&label, "label=gmux.owner=%s", who->owner);
	strv_add(&argv, "images");
	strv_add(&argv, "--filter");
	strv_add(&argv, label);
	strv_add(&argv, "--format");
	strv_add(&argv, "json");
	(void)ws_start(req, argv, IMAGES_MS, ws_listed, NULL);
	strv_free(argv);
	free(label);
}
