/*
 * container-config.c: what the host's operator says of containers in the
 * config (docs/containers.md, "Templates, images and the policy"): the
 * templates a workspace is made from (CONTAINERS_TEMPLATES), whether an
 * owner may run an image of its own (CONTAINERS_ALLOW_OWN_IMAGES), and
 * the images pulled ahead where a registry is reachable
 * (CONTAINERS_IMAGES): off the loop, a failure only a warning.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "jobspec-int.h"

#define CC_PULL_MS	(30 * 60 * 1000)	/* one image's pull */
#define CC_MAX_ITEMS	64

/*
 * One pre-pull after the other: what is left, and what came of each, as
 * saved for gmux doctor in $GMUX_HOME/images.
 */
static struct {
	char	**left;
	u_int	  next;
	json_t	 *done;		/* {IMAGE: "ok" | why} */
} cc_pull;

/* Splits s at sep into trimmed, non-empty words (free with strv_free). */
static char **
cc_split(const char *s, int sep)
{
	char		**v;
	const char	 *p, *end;
	size_t		  n = 0;

	v = xcalloc(CC_MAX_ITEMS + 1, sizeof *v);
	for (p = s; p != NULL && *p != '\0' && n < CC_MAX_ITEMS; p = end) {
		if ((end = strchr(p, sep)) == NULL)
			end = p + strlen(p);
		while (p < end && isspace((u_char)*p))
			p++;
		if (end > p) {
			v[n] = xstrndup(p, (size_t)(end - p));
			while (*v[n] != '\0' &&
			    isspace((u_char)v[n][strlen(v[n]) - 1]))
				v[n][strlen(v[n]) - 1] = '\0';
			n++;
		}
		if (*end == (char)sep)
			end++;
	}
	return (v);
}

/*
 * Template t ("NAME=IMAGE[,FLAG[=VALUE]...]", the flags gmux run's) as a
 * request: its image and flags into o.  Its name in *name (the caller
 * frees it); -1 with *cause if the entry is bad.
 */
static int
cc_template_parse(const char *t, char **name, json_t *o, char **cause)
{
	char	**parts, *eq, *why = NULL;
	int	   i, rc = -1;
	size_t	   k;

	*name = NULL;
	parts = cc_split(t, ',');
	if (parts[0] == NULL || (eq = strchr(parts[0], '=')) == NULL ||
	    eq == parts[0]) {
		xasprintf(cause, "%.64s: NAME=IMAGE[,FLAG=VALUE...]", t);
		goto out;
	}
	*eq++ = '\0';
	if (jobspec_image_ok(eq, &why) != 0)
		goto bad;
	json_object_set_new(o, "image", json_string(eq));
	for (k = 1; parts[k] != NULL; k++) {
		if ((eq = strchr(parts[k], '=')) != NULL)
			*eq++ = '\0';
		if ((i = runopt_find(parts[k])) == -1 ||
		    strcmp(parts[k], "image") == 0 ||
		    (runopt_has_arg(i) != 0) != (eq != NULL)) {
			xasprintf(&why, "%.64s: not one of gmux run's flags "
			    "(share=F, mem=SIZE, deny-net, ...)", parts[k]);
			goto bad;
		}
		if (runopt_apply(o, i, eq, &why) != 0)
			goto bad;
	}
	*name = xstrdup(parts[0]);
	rc = 0;
	goto out;
bad:
	xasprintf(cause, "%.64s: %s", parts[0], why);
	free(why);
out:
	strv_free(parts);
	return (rc);
}

/*
 * The template called name, as a request (a new object), or NULL; *known
 * (the caller frees it) lists the good ones' names.  A bad entry is not a
 * template (container_config_start says why in the log).
 */
static json_t *
cc_template_find(const char *name, char **known)
{
	char	**all, *n = NULL, *cause = NULL, *k;
	json_t	 *o, *found = NULL;
	size_t	  i;

	*known = NULL;
	all = cc_split(config_get("CONTAINERS_TEMPLATES"), ';');
	for (i = 0; all[i] != NULL; i++) {
		o = json_object();
		if (cc_template_parse(all[i], &n, o, &cause) != 0) {
			free(cause);
			cause = NULL;
			json_decref(o);
			continue;
		}
		if (found == NULL && strcmp(n, name) == 0)
			found = json_incref(o);
		xasprintf(&k, "%s%s%s", *known != NULL ? *known : "",
		    *known != NULL ? ", " : "", n);
		free(*known);
		*known = k;
		free(n);
		json_decref(o);
	}
	strv_free(all);
	return (found);
}

/*
 * A request's "template": its image and flags go into body o (the
 * request's own flags win) before the request is read.  0, or -1 with
 * *cause (a 400: an unknown template, a template and an image).
 */
int
container_config_template(json_t *o, char **cause)
{
	json_t		*t, *tpl, *v;
	const char	*name, *k;
	char		*known;

	if ((t = json_object_get(o, "template")) == NULL)
		return (0);
	if (!json_is_string(t)) {
		xasprintf(cause, "template: must be a template's name");
		return (-1);
	}
	name = json_string_value(t);
	if (json_object_get(o, "image") != NULL) {
		xasprintf(cause, "template: %.64s names its image; not with "
		    "image", name);
		return (-1);
	}
	if ((tpl = cc_template_find(name, &known)) == NULL) {
		xasprintf(cause, "template: no template %.64s here (%s%s)",
		    name, known != NULL ? "CONTAINERS_TEMPLATES has " :
		    "CONTAINERS_TEMPLATES names none", known != NULL ? known :
		    "");
		free(known);
		return (-1);
	}
	free(known);
	json_object_foreach(tpl, k, v) {
		if (json_object_get(o, k) == NULL)
			json_object_set(o, k, v);
	}
	json_decref(tpl);
	return (0);
}

/* Whether image is a template's or one of CONTAINERS_IMAGES. */
static int
cc_offered(const char *image)
{
	char	**v, *name, *cause = NULL;
	json_t	 *o;
	size_t	  i;
	int	  found = 0;

	v = cc_split(config_get("CONTAINERS_IMAGES"), ',');
	for (i = 0; v[i] != NULL && !found; i++)
		found = strcmp(v[i], image) == 0;
	strv_free(v);
	v = cc_split(config_get("CONTAINERS_TEMPLATES"), ';');
	for (i = 0; v[i] != NULL && !found; i++) {
		o = json_object();
		if (cc_template_parse(v[i], &name, o, &cause) == 0)
			found = strcmp(json_string_value(json_object_get(o,
			    "image")), image) == 0;
		free(cause);
		cause = NULL;
		free(name);
		json_decref(o);
	}
	strv_free(v);
	return (found);
}

/*
 * Whether request r's image may run here: with CONTAINERS_ALLOW_OWN_IMAGES
 * =0, only a template's image or one of CONTAINERS_IMAGES.  0, or -1 with
 * *cause (a 403).
 */
int
container_config_allowed(const struct jobreq *r, char **cause)
{
	if (r->spec.image == NULL ||
	    config_uint("CONTAINERS_ALLOW_OWN_IMAGES", 1, 0, 1) == 1 ||
	    cc_offered(r->spec.image))
		return (0);
	xasprintf(cause, "image: %.255s is not offered here (the host's "
	    "policy, CONTAINERS_ALLOW_OWN_IMAGES=0: a template's image or "
	    "one of CONTAINERS_IMAGES)", r->spec.image);
	return (-1);
}

/* Saves what the pre-pulls found, for gmux doctor. */
static void
cc_pull_save(void)
{
	char	*path, *text, *cause = NULL;

	xasprintf(&path, "%s/images", path_home());
	text = json_dumps(cc_pull.done, JSON_SORT_KEYS);
	if (write_file_atomic(path, text, strlen(text), 0600, &cause) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
	}
	free(text);
	free(path);
}

static void	cc_pull_next(void);

/* One image's pull is over: its last line says why if it failed. */
static void
cc_pull_done(char *out, int status, void *arg)
{
	const char	*image = arg;
	char		*why, *nl;

	if (status == PROC_ASYNC_CANCELLED) {	/* the daemon is going */
		free(out);
		strv_free(cc_pull.left);
		cc_pull.left = NULL;
		return;
	}
	if (status == 0) {
		log_debug("%s: %s is here", __func__, image);
		json_object_set_new(cc_pull.done, image, json_string("ok"));
	} else {
		while (out != NULL && (nl = strrchr(out, '\n')) != NULL &&
		    nl[1] == '\0')
			*nl = '\0';
		nl = out != NULL ? strrchr(out, '\n') : NULL;
		xasprintf(&why, "could not be pulled (%d): %.512s", status,
		    out == NULL ? "killed" : nl != NULL ? nl + 1 : out);
		log_warnx("CONTAINERS_IMAGES: %s %s", image, why);
		json_object_set_new(cc_pull.done, image, json_string(why));
		free(why);
	}
	free(out);
	cc_pull_save();
	cc_pull_next();
}

/*
 * Pulls the next image that is not here yet, off the loop: podman's own
 * messages (stderr too) are its output, so a failure says why.
 */
static void
cc_pull_next(void)
{
	static const char	 sh[] = "\"$0\" image exists \"$1\" && "
				     "exit 0; exec \"$0\" pull -q \"$1\" 2>&1";
	char			*argv[6], *cause = NULL;
	const char		*podman;
	char			*image;

	if (cc_pull.left == NULL || cc_pull.left[cc_pull.next] == NULL ||
	    (podman = container_podman(NULL)) == NULL) {
		strv_free(cc_pull.left);
		cc_pull.left = NULL;
		return;
	}
	image = cc_pull.left[cc_pull.next++];
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)sh;
	argv[3] = (char *)podman;
	argv[4] = image;
	argv[5] = NULL;
	if (proc_async_start(argv, CC_PULL_MS, cc_pull_done, image,
	    &cause) != 0) {
		cc_pull_done(xstrdup(cause), 127, image);
		free(cause);
	}
}

/*
 * At the daemon's start: says in the log what is wrong with the
 * templates, and starts pulling CONTAINERS_IMAGES (a bad name or a pull
 * that fails is a warning, never fatal).
 */
void
container_config_start(void)
{
	char	**v, *name, *cause = NULL;
	json_t	 *o;
	size_t	  i;

	v = cc_split(config_get("CONTAINERS_TEMPLATES"), ';');
	for (i = 0; v[i] != NULL; i++) {
		o = json_object();
		if (cc_template_parse(v[i], &name, o, &cause) != 0) {
			log_warnx("CONTAINERS_TEMPLATES: %s", cause);
			free(cause);
			cause = NULL;
		}
		free(name);
		json_decref(o);
	}
	strv_free(v);
	json_decref(cc_pull.done);
	cc_pull.done = json_object();
	strv_free(cc_pull.left);
	cc_pull.left = NULL;
	cc_pull.next = 0;
	v = cc_split(config_get("CONTAINERS_IMAGES"), ',');
	for (i = 0; v[i] != NULL; i++) {
		if (jobspec_image_ok(v[i], &cause) == 0) {
			strv_add(&cc_pull.left, v[i]);
			continue;
		}
		log_warnx("CONTAINERS_IMAGES: %s", cause);
		json_object_set_new(cc_pull.done, v[i], json_string(cause));
		free(cause);
		cause = NULL;
	}
	strv_free(v);
	if (cc_pull.left == NULL && json_object_size(cc_pull.done) == 0)
		return;
	cc_pull_save();
	cc_pull_next();
}

/*
 * What the last daemon's pre-pulls found (gmux doctor): a new object
 * {IMAGE: "ok" | why}, or NULL where CONTAINERS_IMAGES named none.
 */
json_t *
container_config_images(void)
{
	char	*path, *text, *cause = NULL;
	json_t	*o;

	xasprintf(&path, "%s/images", path_home());
	text = read_file(path, 1024 * 1024, NULL, &cause);
	free(path);
	free(cause);
	if (text == NULL)
		return (NULL);
	o = json_loads(text, 0, NULL);
	free(text);
	if (o != NULL && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return (o);
}
