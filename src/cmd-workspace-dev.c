/*
 * cmd-workspace-dev.c: gmux workspace create NAME --devcontainer FILE.
 * The file's image (or the image built here from its build.dockerfile),
 * its containerEnv, mounts, forwardPorts and postCreateCommand make the
 * workspace's request; what gmux cannot honour is refused, naming the
 * field, rather than dropped.
 */

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define DEV_MAX_FILE	(1024 * 1024)

/*
 * Exits 2 with the message (for the file), formatted on the stack: what
 * the caller held is freed before, so nothing is left at exit.
 */
static dead void printflike(2, 3)
dev_fail(const char *file, const char *fmt, ...)
{
	va_list	 ap;
	char	 s[1024];

	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	cmd_usage_error(&cmd_workspace_entry, "devcontainer: %s: %s", file,
	    s);
}

/* A clash with the command line; NULL. */
static const char *
dev_refused(json_t *o, const struct devcontainer *dc)
{
	if (json_object_get(o, "image") != NULL)
		return ("image: --image and --devcontainer are one or the "
		    "other");
	return (NULL);
}

/* A path of the file's, relative to its directory.  Allocated. */
static char *
dev_path(const char *file, const char *rel)
{
	char	*copy, *dir, *p;

	if (*rel == '/')
		return (xstrdup(rel));
	copy = xstrdup(file);
	dir = dirname(copy);
	xasprintf(&p, "%s/%s", dir, rel);
	free(copy);
	return (p);
}

/*
 * A path of the file's (rel, for field) as the host takes it: relative to
 * the directory sent (cwd), which must hold it.  Allocated, or NULL with
 * why.
 */
static char *
dev_rel(const char *file, const char *rel, const char *cwd,
    const char *field, char *why, size_t size)
{
	char	*path, *real, top[PATH_MAX], *out = NULL;
	size_t	 n;

	path = dev_path(file, rel);
	if (realpath(cwd, top) == NULL || (real = realpath(path,
	    NULL)) == NULL) {
		snprintf(why, size, "%s: %.256s: %s", field, path,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	n = strlen(top);
	if (strncmp(real, top, n) == 0 && real[n] == '\0')
		out = xstrdup(".");
	else if (strncmp(real, top, n) == 0 && real[n] == '/')
		out = xstrdup(real + n + 1);
	else
		snprintf(why, size, "%s: %.256s is outside the directory sent "
		    "(%.256s): run create from a directory that holds it",
		    field, real, top);
	free(real);
	free(path);
	return (out);
}

/*
 * The image built on the remote host (docs/containers.md, "A
 * devcontainer's build from a remote"): this directory is synced, then
 * POST /v1/builds, the build's output printed.  Its name, or NULL with
 * why (*code the exit status).
 */
static char *
dev_build_remote(const char *file, const char *name,
    const struct devcontainer *dc, const char *cwd, char *why, size_t size,
    int *code)
{
	const struct remote	*v[1];
	struct client_reply	 r;
	char			 mdigest[DIGEST_HEX], *df, *ctx, *img = NULL;
	const char		*out;
	json_t			*body;
	int			 tries;

	*code = EXIT_USAGE;
	if (hosts_candidates(v, 1) == 0) {
		snprintf(why, size, "no remote host is configured");
		return (NULL);
	}
	if ((df = dev_rel(file, dc->dockerfile, cwd, "build.dockerfile", why,
	    size)) == NULL)
		return (NULL);
	if ((ctx = dev_rel(file, dc->context != NULL ? dc->context : ".",
	    cwd, "build.context", why, size)) == NULL) {
		free(df);
		return (NULL);
	}
	memset(&r, 0, sizeof r);
	for (tries = 0; tries < 2; tries++) {
		client_reply_clear(&r);
		if (run_remote_sync(v[0], cwd, 1, "gmux workspace",
		    mdigest) != 0)
			exit(1);
		body = json_pack("{s:s,s:s,s:s,s:s}", "manifest", mdigest,
		    "name", name, "dockerfile", df, "context", ctx);
		if (client_call_at(&v[0]->target, "POST", "/v1/builds", body,
		    &r) != 0)
			r.status = 0;
		json_decref(body);
		if (r.status != 412)
			break;
	}
	free(df);
	free(ctx);
	if ((out = json_string_value(json_object_get(r.body,
	    "output"))) != NULL)
		fputs(out, stderr);
	if (r.status == 200 && json_is_string(json_object_get(r.body,
	    "image")))
		img = xstrdup(json_string_value(json_object_get(r.body,
		    "image")));
	else {
		snprintf(why, size, "%s: %s", v[0]->name, r.error != NULL ?
		    r.error : "refused");
		*code = r.status == 400 ? EXIT_USAGE : 1;
	}
	client_reply_clear(&r);
	return (img);
}

/*
 * The image the file's Dockerfile makes (podman build, here), named for
 * the workspace: its name (the caller frees it), or NULL with why.
 */
static char *
dev_build(const char *file, const char *name, const struct devcontainer *dc,
    char *why, size_t size)
{
	const char	*podman;
	char		*df, *ctx, *img, *cause = NULL, *argv[10], *p;
	int		 status;

	if ((podman = container_podman(&cause)) == NULL) {
		snprintf(why, size, "%s", cause);
		free(cause);
		return (NULL);
	}
	/* A repository's name is lower case. */
	xasprintf(&img, "localhost/gmux-devcontainer-%s:latest", name);
	for (p = img; *p != '\0'; p++)
		*p = (char)tolower((u_char)*p);
	if (jobspec_image_ok(img, &cause) != 0) {
		snprintf(why, size, "name: %.128s is not fit to name its image "
		    "(letters, digits and ._-)", name);
		free(cause);
		free(img);
		return (NULL);
	}
	df = dev_path(file, dc->dockerfile);
	ctx = dev_path(file, dc->context != NULL ? dc->context : ".");
	argv[0] = (char *)podman;
	argv[1] = (char *)"build";
	argv[2] = (char *)"-q";
	argv[3] = (char *)"--pull=never";
	argv[4] = (char *)"-f";
	argv[5] = df;
	argv[6] = (char *)"-t";
	argv[7] = img;
	argv[8] = ctx;
	argv[9] = NULL;
	free(proc_output(argv, 1800000, &status));
	free(df);
	free(ctx);
	if (status != 0) {
		snprintf(why, size, "build.dockerfile: podman build failed "
		    "(%d; podman build -f %.256s shows why)", status,
		    dc->dockerfile);
		free(img);
		return (NULL);
	}
	return (img);
}

/*
 * One of mounts ("source=A,target=B[,type=T][,readonly]") as the
 * request's object, a relative source of the file's directory; NULL with
 * why naming mount i.
 */
static json_t *
dev_mount(const char *file, const char *text, size_t i, char *why,
    size_t size)
{
	json_t	*m = json_object();
	char	**kv = NULL, *copy, *w, *last, *eq, *src;
	size_t	  k;

	copy = xstrdup(text);
	for (w = strtok_r(copy, ",", &last); w != NULL;
	    w = strtok_r(NULL, ",", &last))
		strv_add(&kv, w);
	free(copy);
	for (k = 0; kv != NULL && kv[k] != NULL; k++) {
		if ((eq = strchr(kv[k], '=')) != NULL)
			*eq++ = '\0';
		if ((strcmp(kv[k], "readonly") == 0 ||
		    strcmp(kv[k], "ro") == 0) && (eq == NULL ||
		    strcmp(eq, "true") == 0 || strcmp(eq, "1") == 0))
			json_object_set_new(m, "readonly", json_true());
		else if (eq != NULL && strstr(eq, "${") != NULL) {
			snprintf(why, size, "mounts[%zu]: ${...} is not "
			    "expanded (name the path itself)", i);
			goto bad;
		} else if (eq != NULL && (strcmp(kv[k], "source") == 0 ||
		    strcmp(kv[k], "src") == 0))
			json_object_set_new(m, "source", json_string(eq));
		else if (eq != NULL && (strcmp(kv[k], "target") == 0 ||
		    strcmp(kv[k], "dst") == 0 ||
		    strcmp(kv[k], "destination") == 0))
			json_object_set_new(m, "target", json_string(eq));
		else if (eq != NULL && strcmp(kv[k], "type") == 0)
			json_object_set_new(m, "type", json_string(eq));
		else {
			snprintf(why, size, "mounts[%zu].%.64s: not one gmux "
			    "takes (source, target, type, readonly)", i,
			    kv[k]);
			goto bad;
		}
	}
	if (json_object_get(m, "type") == NULL)
		json_object_set_new(m, "type", json_string("bind"));
	src = (char *)json_string_value(json_object_get(m, "source"));
	if (src != NULL && *src != '/' && strcmp(json_string_value(
	    json_object_get(m, "type")), "bind") == 0) {
		src = dev_path(file, src);
		json_object_set_new(m, "source", json_string(src));
		free(src);
	}
	strv_free(kv);
	return (m);
bad:
	strv_free(kv);
	json_decref(m);
	return (NULL);
}

/*
 * mounts and forwardPorts into the request (the ports beside --publish's);
 * -1 with why.
 */
static int
dev_mounts_ports(json_t *o, const char *file, const struct devcontainer *dc,
    char *why, size_t size)
{
	json_t	*a, *m, *p;
	size_t	 i, k;

	for (i = 0; dc->mounts != NULL && dc->mounts[i] != NULL; i++) {
		if ((m = dev_mount(file, dc->mounts[i], i, why, size)) == NULL)
			return (-1);
		if ((a = json_object_get(o, "mounts")) == NULL) {
			a = json_array();
			json_object_set_new(o, "mounts", a);
		}
		json_array_append_new(a, m);
	}
	for (i = 0; i < dc->nports; i++) {
		if ((a = json_object_get(o, "publish")) == NULL) {
			a = json_array();
			json_object_set_new(o, "publish", a);
		}
		json_array_foreach(a, k, p) {
			if (json_integer_value(p) == (json_int_t)dc->ports[i])
				break;
		}
		if (k == json_array_size(a))
			json_array_append_new(a, json_integer(dc->ports[i]));
	}
	return (0);
}

/* containerEnv: each NAME=VALUE into the request's env, NAME by name. */
static void
dev_env(json_t *o, const struct devcontainer *dc)
{
	json_t		*env = json_object_get(o, "env"), *names, *x;
	const char	*eq;
	size_t		 i, k;

	names = json_array();
	for (i = 0; dc->env != NULL && dc->env[i] != NULL; i++) {
		eq = strchr(dc->env[i], '=');
		json_array_foreach(env, k, x) {
			if (strncmp(json_string_value(x), dc->env[i],
			    (size_t)(eq - dc->env[i]) + 1) == 0) {
				json_array_remove(env, k);
				break;
			}
		}
		json_array_append_new(env, json_string(dc->env[i]));
		json_array_append_new(names, json_stringn(dc->env[i],
		    (size_t)(eq - dc->env[i])));
	}
	json_object_set_new(o, "container_env", names);
}

/*
 * Applies FILE to request o (for workspace NAME; run_request_here has set
 * its env): its image, containerEnv and container_env.  Returns what the
 * workspace runs first (its postCreateCommand; NULL: none).  Exits 2 with
 * the field on anything bad or not supported.
 */
char **
workspace_devcontainer(json_t *o, const char *name, const char *file)
{
	struct devcontainer	 dc;
	char			*text, *cause = NULL, *img, **post, why[1024];
	const char		*no;
	size_t			 len;
	int			 rc;

	if ((text = read_file(file, DEV_MAX_FILE, &len, &cause)) == NULL) {
		snprintf(why, sizeof why, "%s", cause);
		free(cause);
		cmd_usage_error(&cmd_workspace_entry, "devcontainer: %s", why);
	}
	devcontainer_init(&dc);
	rc = devcontainer_parse(text, len, &dc, &cause);
	free(text);
	if (rc != 0 || (no = dev_refused(o, &dc)) != NULL) {
		snprintf(why, sizeof why, "%s", rc != 0 ? cause : no);
		free(cause);
		devcontainer_free(&dc);
		dev_fail(file, "%s", why);
	}
	if (dev_mounts_ports(o, file, &dc, why, sizeof why) != 0) {
		devcontainer_free(&dc);
		dev_fail(file, "%s", why);
	}
	if (dc.image != NULL)
		img = xstrdup(dc.image);
	else if (hosts_remote()) {
		if ((img = dev_build_remote(file, name, &dc, json_string_value(
		    json_object_get(o, "cwd")), why, sizeof why,
		    &rc)) == NULL) {
			devcontainer_free(&dc);
			if (rc == EXIT_USAGE)
				dev_fail(file, "%s", why);
			fprintf(stderr, "gmux workspace: %s\n", why);
			exit(rc);
		}
	} else if ((img = dev_build(file, name, &dc, why,
	    sizeof why)) == NULL) {
		devcontainer_free(&dc);
		dev_fail(file, "%s", why);
	}
	json_object_set_new(o, "image", json_string(img));
	free(img);
	dev_env(o, &dc);
	post = dc.post_create;
	dc.post_create = NULL;
	devcontainer_free(&dc);
	return (post);
}
