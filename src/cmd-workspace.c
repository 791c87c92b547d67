/*
 * cmd-workspace.c: gmux workspace create/ls/rm/save/images
 * A workspace is a containerized job named NAME that waits until it is
 * removed, holding its seats and its books meanwhile; these are the
 * job API's routes with a workspace's words.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"

static int	cmd_workspace_exec(int, char **);

const struct cmd_entry cmd_workspace_entry = {
	.name = "workspace",
	.args = "create NAME --image IMAGE|--devcontainer FILE|--template T\n"
	    "                      [--share F] [--mem SIZE] [DIRECTIVES...] | "
	    "ls [--json]\n                      | rm NAME | save NAME IMAGE | "
	    "images [--json]",
	.help = "long-lived containers that hold a share (docs/containers.md)",
	.options =
	    "  --image IMAGE        create: from this local image (it needs "
	    "/bin/sh)\n"
	    "  --devcontainer FILE  create: from a devcontainer.json (image or "
	    "build.dockerfile,\n"
	    "                       containerEnv, mounts, forwardPorts, "
	    "postCreateCommand)\n"
	    "  --template T         create: from the host's template T "
	    "(CONTAINERS_TEMPLATES:\n"
	    "                       its image and flags; flags given here "
	    "win)\n"
	    "  --json               ls, images as a JSON array\n"
	    "  -h, --help           show this help\n"
	    "\ncreate takes gmux run's flags (--share, --mem, --deny-net, ...)"
	    ": the workspace\nholds them until rm.  save commits its "
	    "container into IMAGE on its host (from\na remote: kept as "
	    "localhost/OWNER/IMAGE); images lists those saved.\nEvery "
	    "workspace has the owner's home at its own path and its cache "
	    "volume\nat /cache (kept after rm).\n"
	    "\nWith --remote (or a configured remote) create makes it on "
	    "that host as a\nconfined container of the token's owner: this "
	    "directory synced as its /work,\nno network, no host home "
	    "(gmux shell and gmux port reach it there).  A\n"
	    "devcontainer's build.dockerfile is built there, as the owner, "
	    "from this\ndirectory (its output shown here).\n",
	.exec = cmd_workspace_exec,
};

enum { OPT_JSON = 0x100, OPT_DEVCONTAINER, OPT_TEMPLATE };

static const struct option workspace_own_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "devcontainer", required_argument, NULL, OPT_DEVCONTAINER },
	{ "template", required_argument, NULL, OPT_TEMPLATE },
	{ "help", no_argument, NULL, 'h' },
};

/*
 * What a workspace runs: a shell that runs its arguments first, if any (a
 * devcontainer's postCreateCommand; the workspace fails if it does), then
 * waits for its TERM.
 */
#define WORKSPACE_SH "[ $# -eq 0 ] || \"$@\" || exit $?; " \
    "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"

static void	workspace_check_image(const char *);

static const struct option *
workspace_opts(void)
{
	static struct option	 all[64];

	return (runopt_options(all, nitems(all), workspace_own_opts,
	    nitems(workspace_own_opts)));
}

/* One call; the reply's body (the caller's), or the error and exit 1. */
static json_t *
workspace_call(const char *method, const char *path, json_t *body)
{
	struct client_reply	 r;
	json_t			*o;

	if (client_call(method, path, body, &r) != 0 || r.status >= 400) {
		client_ok(&r, "workspace");
		exit(r.status == 400 ? EXIT_USAGE : 1);
	}
	o = r.body != NULL ? json_incref(r.body) : json_object();
	client_reply_clear(&r);
	return (o);
}

/* The live workspaces (queued or running), as their jobs. */
static json_t *
workspace_list(void)
{
	json_t		*all, *ws, *j;
	const char	*st;
	size_t		 i;

	all = workspace_call("GET", "/v1/jobs", NULL);
	ws = json_array();
	json_array_foreach(all, i, j) {
		st = json_string_value(json_object_get(j, "state"));
		if (json_is_true(json_object_get(j, "workspace")) &&
		    st != NULL && (strcmp(st, "running") == 0 ||
		    strcmp(st, "queued") == 0))
			json_array_append(ws, j);
	}
	json_decref(all);
	return (ws);
}

/* The live workspace NAME's job (the caller's), or exit 1. */
static json_t *
workspace_find(const char *name)
{
	json_t	*ws, *j, *found = NULL;
	size_t	 i;

	ws = workspace_list();
	json_array_foreach(ws, i, j) {
		if (strcmp(json_string_value(json_object_get(j, "name")),
		    name) == 0)
			found = json_incref(j);
	}
	json_decref(ws);
	if (found == NULL) {
		fprintf(stderr, "gmux workspace: name: no workspace %s\n",
		    name);
		exit(1);
	}
	return (found);
}

/* Its command: the waiting shell, with post (NULL: none) to run first. */
static char **
workspace_argv(char **post)
{
	char	**v;
	size_t	  n = strv_len(post), i;

	v = xcalloc(n + 5, sizeof *v);
	v[0] = xstrdup("/bin/sh");
	v[1] = xstrdup("-c");
	v[2] = xstrdup(WORKSPACE_SH);
	v[3] = xstrdup("gmux-workspace");
	for (i = 0; i < n; i++)
		v[4 + i] = xstrdup(post[i]);
	return (v);
}

/*
 * On a remote host (docs/containers.md, "A remote workspace"): its image
 * and this directory go as gmux run's do (the image the first time the
 * host lacks it; the directory as the workspace's tree at /work), and it
 * runs there as a confined container of the token's owner.
 */
static int
workspace_create_remote(json_t *o, const char *name)
{
	const struct remote	*v[1];
	json_t			*j = NULL;
	char			*cwd;
	int			 rc;

	if (hosts_candidates(v, 1) == 0) {
		fprintf(stderr, "gmux workspace: no remote host is "
		    "configured\n");
		exit(1);
	}
	cwd = xstrdup(json_string_value(json_object_get(o, "cwd")));
	rc = run_remote_start(v[0], o, cwd, "gmux workspace", &j);
	free(cwd);
	if (rc != 0)
		exit(rc == 400 ? EXIT_USAGE : 1);
	printf("%s %s:%s\n", name, v[0]->name, json_string_value(
	    json_object_get(j, "id")));
	json_decref(j);
	return (0);
}

static int
workspace_create(json_t *o, const char *name, int argc, const char *dev,
    const char *tpl)
{
	struct jobreq	 r;
	json_t		*j, *a;
	char		*cause = NULL, **post = NULL, **argv;
	size_t		 i;

	if (name == NULL || argc != 0)
		cmd_usage_error(&cmd_workspace_entry, "create NAME --image "
		    "IMAGE");
	if ((json_object_get(o, "image") != NULL) + (dev != NULL) +
	    (tpl != NULL) != 1)
		cmd_usage_error(&cmd_workspace_entry, "image: create needs one "
		    "of --image IMAGE, --devcontainer FILE and --template T");
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "workspace", json_true());
	run_request_here(&cmd_workspace_entry, o, 0, NULL);
	if (dev != NULL)
		post = workspace_devcontainer(o, name, dev);
	/* (run_request_here again would take the env back from here) */
	argv = workspace_argv(post);
	a = json_array();
	for (i = 0; argv[i] != NULL; i++)
		json_array_append_new(a, json_string(argv[i]));
	json_object_set_new(o, "argv", a);
	strv_free(argv);
	strv_free(post);
	/* As the daemon will check it: a mistake is exit 2 here. */
	if (tpl != NULL)	/* (its image is the daemon's to find) */
		json_object_set_new(o, "template", json_string(tpl));
	else {
		jobreq_init(&r);
		if (jobreq_from_json(o, &r, &cause) != 0)
			cmd_usage_error(&cmd_workspace_entry, "%s", cause);
		jobreq_clear(&r);
		workspace_check_image(json_string_value(json_object_get(o,
		    "image")));
	}
	if (hosts_remote())
		return (workspace_create_remote(o, name));
	j = workspace_call("POST", "/v1/jobs", o);
	printf("%s %s\n", name, json_string_value(json_object_get(j,
	    "id")));
	json_decref(j);
	return (0);
}

static int
workspace_ls(int json)
{
	static const char *const hdr[] = { "NAME", "JOB", "STATE", "SHARE",
	    "IMAGE", "AGE" };
	struct table	*t;
	json_t		*ws, *j;
	char		 share[16], *age;
	size_t		 i;

	ws = workspace_list();
	if (json) {
		json_print(ws, stdout);
		json_decref(ws);
		return (0);
	}
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(ws, i, j) {
		snprintf(share, sizeof share, "%.2f", json_number_value(
		    json_object_get(j, "share")));
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(j, "created")));
		table_add(t, json_string_value(json_object_get(j, "name")),
		    json_string_value(json_object_get(j, "id")),
		    json_string_value(json_object_get(j, "state")), share,
		    json_string_value(json_object_get(j, "image")), age);
		free(age);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(ws);
	return (0);
}

static int
workspace_rm(const char *name)
{
	json_t	*j, *o, *body;
	char	*path;

	j = workspace_find(name);
	xasprintf(&path, "/v1/jobs/%s/stop", json_string_value(
	    json_object_get(j, "id")));
	body = json_pack("{s:b}", "wait", 1);
	o = workspace_call("POST", path, body);
	printf("%s\n", name);
	json_decref(body);
	json_decref(o);
	free(path);
	json_decref(j);
	return (0);
}

/*
 * On the host itself, an image that is not in the local store is refused
 * before a workspace is made of it (a remote host's job fails, 125).
 */
static void
workspace_check_image(const char *image)
{
	const char	*podman;
	char		*argv[5], *cause = NULL;
	int		 status;

	if (hosts_remote() || (podman = container_podman(&cause)) == NULL) {
		free(cause);
		return;
	}
	argv[0] = (char *)podman;
	argv[1] = (char *)"image";
	argv[2] = (char *)"exists";
	argv[3] = (char *)image;
	argv[4] = NULL;
	free(proc_output(argv, 30000, &status));
	if (status == 1) {
		fprintf(stderr, "gmux workspace: image: %s is not in this "
		    "host's images (podman images; nothing is pulled)\n",
		    image);
		exit(1);
	}
}

/*
 * podman commit of its container, on its host (here or a remote), by the
 * daemon: into the store it is in (its owner's account's, or the host's);
 * from a remote, named in the owner's own namespace (localhost/OWNER/...).
 */
static int
workspace_save(const char *name, const char *image)
{
	json_t	*j, *o, *body;
	char	*cause = NULL, *path;

	if (jobspec_image_ok(image, &cause) != 0)
		cmd_usage_error(&cmd_workspace_entry, "%s", cause);
	j = workspace_find(name);
	xasprintf(&path, "/v1/jobs/%s/save", json_string_value(
	    json_object_get(j, "id")));
	body = json_pack("{s:s}", "image", image);
	o = workspace_call("POST", path, body);
	printf("%s\n", json_string_value(json_object_get(o, "image")));
	json_decref(o);
	json_decref(body);
	free(path);
	json_decref(j);
	return (0);
}

/* The caller's saved images (workspace save), on its host. */
static int
workspace_images(int json)
{
	static const char *const hdr[] = { "IMAGE", "ID", "AGE" };
	struct table	*t;
	json_t		*o, *v, *e;
	char		*age;
	size_t		 i;

	o = workspace_call("GET", "/v1/images", NULL);
	v = json_object_get(o, "images");
	if (json) {
		json_print(v, stdout);
		json_decref(o);
		return (0);
	}
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(v, i, e) {
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(e, "created")));
		table_add(t, json_string_value(json_object_get(e, "image")),
		    json_string_value(json_object_get(e, "id")), age);
		free(age);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(o);
	return (0);
}

static int
cmd_workspace_exec(int argc, char **argv)
{
	const struct cmd_entry	*c = &cmd_workspace_entry;
	const char		*sub, *name = NULL, *dev = NULL, *tpl = NULL;
	json_t			*o;
	char			*cause = NULL;
	int			 ch, json = 0, rc;

	if (argc < 2 || argv[1][0] == '-') {
		while (cmd_getopt(c, argc, argv, "h", workspace_opts()) != -1)
			;
		cmd_usage_error(c, "create, ls, rm, save or images?");
	}
	sub = argv[1];
	argc--;
	argv++;
	/* create NAME --image ...: the name comes before the flags. */
	if (strcmp(sub, "create") == 0 && argc > 1 && argv[1][0] != '-') {
		name = argv[1];
		argc--;
		argv++;
	}
	o = json_object();
	while ((ch = cmd_getopt(c, argc, argv, "h", workspace_opts())) != -1) {
		if (ch == OPT_JSON)
			json = 1;
		else if (ch == OPT_DEVCONTAINER)
			dev = optarg;
		else if (ch == OPT_TEMPLATE)
			tpl = optarg;
		else if (runopt_apply(o, ch - RUNOPT_BASE, optarg,
		    &cause) != 0)
			cmd_usage_error(c, "%s", cause);
	}
	argc -= optind;
	argv += optind;
	if (strcmp(sub, "create") == 0)
		rc = workspace_create(o, name, argc, dev, tpl);
	else if (strcmp(sub, "ls") == 0 && argc == 0)
		rc = workspace_ls(json);
	else if (strcmp(sub, "rm") == 0 && argc == 1)
		rc = workspace_rm(argv[0]);
	else if (strcmp(sub, "save") == 0 && argc == 2)
		rc = workspace_save(argv[0], argv[1]);
	else if (strcmp(sub, "images") == 0 && argc == 0)
		rc = workspace_images(json);
	else
		cmd_usage_error(c, "create NAME --image IMAGE, ls, rm NAME, "
		    "save NAME IMAGE or images");
	json_decref(o);
	return (rc);
}
