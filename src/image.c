/*
 * image.c: images that travel, the host's side (docs/containers.md,
 * "Images that travel").  A client sends an image it has and the host
 * lacks as an OCI directory (podman save --format oci-dir) synced into the
 * blob store like a tree; the host links its files out of the store into
 * a directory of its own, with an index.json of its own making (a
 * client's could name a tag, and so take over a name the host's other
 * users run), loads it with podman on the loop (proc_async), checks that
 * what was loaded is the image asked for, and keeps it: the mark
 * $GMUX_HOME/images/ID says it is here.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define IMAGE_LOAD_MS	(10 * 60 * 1000)
#define IMAGE_MAX_INDEX	(64 * 1024)
#define IMAGE_LOADS	16

/* Loads under way or failed (their error, for the client that polls). */
static struct image_load {
	char	 id[DIGEST_HEX];
	char	*dir;
	char	*error;		/* NULL: loading (or checking) */
	int	 checking;	/* is it in podman's store already? */
	int	 absent;	/* it is not: known for a while */
	int64_t	 when;
} image_loads[IMAGE_LOADS];

static int	image_ask(const char *);

/* The mark of a loaded image.  The caller frees it. */
static char *
image_mark(const char *id)
{
	char	*path;

	xasprintf(&path, "%s/images/%s", path_home(), id);
	return (path);
}

static struct image_load *
image_find(const char *id)
{
	u_int	 i;

	for (i = 0; i < IMAGE_LOADS; i++) {
		if (image_loads[i].id[0] != '\0' &&
		    strcmp(image_loads[i].id, id) == 0)
			return (&image_loads[i]);
	}
	return (NULL);
}

static void
image_forget(struct image_load *l)
{
	if (l->dir != NULL)
		confine_remove(l->dir);
	free(l->dir);
	free(l->error);
	memset(l, 0, sizeof *l);
}

/*
 * Where image id stands here: "present", "checking", "loading", "failed"
 * (with *error, valid until the next call), or NULL if the host does not
 * have it.  With ask, the first question about an image podman may have
 * already (the host's own, or one loaded before the mark) asks podman, on
 * the loop: "checking" until it has answered.
 */
const char *
image_state(const char *id, int ask, const char **error)
{
	struct image_load	*l;
	char			*mark = image_mark(id);
	int			 here = access(mark, F_OK) == 0;

	free(mark);
	*error = NULL;
	if (here)
		return ("present");
	if ((l = image_find(id)) == NULL)
		return (ask && image_ask(id) == 0 ? "checking" : NULL);
	if (l->absent)
		return (NULL);
	if (l->checking)
		return ("checking");
	if (l->error == NULL)
		return ("loading");
	*error = l->error;
	return ("failed");
}

static void
image_failed(struct image_load *l, const char *fmt, const char *arg)
{
	l->checking = 0;
	free(l->error);
	xasprintf(&l->error, fmt, arg);
	l->when = clock_ms();
	if (l->dir != NULL)
		confine_remove(l->dir);
	free(l->dir);
	l->dir = NULL;
	log_warnx("image %.12s: %s", l->id, l->error);
}

/* After podman image exists ID: the load brought the image asked for. */
static void
image_checked(char *out, int status, void *arg)
{
	struct image_load	*l = arg;
	char			*mark, *cause = NULL;

	free(out);
	if (status != 0 && l->checking) {
		l->checking = 0;
		l->absent = 1;
		l->error = xstrdup("not here");
		l->when = clock_ms();
		return;
	}
	if (status != 0) {
		image_failed(l, "%s", "the archive sent does not hold that "
		    "image");
		return;
	}
	xasprintf(&mark, "%s/images", path_home());
	if (mkdir_p(mark, 0700) != 0)
		log_warnx("%s: %s", mark, strerror(errno));
	free(mark);
	mark = image_mark(l->id);
	if (write_file_atomic(mark, "", 0, 0600, &cause) != 0) {
		image_failed(l, "%s", cause);
		free(cause);
	} else {
		log_info("image %.12s: loaded", l->id);
		image_forget(l);
	}
	free(mark);
}

/* Starts podman image exists ID for l: 0, or -1 with *cause. */
static int
image_exists(struct image_load *l, char **cause)
{
	const char	*podman = container_podman(cause);
	char		*argv[] = { (char *)podman, (char *)"image",
			    (char *)"exists", l->id, NULL };

	if (podman == NULL)
		return (-1);
	return (proc_async_start(argv, IMAGE_LOAD_MS, image_checked, l,
	    cause));
}

/* After podman load: is the image there, under its own ID? */
static void
image_loaded(char *out, int status, void *arg)
{
	struct image_load	*l = arg;
	char			*cause = NULL;

	free(out);
	if (status != 0) {
		image_failed(l, "podman load failed (%s)", status ==
		    PROC_ASYNC_TIMEOUT ? "out of time" : "it said no");
		return;
	}
	if (image_exists(l, &cause) != 0) {
		image_failed(l, "%s", cause);
		free(cause);
	}
}

/*
 * The index of the directory to load, of the host's making: the one
 * manifest the client's index names, without its annotations (a ref.name
 * would tag the image with a name of the client's choosing).
 */
static char *
image_index(struct cas *c, const char *digest, char **cause)
{
	json_t		*o, *m, *one;
	const char	*d, *type;
	char		*text = NULL, buf[IMAGE_MAX_INDEX];
	uint64_t	 size;
	ssize_t		 n;
	int		 fd;

	if ((fd = cas_open_blob(c, digest, &size)) == -1 ||
	    size >= sizeof buf) {
		if (fd != -1)
			close(fd);
		xasprintf(cause, "manifest: index.json is missing or too big");
		return (NULL);
	}
	n = read(fd, buf, sizeof buf);
	close(fd);
	o = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
	m = json_object_get(o, "manifests");
	one = json_array_get(m, 0);
	d = json_string_value(json_object_get(one, "digest"));
	type = json_string_value(json_object_get(one, "mediaType"));
	if (json_array_size(m) != 1 || d == NULL || type == NULL ||
	    strncmp(d, "sha256:", 7) != 0 || !digest_valid(d + 7) ||
	    strspn(type, "abcdefghijklmnopqrstuvwxyz0123456789.+-/") !=
	    strlen(type) || !json_is_integer(json_object_get(one, "size")))
		xasprintf(cause, "manifest: index.json must name one image "
		    "manifest");
	else
		xasprintf(&text, "{\"schemaVersion\":2,\"manifests\":[{"
		    "\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%lld}]}",
		    type, d, (long long)json_integer_value(json_object_get(one,
		    "size")));
	json_decref(o);
	return (text);
}

/* Links the blob digest to path (the store's file: podman only reads). */
static int
image_link(struct cas *c, const char *digest, const char *path,
    char **cause)
{
	char		 proc[64];
	uint64_t	 size;
	int		 fd, rc;

	if ((fd = cas_open_blob(c, digest, &size)) == -1) {
		xasprintf(cause, "blob %.16s is gone", digest);
		return (-1);
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	rc = linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
	close(fd);
	if (rc != 0)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	return (rc);
}

/*
 * One entry of the image's manifest into dir: only what an OCI layout
 * holds (oci-layout, index.json, blobs/sha256/DIGEST named by their
 * content), so the directory is an image and nothing else.
 */
static int
image_entry(struct cas *c, const struct mentry *e, const char *dir,
    char **index, char **cause)
{
	char	*path;
	int	 rc = 0;

	xasprintf(&path, "%s/%s", dir, e->path);
	if (e->type == MENTRY_DIR && (strcmp(e->path, "blobs") == 0 ||
	    strcmp(e->path, "blobs/sha256") == 0))
		rc = mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
	else if (e->type == MENTRY_FILE && strcmp(e->path, "index.json") == 0)
		rc = (*index = image_index(c, e->digest, cause)) ? 0 : -2;
	else if (e->type == MENTRY_FILE && strcmp(e->path, "oci-layout") == 0)
		rc = 0;		/* the host writes its own */
	else if (e->type == MENTRY_FILE && strncmp(e->path, "blobs/sha256/",
	    13) == 0 && strcmp(e->path + 13, e->digest) == 0)
		rc = image_link(c, e->digest, path, cause) == 0 ? 0 : -2;
	else {
		xasprintf(cause, "manifest: %.64s is not part of an OCI "
		    "image's directory", e->path);
		rc = -2;
	}
	if (rc == -1)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	free(path);
	return (rc == 0 ? 0 : -1);
}

/* Writes the directory of image id from manifest m into dir. */
static int
image_layout(struct cas *c, const struct manifest *m, const char *id,
    const char *dir, char **cause)
{
	char	*index = NULL, *path, *want;
	size_t	 i;
	int	 rc = -1, config = 0;

	xasprintf(&want, "blobs/sha256/%s", id);
	for (i = 0; i < m->n; i++) {
		if (image_entry(c, &m->v[i], dir, &index, cause) != 0)
			goto out;
		if (strcmp(m->v[i].path, want) == 0)
			config = 1;
	}
	if (index == NULL || !config) {
		xasprintf(cause, "manifest: not an OCI directory of image "
		    "%.12s (index.json and its config blob)", id);
		goto out;
	}
	xasprintf(&path, "%s/index.json", dir);
	rc = write_file_atomic(path, index, strlen(index), 0600, cause);
	free(path);
	xasprintf(&path, "%s/oci-layout", dir);
	if (rc == 0)
		rc = write_file_atomic(path, "{\"imageLayoutVersion\":"
		    "\"1.0.0\"}", 30, 0600, cause);
	free(path);
out:
	free(want);
	free(index);
	return (rc);
}

/* A free slot, the oldest failure's if none is free. */
static struct image_load *
image_slot(void)
{
	struct image_load	*l = NULL;
	u_int			 i;

	for (i = 0; i < IMAGE_LOADS; i++) {
		if (image_loads[i].id[0] == '\0')
			return (&image_loads[i]);
		if ((image_loads[i].error != NULL || image_loads[i].absent) &&
		    !image_loads[i].checking && (l == NULL ||
		    image_loads[i].when < l->when))
			l = &image_loads[i];
	}
	if (l != NULL)
		image_forget(l);
	return (l);
}

/*
 * Starts loading image id from manifest m (its blobs all in store c):
 * 0 (it loads; image_state says when it is there), or -1 with *code and
 * *cause.
 */
int
image_load(struct cas *c, const char *id, const struct manifest *m,
    int *code, char **cause)
{
	struct image_load	*l;
	const char		*podman;
	char			*dir, *name, *argv[8];
	int			 rc;

	*code = 422;
	if ((podman = container_podman(cause)) == NULL)
		return (-1);
	if ((l = image_find(id)) != NULL)
		image_forget(l);	/* absent, or failed: again */
	*code = 503;
	if ((l = image_slot()) == NULL) {
		xasprintf(cause, "%d images are loading here already",
		    IMAGE_LOADS);
		return (-1);
	}
	*code = 400;
	/* Its name is its directory's: podman load tags it so. */
	xasprintf(&dir, "%s/images/tmp/gmux-image-%s", path_home(), id);
	confine_remove(dir);
	if (mkdir_p(dir, 0700) != 0) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		free(dir);
		return (-1);
	}
	if (image_layout(c, m, id, dir, cause) != 0) {
		confine_remove(dir);
		free(dir);
		return (-1);
	}
	/*
	 * podman load names an OCI directory's image after the path it is
	 * given: loaded from its parent, it is localhost/gmux-image-ID.  The
	 * paths are the shell's arguments, never its script.
	 */
	name = strrchr(dir, '/');
	*name = '\0';
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)"cd \"$1\" && exec \"$2\" load -i \"$3\"";
	argv[3] = (char *)"sh";
	argv[4] = dir;
	argv[5] = (char *)podman;
	argv[6] = name + 1;
	argv[7] = NULL;
	snprintf(l->id, sizeof l->id, "%s", id);
	rc = proc_async_start(argv, IMAGE_LOAD_MS, image_loaded, l, cause);
	*name = '/';
	l->dir = dir;
	if (rc != 0) {
		*code = 500;
		image_forget(l);
		return (-1);
	}
	return (0);
}

/* Asks podman whether it has image id already: 0 if it asks. */
static int
image_ask(const char *id)
{
	struct image_load	*l;
	char			*cause = NULL;

	if ((l = image_slot()) == NULL)
		return (-1);
	snprintf(l->id, sizeof l->id, "%s", id);
	l->checking = 1;
	if (image_exists(l, &cause) != 0) {
		log_debug("%s: %.12s: %s", __func__, id, cause);
		free(cause);
		image_forget(l);
		return (-1);
	}
	return (0);
}
