/*
 * cmd-workspace-dev.c: gmux workspace create NAME --devcontainer FILE.
 * The file's image (or the image built here from its build.dockerfile),
 * its containerEnv and its postCreateCommand make the workspace's request;
 * what gmux cannot honour yet (mounts, forwardPorts) is refused, naming
 * the field, rather than dropped.
 */

#include <ctype.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define DEV_MAX_FILE	(1024 * 1024)

static dead void printflike(2, 3)
dev_fail(const char *file, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	cmd_usage_error(&cmd_workspace_entry, "devcontainer: %s: %s", file,
	    s);
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

/* podman build of the file's Dockerfile here; the image's name. */
static char *
dev_build(const char *file, const char *name, const struct devcontainer *dc)
{
	const char	*podman;
	char		*df, *ctx, *img, *cause = NULL, *argv[10], *p;
	int		 status;

	if (hosts_remote())
		dev_fail(file, "build.dockerfile: images are built on the host "
		    "itself, not with --remote (yet)");
	if ((podman = container_podman(&cause)) == NULL)
		dev_fail(file, "%s", cause);
	df = dev_path(file, dc->dockerfile);
	ctx = dev_path(file, dc->context != NULL ? dc->context : ".");
	/* A repository's name is lower case. */
	xasprintf(&img, "localhost/gmux-devcontainer-%s:latest", name);
	for (p = img; *p != '\0'; p++)
		*p = (char)tolower((u_char)*p);
	if (jobspec_image_ok(img, &cause) != 0)
		cmd_usage_error(&cmd_workspace_entry, "name: %s is not fit to "
		    "name its image (letters, digits and ._-)", name);
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
	if (status != 0)
		dev_fail(file, "build.dockerfile: podman build failed (%d; "
		    "podman build -f %s shows why)", status, dc->dockerfile);
	return (img);
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
	char			*text, *cause = NULL, *img, **post;
	size_t			 len;

	if ((text = read_file(file, DEV_MAX_FILE, &len, &cause)) == NULL)
		cmd_usage_error(&cmd_workspace_entry, "devcontainer: %s",
		    cause);
	devcontainer_init(&dc);
	if (devcontainer_parse(text, len, &dc, &cause) != 0)
		dev_fail(file, "%s", cause);
	free(text);
	if (dc.mounts != NULL)
		dev_fail(file, "mounts: not supported yet (a workspace has "
		    "only its image)");
	if (dc.nports != 0)
		dev_fail(file, "forwardPorts: not supported yet (published "
		    "ports come with gmux port)");
	if (json_object_get(o, "image") != NULL)
		dev_fail(file, "image: --image and --devcontainer are one or "
		    "the other");
	img = dc.image != NULL ? xstrdup(dc.image) : dev_build(file, name, &dc);
	json_object_set_new(o, "image", json_string(img));
	free(img);
	dev_env(o, &dc);
	post = dc.post_create;
	dc.post_create = NULL;
	devcontainer_free(&dc);
	return (post);
}
