/*
 * remote.c: the client's side of a remote run's files, over a transport
 * the caller provides (struct remote_io: remote-net.c over TLS in the CLI,
 * remote-local.c in process for tests and benches).  remote_sync sends the
 * working directory: scan, manifest, ask which blobs the host lacks (by
 * digest first, so an unchanged tree is one small request), send those,
 * small ones batched and large ones one by one (the transport may run those
 * in parallel until flush).  remote_pull brings a job's matching files back.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define REMOTE_BATCH_FILL	(8 * 1024 * 1024)
#define REMOTE_BATCH_FILES	4096

struct remote_up {
	const struct remote_io	*io;
	int			 rootfd;
	struct batch		 batch;
	struct progress		*pg;
	struct sync_stats	*st;
	uint64_t		 pending_bytes;		/* in the batch */
	u_int			 pending_files;
};

/* Makes *cause from a reply that is not a success. */
static void
remote_failed(const char *what, long status, json_t *reply, char **cause)
{
	const char	*err = json_string_value(json_object_get(reply,
			    "error"));

	xasprintf(cause, "%s: %s (HTTP %ld)", what, err != NULL ? err :
	    "the host refused", status);
}

/* One request whose reply must be 2xx JSON; *reply is the caller's. */
static int
remote_call(const struct remote_io *io, const char *method, const char *path,
    const char *ctype, const void *body, size_t len, json_t **reply,
    long *status, char **cause)
{
	long	 st = 0;

	*reply = NULL;
	if (io->request(io->arg, method, path, ctype, body, len, &st, reply,
	    cause) != 0)
		return (-1);
	if (status != NULL)
		*status = st;
	if (st >= 200 && st < 300)
		return (0);
	remote_failed(path, st, *reply, cause);
	json_decref(*reply);
	*reply = NULL;
	return (-1);
}

static int
remote_send_batch(struct remote_up *u, char **cause)
{
	json_t		*reply;
	const char	*body;
	size_t		 len;
	int		 rc;

	if (u->batch.n == 0)
		return (0);
	body = batch_data(&u->batch, &len);
	rc = remote_call(u->io, "POST", "/v1/blobs", REMOTE_BATCH_TYPE,
	    body, len, &reply, NULL, cause);
	json_decref(reply);
	if (rc == 0) {
		progress_add(u->pg, u->pending_files, u->pending_bytes,
		    clock_mono_ms());
		u->st->moved += u->pending_files;
		u->st->moved_bytes += u->pending_bytes;
	}
	batch_clear(&u->batch);
	batch_init(&u->batch);
	u->pending_files = 0;
	u->pending_bytes = 0;
	return (rc);
}

/* Opens a file to send and checks it is still what was scanned. */
static int
remote_open(struct remote_up *u, const struct mentry *e, char **cause)
{
	struct stat	 st;
	int		 fd;

	if ((fd = confine_open(u->rootfd, e->path, O_RDONLY, 0)) == -1) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != e->size) {
		xasprintf(cause, "%s changed while it was being sent; run "
		    "again", e->path);
		close(fd);
		return (-1);
	}
	return (fd);
}

static int
remote_send_one(struct remote_up *u, const struct mentry *e, char **cause)
{
	int	 fd, rc;

	if ((fd = remote_open(u, e, cause)) == -1)
		return (-1);
	if (e->size > REMOTE_SMALL_MAX) {
		if (u->io->put_blob(u->io->arg, e->digest, fd, e->size,
		    cause) != 0)
			return (-1);
		progress_add(u->pg, 1, e->size, clock_mono_ms());
		u->st->moved++;
		u->st->moved_bytes += e->size;
		return (0);
	}
	rc = batch_add_fd(&u->batch, e->digest, fd, e->size);
	close(fd);
	if (rc != 0) {
		xasprintf(cause, "%s changed while it was being sent; run "
		    "again", e->path);
		return (-1);
	}
	u->pending_files++;
	u->pending_bytes += e->size;
	if (batch_len(&u->batch) >= REMOTE_BATCH_FILL ||
	    u->batch.n >= REMOTE_BATCH_FILES)
		return (remote_send_batch(u, cause));
	return (0);
}

/* Sends the blobs the host asked for (a JSON array of digests). */
static int
remote_upload(struct remote_up *u, const struct manifest *m, json_t *missing,
    char **cause)
{
	struct hmap		*by = hmap_create();
	const struct mentry	*e;
	json_t			*d;
	size_t			 i;
	uint64_t		 bytes = 0;
	int			 rc = -1;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].type == MENTRY_FILE)
			hmap_put(by, m->v[i].digest, &m->v[i]);
	}
	json_array_foreach(missing, i, d) {
		if (!json_is_string(d) || (e = hmap_get(by,
		    json_string_value(d))) == NULL) {
			xasprintf(cause, "the host asked for a blob that is "
			    "not in the manifest");
			goto out;
		}
		bytes += e->size;
	}
	progress_start(u->pg, u->pg->fd, "upload", json_array_size(missing),
	    bytes, clock_mono_ms());
	json_array_foreach(missing, i, d) {
		e = hmap_get(by, json_string_value(d));
		if (remote_send_one(u, e, cause) != 0)
			goto out;
	}
	if (remote_send_batch(u, cause) == 0 &&
	    u->io->flush(u->io->arg, cause) == 0)
		rc = 0;
out:
	progress_end(u->pg, clock_mono_ms());
	hmap_free(by);
	return (rc);
}

/* Asks what the host lacks: by digest, else with the whole manifest. */
static json_t *
remote_ask(const struct remote_io *io, const char *text, size_t len,
    const char *mdigest, char **cause)
{
	json_t	*reply;
	char	*path;
	long	 status;
	int	 rc;

	xasprintf(&path, "/v1/sync/manifest/%s", mdigest);
	rc = remote_call(io, "GET", path, NULL, NULL, 0, &reply, &status,
	    cause);
	free(path);
	if (rc == 0)
		return (reply);
	if (status != 404)
		return (NULL);
	free(*cause);
	*cause = NULL;
	if (remote_call(io, "POST", "/v1/sync/manifest", REMOTE_MANIFEST_TYPE,
	    text, len, &reply, NULL, cause) != 0)
		return (NULL);
	return (reply);
}

/*
 * Sends the tree at root to the host behind io.  sc is the stat cache (it
 * is saved after the scan; NULL: none), pgfd the progress fd (-1: none).
 * On success mdigest holds the manifest's digest, for POST /v1/jobs.
 * Returns 0 or -1 with *cause.
 */
int
remote_sync(const struct remote_io *io, const char *root,
    struct statcache *sc, int pgfd, char *mdigest, struct sync_stats *st,
    char **cause)
{
	struct remote_up	 u;
	struct progress		 pg;
	struct manifest		 m;
	json_t			*reply = NULL, *missing;
	char			*text, *why = NULL;
	size_t			 len;
	int			 rc = -1;

	if (sync_scan(root, sc, &m, st, cause) != 0)
		return (-1);
	if (sc != NULL && statcache_save(sc, &why) != 0) {
		log_warnx("%s", why);	/* only costs hashing next time */
		free(why);
	}
	text = manifest_format(&m, &len);
	digest_buf(text, len, mdigest);
	if ((reply = remote_ask(io, text, len, mdigest, cause)) == NULL)
		goto out;
	missing = json_object_get(reply, "missing");
	if (!json_is_array(missing)) {
		xasprintf(cause, "the host's answer has no \"missing\"");
		goto out;
	}
	rc = 0;
	if (json_array_size(missing) != 0) {
		memset(&u, 0, sizeof u);
		u.io = io;
		u.pg = &pg;
		pg.fd = pgfd;
		u.st = st;
		batch_init(&u.batch);
		if ((u.rootfd = open(root, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) ==
		    -1) {
			xasprintf(cause, "%s: %s", root, strerror(errno));
			rc = -1;
		} else {
			rc = remote_upload(&u, &m, missing, cause);
			close(u.rootfd);
		}
		batch_clear(&u.batch);
	}
out:
	json_decref(reply);
	free(text);
	manifest_clear(&m);
	return (rc);
}

static int
remote_fetch(const char *digest, int fd, void *arg, char **cause)
{
	const struct remote_io	*io = arg;

	return (io->get_blob(io->arg, digest, fd, cause));
}

/* A job's name as it may appear in a path: letters, digits, '-', '_'. */
static int
remote_job_ok(const char *job)
{
	size_t	 i;

	for (i = 0; job[i] != '\0'; i++) {
		if (i >= 32 || !((job[i] >= 'a' && job[i] <= 'z') ||
		    (job[i] >= 'A' && job[i] <= 'Z') ||
		    (job[i] >= '0' && job[i] <= '9') || job[i] == '-' ||
		    job[i] == '_'))
			return (0);
	}
	return (i != 0);
}

/*
 * Is glob a pull pattern: relative to the job's tree, never climbing out
 * of it?  0, or -1 with *cause naming it.
 */
int
remote_pull_pattern(const char *glob, char **cause)
{
	const char	*p;
	size_t		 n;

	if (*glob == '\0') {
		xasprintf(cause, "an empty pattern matches nothing");
		return (-1);
	}
	for (p = glob; *p != '\0'; p += n + (p[n] == '/')) {
		n = strcspn(p, "/");
		if ((p == glob && n == 0) || (n == 2 && strncmp(p, "..",
		    2) == 0)) {
			xasprintf(cause, "'%.64s': a pull pattern is relative "
			    "to the job's tree (no leading /, no ..)", glob);
			return (-1);
		}
	}
	return (0);
}

/*
 * Brings the files of job matching globs (gitignore patterns) from the
 * host into root, fetching only those whose local copy differs.  Returns
 * 0 or -1 with *cause.
 */
int
remote_pull(const struct remote_io *io, const char *job, char *const *globs,
    const char *root, int pgfd, struct sync_stats *st, char **cause)
{
	struct progress	 pg;
	struct manifest	 m;
	json_t		*body, *reply;
	const char	*text;
	char		*path, *s, *why = NULL;
	size_t		 i;
	int		 rc;

	if (!remote_job_ok(job)) {
		xasprintf(cause, "'%.32s' is not a job", job);
		return (-1);
	}
	body = json_pack("{s:[]}", "globs");
	for (i = 0; globs[i] != NULL; i++)
		json_array_append_new(json_object_get(body, "globs"),
		    json_string(globs[i]));
	s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	xasprintf(&path, "/v1/jobs/%s/pull", job);
	rc = remote_call(io, "POST", path, "application/json", s, strlen(s),
	    &reply, NULL, cause);
	free(path);
	free(s);
	if (rc != 0)
		return (-1);
	if ((text = json_string_value(json_object_get(reply, "manifest"))) ==
	    NULL || manifest_parse(text, strlen(text), REMOTE_ENTRIES_MAX, &m,
	    &why) != 0) {
		xasprintf(cause, "the host's pull list is bad: %s",
		    why ? why : "no manifest");
		free(why);
		json_decref(reply);
		return (-1);
	}
	json_decref(reply);
	progress_start(&pg, pgfd, "pull", m.n, m.bytes, clock_mono_ms());
	rc = sync_pull_apply(root, &m, remote_fetch, (void *)io, &pg, st,
	    cause);
	progress_end(&pg, clock_mono_ms());
	manifest_clear(&m);
	return (rc);
}
