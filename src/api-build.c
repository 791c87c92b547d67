/*
 * api-build.c: POST /v1/builds, a devcontainer's image built on the host
 * for its owner from a synced tree (docs/containers.md, "A devcontainer's
 * build from a remote").  The tree is made off the loop (prepare.c), the
 * build runs off it too (proc_async), as the podman of the owner, and the
 * request is answered once it is over.
 */

#include <sys/queue.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>

#include "gmux.h"

#define BUILD_MS	(30 * 60 * 1000)
#define BUILD_OUTPUT	(64 * 1024)
#define BUILD_PATH_MAX	4096
#define BUILD_MAX	4	/* at once, on this host */
#define BUILD_MAX_OWNER	2	/* ... and of one owner's */

/* podman build's errors are on its stderr: the answer takes both. */
#define BUILD_SH	"exec 2>&1; exec \"$@\""

struct build {
	struct evhttp_request	*req;		/* NULL: its client went */
	int			 counted;	/* in build_running */
	char			*owner;
	char			*image;
	char			*dockerfile;	/* relative to the tree */
	char			*context;
	char			*dir;		/* builds/bXXXXXX */
	char			*tree;		/* dir/tree */
	TAILQ_ENTRY(build)	 entry;
};
static TAILQ_HEAD(, build) build_running =
    TAILQ_HEAD_INITIALIZER(build_running);

static void
build_free(struct build *b)
{
	if (b->counted)
		TAILQ_REMOVE(&build_running, b, entry);
	if (b->dir != NULL)
		prepare_discard(b->dir);	/* off the loop */
	free(b->owner);
	free(b->image);
	free(b->dockerfile);
	free(b->context);
	free(b->dir);
	free(b->tree);
	free(b);
}

static void
build_closed(struct evhttp_connection *evcon, void *arg)
{
	struct build	*b = arg;

	log_debug("%s: %s: its client went", __func__, b->image);
	b->req = NULL;
}

/* Answers b's request (o taken; if its client is still there). */
static void
build_answer(struct build *b, int code, json_t *o)
{
	if (b->req != NULL) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    b->req), NULL, NULL);
		api_reply(b->req, code, o);
		b->req = NULL;
	}
	json_decref(o);
}

static void printflike(3, 4)
build_fail(struct build *b, int code, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	log_debug("%s: %s: %d %s", __func__, b->image, code, msg);
	build_answer(b, code, json_pack("{s:s}", "error", msg));
	free(msg);
	build_free(b);
}

/*
 * Whether rel, a client's path, may name something in a tree: not empty,
 * not absolute, no ".." component.  NULL, or why not.
 */
static const char *
build_rel_bad(const char *rel)
{
	const char	*p;
	size_t		 n;

	if (*rel == '\0' || strlen(rel) >= BUILD_PATH_MAX)
		return ("must be a path of 1 to 4095 bytes");
	if (*rel == '/')
		return ("must be relative to the directory sent, not absolute");
	for (p = rel; *p != '\0'; p += n + (p[n] == '/')) {
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return ("must not climb out of the directory sent "
			    "(..)");
	}
	return (NULL);
}

/*
 * tree/rel resolved (links followed): within tree and a directory (dir)
 * or a regular file.  The path (the caller frees it), or NULL with why.
 */
static char *
build_resolve(const char *tree, const char *rel, int dir, const char **why)
{
	struct stat	 st;
	char		*path, *real, top[PATH_MAX];
	size_t		 n;

	if (realpath(tree, top) == NULL) {
		*why = strerror(errno);
		return (NULL);
	}
	xasprintf(&path, "%s/%s", tree, rel);
	real = realpath(path, NULL);
	free(path);
	n = strlen(top);
	if (real == NULL)
		*why = "is not in the directory sent";
	else if (strncmp(real, top, n) != 0 || (real[n] != '/' &&
	    real[n] != '\0'))
		*why = "leads out of the directory sent (a symbolic link)";
	else if (stat(real, &st) != 0 || (dir ? !S_ISDIR(st.st_mode) :
	    !S_ISREG(st.st_mode)))
		*why = dir ? "is not a directory" : "is not a file";
	else
		return (real);
	free(real);
	return (NULL);
}

/*
 * TMPDIR=dir/tmp before podman in argv (after env's other variables):
 * buildah keeps a RUN --mount=type=cache there, which is then the
 * build's own, never another owner's (in /var/tmp it would be shared by
 * every build of one user), and goes with the build.
 */
static void
build_tmpdir(struct build *b, char ***argv)
{
	const char	*podman = container_podman(NULL);
	size_t		 n = strv_len(*argv), at;

	for (at = 0; at < n && strcmp((*argv)[at], podman) != 0; at++)
		continue;
	*argv = xreallocarray(*argv, n + 2, sizeof **argv);
	memmove(*argv + at + 1, *argv + at, (n + 1 - at) * sizeof **argv);
	xasprintf(&(*argv)[at], "TMPDIR=%s/tmp", b->dir);
}

/*
 * podman build's argv: podman (or, where the owner has a tenant's
 * account, setpriv ... podman: the tree is given to it, the way to it
 * crossable) then args, with the build's own TMPDIR.  0, or -1 with
 * *cause.
 */
static int
build_podman(struct build *b, const char *const *args, u_int nargs,
    char ***argv, char **cause)
{
	uid_t		 uid;
	gid_t		 gid;
	char		*home = NULL, *builds, *tmp;
	int		 rc;
	u_int		 i;

	xasprintf(&tmp, "%s/tmp", b->dir);
	if (mkdir(tmp, 0700) != 0) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return (-1);
	}
	if ((rc = tenant_account(b->owner, &uid, &gid, &home, cause)) == 0) {
		*argv = xcalloc(nargs + 3, sizeof **argv);
		(*argv)[0] = xstrdup("env");
		(*argv)[1] = xstrdup(container_podman(NULL));
		for (i = 0; i < nargs; i++)
			(*argv)[i + 2] = xstrdup(args[i]);
	} else if (rc == 1) {
		xasprintf(&builds, "%s/builds", path_home());
		if (chmod(path_home(), 0711) != 0 || chmod(builds, 0711) != 0 ||
		    chmod(b->dir, 0711) != 0)
			xasprintf(cause, "%s: %s", b->dir, strerror(errno));
		else if (tenant_give(b->tree, uid, gid, cause) == 0 &&
		    tenant_give(tmp, uid, gid, cause) == 0)
			*argv = container_account_argv(uid, gid, home, args,
			    nargs);
		free(builds);
	}
	free(home);
	free(tmp);
	if (*argv == NULL)
		return (-1);
	build_tmpdir(b, argv);
	return (0);
}

/* The last line of out (podman's reason), in place. */
static const char *
build_last_line(char *out)
{
	char	*p;

	while ((p = strrchr(out, '\n')) != NULL && p[1] == '\0')
		*p = '\0';
	return ((p = strrchr(out, '\n')) != NULL ? p + 1 : out);
}

/* The build's end: 200 {"image", "output"}, or 422 with podman's line. */
static void
build_done(char *out, int status, void *arg)
{
	struct build	*b = arg;
	char		*tail, *msg;
	size_t		 n;
	json_t		*o;

	if (out == NULL)
		out = xstrdup("");
	n = strlen(out);
	tail = xstrdup(n > BUILD_OUTPUT ? out + n - BUILD_OUTPUT : out);
	log_debug("%s: %s: %d", __func__, b->image, status);
	if (status == 0)
		o = json_pack("{s:s,s:s}", "image", b->image, "output", tail);
	else {
		xasprintf(&msg, "build.dockerfile: podman build failed (%d): "
		    "%s", status, build_last_line(out));
		o = json_pack("{s:s,s:s}", "error", msg, "output", tail);
		free(msg);
	}
	build_answer(b, status == 0 ? 200 : 422, o);
	free(tail);
	free(out);
	build_free(b);
}

/* Its tree is made: the paths are checked resolved, and podman builds. */
static void
build_tree_made(int rc, const char *cause, void *arg)
{
	struct build	*b = arg;
	static const char *const prefix[] = { "/bin/sh", "-c", BUILD_SH,
	    "sh", "unshare", "--net", "--" };
	const char	*why = NULL, *args[10];
	char		*ctx = NULL, *df = NULL, *label, **argv = NULL, **sh;
	char		*err = NULL;
	u_int		 i, n;

	if (rc != 0) {
		build_fail(b, 500, "build: its files could not be prepared: "
		    "%s", cause);
		return;
	}
	if ((ctx = build_resolve(b->tree, b->context, 1, &why)) == NULL) {
		build_fail(b, 400, "build.context: %s", why);
		return;
	}
	if ((df = build_resolve(b->tree, b->dockerfile, 0, &why)) == NULL) {
		free(ctx);
		build_fail(b, 400, "build.dockerfile: %s", why);
		return;
	}
	xasprintf(&label, "gmux.owner=%s", b->owner);
	n = 0;
	args[n++] = "build";
	args[n++] = "--pull=never";
	args[n++] = "--network=none";
	args[n++] = "--label";
	args[n++] = label;
	args[n++] = "-f";
	args[n++] = df;
	args[n++] = "-t";
	args[n++] = b->image;
	args[n++] = ctx;
	rc = build_podman(b, args, n, &argv, &err);
	free(label);
	free(ctx);
	free(df);
	if (rc != 0) {
		build_fail(b, 503, "build: %s", err);
		free(err);
		return;
	}
	/*
	 * --network=none holds RUN only: podman itself fetches an ADD's URL,
	 * and on the host's network it would reach the host's loopback.  So
	 * podman runs in an empty network namespace of its own.
	 */
	sh = xcalloc(strv_len(argv) + nitems(prefix) + 1, sizeof *sh);
	for (n = 0; n < nitems(prefix); n++)
		sh[n] = xstrdup(prefix[n]);
	for (i = 0; argv[i] != NULL; i++)
		sh[n + i] = xstrdup(argv[i]);
	strv_free(argv);
	log_debug("%s: %s for %s", __func__, b->image, b->owner);
	if (proc_async_start(sh, BUILD_MS, build_done, b, &err) != 0) {
		build_fail(b, 500, "build: podman: %s", err);
		free(err);
	}
	strv_free(sh);
}

/* A string field k of body, or def; NULL if it is not a string. */
static const char *
build_field(json_t *body, const char *k, const char *def)
{
	json_t	*v = json_object_get(body, k);

	return (v == NULL ? def : json_string_value(v));
}

/*
 * A build request's body, of owner's: its manifest's digest (*mdigest,
 * valid while body is), the image it makes (*image, in the owner's
 * namespace), its Dockerfile and context relative to the tree (checked
 * as words only: api_builds_post resolves them in the tree).  0 with
 * what the caller frees, or -1 with *cause naming the field.
 */
int
api_build_body(json_t *body, const char *owner, const char **mdigest,
    char **image, char **dockerfile, char **context, char **cause)
{
	const char	*k, *name, *df, *ctx, *bad;
	json_t		*v;
	char		*p;

	*image = *dockerfile = *context = NULL;
	json_object_foreach(body, k, v) {
		if (strcmp(k, "manifest") != 0 && strcmp(k, "name") != 0 &&
		    strcmp(k, "dockerfile") != 0 && strcmp(k, "context") != 0) {
			xasprintf(cause, "%.64s: unknown key (manifest, name, "
			    "dockerfile, context)", k);
			return (-1);
		}
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
		    json_string_length(v)) {
			xasprintf(cause, "%s: must be a string", k);
			return (-1);
		}
	}
	*mdigest = build_field(body, "manifest", NULL);
	name = build_field(body, "name", NULL);
	df = build_field(body, "dockerfile", "");
	ctx = build_field(body, "context", ".");
	if (*mdigest == NULL || !digest_valid(*mdigest)) {
		xasprintf(cause, "manifest: a manifest's digest is needed");
		return (-1);
	}
	if (jobspec_workspace_name_ok(name, cause) != 0)
		return (-1);
	if ((bad = build_rel_bad(df)) != NULL) {
		xasprintf(cause, "build.dockerfile: %s", bad);
		return (-1);
	}
	if ((bad = build_rel_bad(ctx)) != NULL) {
		xasprintf(cause, "build.context: %s", bad);
		return (-1);
	}
	/* The owner's own namespace, as a remote save's; lower case. */
	xasprintf(image, "localhost/%s/gmux-devcontainer-%s:latest", owner,
	    name);
	for (p = *image; *p != '\0'; p++)
		*p = (char)tolower((u_char)*p);
	if (jobspec_image_ok(*image, cause) != 0) {
		free(*image);
		*image = NULL;
		return (-1);
	}
	*dockerfile = xstrdup(df);
	*context = xstrdup(ctx);
	return (0);
}

/* A directory of the build's own, builds/bXXXXXX (0700).  -1 if not. */
static int
build_dir(struct build *b, char **cause)
{
	char	*builds;

	xasprintf(&builds, "%s/builds", path_home());
	if (mkdir(builds, 0700) != 0 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", builds, strerror(errno));
		free(builds);
		return (-1);
	}
	xasprintf(&b->dir, "%s/bXXXXXX", builds);
	free(builds);
	if (mkdtemp(b->dir) == NULL) {
		xasprintf(cause, "%s: %s", b->dir, strerror(errno));
		free(b->dir);
		b->dir = NULL;
		return (-1);
	}
	xasprintf(&b->tree, "%s/tree", b->dir);
	return (0);
}

/*
 * Whether the host builds all it will at once (BUILD_MAX), or owner does
 * (BUILD_MAX_OWNER: one owner does not hold every build), answered 503.
 */
static int
build_busy(struct evhttp_request *req, const char *owner)
{
	struct build	*b;
	u_int		 all = 0, own = 0;

	TAILQ_FOREACH(b, &build_running, entry) {
		all++;
		own += strcmp(b->owner, owner) == 0;
	}
	if (own >= BUILD_MAX_OWNER)
		api_error(req, 503, "build: %s has %u builds under way (%d at "
		    "most at once); try again later", owner, own,
		    BUILD_MAX_OWNER);
	else if (all >= BUILD_MAX)
		api_error(req, 503, "build: %d builds run at once here; try "
		    "again later", BUILD_MAX);
	else
		return (0);
	return (1);
}

/*
 * POST /v1/builds {"manifest", "name", "dockerfile", "context"}: 200
 * {"image", "output"} once podman has built it, 422 with podman's reason
 * and the output if it failed; 400 naming the field, 412 if blobs are
 * missing.
 */
void
api_builds_post(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct build	*b;
	struct prepare	*p;
	struct manifest	 m;
	struct cas	*c;
	json_t		*body, *reply = NULL;
	const char	*mdigest;
	char		*cause = NULL;
	int		 code;

	if (container_podman(&cause) == NULL) {
		api_error(req, 422, "%s", cause);
		free(cause);
		return;
	}
	if (geteuid() != 0) {
		api_error(req, 422, "build: images are built from a remote "
		    "only where the daemon runs as root (podman builds in an "
		    "empty network namespace of its own: an ADD's URL is "
		    "fetched outside RUN's --network=none)");
		return;
	}
	if (build_busy(req, who->owner))
		return;
	if ((body = api_body(req, &cause)) == NULL) {
		api_error(req, 400, "%s", cause);
		free(cause);
		return;
	}
	b = xcalloc(1, sizeof *b);
	b->req = req;
	b->owner = xstrdup(who->owner);
	code = 400;
	if (api_build_body(body, b->owner, &mdigest, &b->image,
	    &b->dockerfile, &b->context, &cause) != 0)
		goto fail;
	if ((c = api_remote_store(&cause)) == NULL) {
		code = 500;
		goto fail;
	}
	if ((code = remote_host_tree(c, mdigest, &m, &reply, &cause)) != 0)
		goto fail;
	if (build_dir(b, &cause) != 0) {
		manifest_clear(&m);
		code = 500;
		goto fail;
	}
	p = prepare_new(c, &m, b->tree, NULL, NULL, &cause);
	manifest_clear(&m);
	if (p == NULL) {
		code = 500;
		goto fail;
	}
	json_decref(body);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    build_closed, b);
	b->counted = 1;
	TAILQ_INSERT_TAIL(&build_running, b, entry);
	prepare_run(p, build_tree_made, b);
	return;
fail:
	api_remote_answer(req, code, reply, cause);
	json_decref(body);
	b->req = NULL;
	build_free(b);
}

/*
 * At start: what builds a stopped daemon left (their trees, their
 * TMPDIRs) goes, off the loop; their clients had no answer.
 */
void
api_build_restore(void)
{
	struct dirent	*de;
	char		*builds, *path;
	DIR		*dir;

	xasprintf(&builds, "%s/builds", path_home());
	if ((dir = opendir(builds)) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			if (strncmp(de->d_name, "b", 1) != 0 ||
			    strlen(de->d_name) != 7)
				continue;
			xasprintf(&path, "%s/%s", builds, de->d_name);
			log_debug("%s: %s", __func__, path);
			prepare_discard(path);
			free(path);
		}
		closedir(dir);
	}
	free(builds);
}
