/*
 * remote-local.c: a struct remote_io that serves the sync routes in
 * process, straight from the host handlers (remote-host.c) and a blob
 * store, with no HTTP in between.  The tests and bench/sync run the real
 * client and host logic through it; the daemon's routes (api-remote.c)
 * and the CLI's transport (remote-net.c) are the same two ends with a
 * wire between.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define REMOTE_LOCAL_OWNER	"local"	/* the one owner in process */

static int
remote_local_route(struct remote_local *l, const char *method,
    const char *path, const void *body, size_t len, json_t **reply,
    char **cause)
{
	json_t	*j;
	int	 code, fd;

	if (strcmp(method, "GET") == 0 &&
	    strncmp(path, "/v1/sync/manifest/", 18) == 0)
		return (remote_host_manifest_get(l->cas, REMOTE_LOCAL_OWNER,
		    l->max_upload, path + 18, reply, cause));
	if (strcmp(method, "POST") == 0 &&
	    strcmp(path, "/v1/sync/manifest") == 0)
		return (remote_host_manifest_post(l->cas, REMOTE_LOCAL_OWNER,
		    l->max_upload, body, len, reply, cause));
	if (strcmp(method, "POST") == 0 && strcmp(path, "/v1/blobs") == 0) {
		l->batches++;
		return (remote_host_batch(l->cas, REMOTE_LOCAL_OWNER, body,
		    len, reply, cause));
	}
	if (strcmp(method, "POST") == 0 && strncmp(path, "/v1/jobs/", 9) == 0
	    && l->jobdir != NULL && strstr(path, "/pull") != NULL) {
		if ((j = json_loadb(body, len, 0, NULL)) == NULL) {
			xasprintf(cause, "the body is not JSON");
			return (400);
		}
		if ((fd = open(l->jobdir, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) ==
		    -1) {
			json_decref(j);
			xasprintf(cause, "%s: %s", l->jobdir, strerror(errno));
			return (500);
		}
		code = remote_host_pull(l->cas, fd, j, l->max_upload, reply,
		    cause);
		close(fd);
		json_decref(j);
		return (code);
	}
	xasprintf(cause, "no route %s %s", method, path);
	return (404);
}

static int
remote_local_request(void *arg, const char *method, const char *path,
    const char *ctype, const void *body, size_t len, long *status,
    json_t **reply, char **cause)
{
	struct remote_local	*l = arg;
	char			*why = NULL;

	l->requests++;
	*reply = NULL;
	*status = remote_local_route(l, method, path, body, len, reply, &why);
	if (*status >= 300) {
		json_decref(*reply);
		*reply = json_pack("{s:s}", "error", why != NULL ? why : "?");
	}
	free(why);
	return (0);
}

static int
remote_local_put(void *arg, const char *digest, int fd, uint64_t size,
    char **cause)
{
	struct remote_local	*l = arg;
	char			*buf, *why = NULL;
	size_t			 len;
	int			 code;

	l->puts++;
	buf = confine_read_fd(fd, size, &len);
	close(fd);
	if (buf != NULL && l->tamper != NULL)
		l->tamper(buf, len);
	code = remote_host_blob_put(l->cas, REMOTE_LOCAL_OWNER, digest,
	    buf != NULL ? buf : "", buf != NULL ? len : 0, &why);
	free(buf);
	if (code >= 300) {
		xasprintf(cause, "PUT /v1/blobs/%.16s: %s (HTTP %d)", digest,
		    why, code);
		free(why);
		return (-1);
	}
	return (0);
}

static int
remote_local_flush(void *arg, char **cause)
{
	return (0);
}

static int
remote_local_get(void *arg, const char *digest, int fd, char **cause)
{
	struct remote_local	*l = arg;
	char			 buf[64 * 1024];
	ssize_t			 n;
	int			 src, rc = 0;

	l->gets++;
	if ((src = cas_open_blob(l->cas, digest, NULL)) == -1) {
		xasprintf(cause, "GET /v1/blobs/%.16s: not here (HTTP 404)",
		    digest);
		return (-1);
	}
	while ((n = read(src, buf, sizeof buf)) > 0) {
		if (write_all(fd, buf, (size_t)n) == -1) {
			xasprintf(cause, "write: %s", strerror(errno));
			rc = -1;
			break;
		}
	}
	close(src);
	return (rc);
}

/* Fills io to serve from l (which must outlive it). */
void
remote_local_io(struct remote_local *l, struct remote_io *io)
{
	io->request = remote_local_request;
	io->put_blob = remote_local_put;
	io->flush = remote_local_flush;
	io->get_blob = remote_local_get;
	io->arg = l;
}
