/*
 * image-shared.c: images across members that share home storage
 * (HOME_SHARED=1, docs/containers.md, "Images that travel"): the first
 * member that runs a job with an image it has archives it once (podman
 * save) into IMAGE_STORE, the shared directory, and a member that lacks
 * it loads it from there.  Done by the job's keeper before its podman run
 * (it may wait; the daemon's loop does not).
 */

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define IMAGE_SHARED_MS	(10 * 60 * 1000)

/* The shared store, or NULL where homes are not shared. */
static const char *
image_shared_store(void)
{
	if (config_uint("HOME_SHARED", 0, 0, 1) == 0)
		return (NULL);
	return (config_get("IMAGE_STORE"));
}

/* Runs podman with up to 5 args: its output (the caller frees it). */
static char *
image_shared_podman(int *status, const char *a, const char *b,
    const char *c, const char *d, const char *e)
{
	const char	*podman = container_podman(NULL);
	char		*argv[] = { (char *)podman, (char *)a, (char *)b,
			    (char *)c, (char *)d, (char *)e, NULL };

	*status = -1;
	if (podman == NULL)
		return (NULL);
	return (proc_output(argv, IMAGE_SHARED_MS, status));
}

/* STORE/names/HASH: the ID the name had when it was archived. */
static char *
image_shared_name(const char *store, const char *image)
{
	char	 hex[DIGEST_HEX], *path;

	digest_buf(image, strlen(image), hex);
	xasprintf(&path, "%s/names/%s", store, hex);
	return (path);
}

/* Archives image (here, as ID id) into the store, once. */
static void
image_shared_save(const char *store, const char *image, const char *id)
{
	char	*tar, *tmp, *name, *dir, *cause = NULL, *out;
	int	 status;

	xasprintf(&tar, "%s/%s.tar", store, id);
	xasprintf(&tmp, "%s/%s.tar.%ld", store, id, (long)getpid());
	xasprintf(&dir, "%s/names", store);
	if (access(tar, F_OK) != 0) {
		out = image_shared_podman(&status, "save", "-o", tmp, image,
		    NULL);
		free(out);
		if (status != 0 || rename(tmp, tar) != 0)
			unlink(tmp);
	}
	name = image_shared_name(store, image);
	if (access(tar, F_OK) == 0 && mkdir_p(dir, 0755) == 0 &&
	    write_file_atomic(name, id, strlen(id), 0644, &cause) != 0)
		free(cause);
	free(name);
	free(dir);
	free(tmp);
	free(tar);
}

/* Loads image from the store, if it was archived there. */
static void
image_shared_load(const char *store, const char *image)
{
	char	*name, *id, *tar, *out, *cause = NULL;
	int	 status;

	name = image_shared_name(store, image);
	id = read_file(name, DIGEST_HEX, NULL, &cause);
	free(name);
	if (id == NULL) {
		free(cause);
		return;
	}
	id[strcspn(id, "\n")] = '\0';
	if (digest_valid(id)) {
		xasprintf(&tar, "%s/%s.tar", store, id);
		out = image_shared_podman(&status, "load", "-i", tar, NULL,
		    NULL);
		free(out);
		free(tar);
	}
	free(id);
}

/*
 * Before a container job's podman run: with shared homes, archives the
 * image into the store if it is here, else loads it from there.
 */
void
image_shared_prepare(const char *image)
{
	const char	*store;
	char		*id;
	int		 status;

	if ((store = image_shared_store()) == NULL)
		return;
	id = image_shared_podman(&status, "image", "inspect", "--format",
	    "{{.Id}}", image);
	if (id != NULL && status == 0) {
		id[strcspn(id, "\n")] = '\0';
		if (digest_valid(id))
			image_shared_save(store, image, id);
	} else
		image_shared_load(store, image);
	free(id);
}
