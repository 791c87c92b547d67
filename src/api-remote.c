/*
 * api-remote.c: the routes of remote runs (docs/remote.md): what a synced
 * tree lacks, blobs up and down, a job's results back (pull), and the
 * job's own copy of its tree under its directory.  The work is done by
 * remote-host.c on the daemon's blob store ($GMUX_HOME/blobs); these are
 * the HTTP ends.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"

#define API_STORE_SIZE	(20ULL << 30)	/* BLOB_STORE_SIZE */
#define API_UPLOAD_MAX	(10ULL << 30)	/* UPLOAD_LIMIT: one run's upload */
#define API_PULL_MAX	(10ULL << 30)	/* PULL_LIMIT: one pull */

static struct cas	*api_store;

/* A size setting (BLOB_STORE_SIZE=20G); a bad one is reported. */
uint64_t
api_size_setting(const char *key, uint64_t def)
{
	const char	*v = config_get(key);
	char		*cause = NULL;
	uint64_t	 n;

	if (v == NULL)
		return (def);
	if (parse_size(v, &n, &cause) != 0 || n == 0) {
		log_warnx("%s: %s; using the default", key, cause ? cause :
		    "must not be 0");
		free(cause);
		return (def);
	}
	return (n);
}

/* The blob store, opened on first use.  NULL with *cause. */
struct cas *
api_remote_store(char **cause)
{
	char	*dir;

	if (api_store != NULL)
		return (api_store);
	xasprintf(&dir, "%s/blobs", path_home());
	api_store = cas_open(dir, api_size_setting("BLOB_STORE_SIZE",
	    API_STORE_SIZE), cause);
	free(dir);
	return (api_store);
}

/* At the daemon's orderly end: the store is marked clean. */
void
api_remote_close(void)
{
	prepare_shutdown();	/* its thread reads the store */
	cas_close(api_store);
	api_store = NULL;
}

/*
 * Answers with what a remote_host_* function returned, and frees its
 * reply and cause.
 */
void
api_remote_answer(struct evhttp_request *req, int code, json_t *reply,
    char *cause)
{
	if (code >= 300 && reply != NULL &&
	    json_object_get(reply, "error") == NULL)
		json_object_set_new(reply, "error", json_string(cause ? cause :
		    "refused"));
	if (code >= 300 && reply == NULL)
		api_error(req, code, "%s", cause ? cause : "refused");
	else
		api_reply(req, code, reply);
	json_decref(reply);
	free(cause);
}

/* The store, or NULL once the request has been answered 500. */
static struct cas *
api_remote_store_or_fail(struct evhttp_request *req)
{
	struct cas	*c;
	char		*cause = NULL;

	if ((c = api_remote_store(&cause)) == NULL)
		api_remote_answer(req, 500, NULL, cause);
	return (c);
}

/* The blob store for another family's routes; NULL: answered 500. */
struct cas *
api_remote_cas(struct evhttp_request *req)
{
	return (api_remote_store_or_fail(req));
}

/* The raw request body. */
static const void *
api_raw(struct evhttp_request *req, size_t *len)
{
	struct evbuffer	*b = evhttp_request_get_input_buffer(req);

	*len = evbuffer_get_length(b);
	if (*len == 0)
		return ("");
	return (evbuffer_pullup(b, -1));
}

/* GET /v1/sync/manifest/DIGEST: what a tree sent before lacks now. */
void
api_sync_manifest_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct cas	*c;
	json_t		*reply = NULL;
	char		*cause = NULL;
	int		 code;

	if ((c = api_remote_store_or_fail(req)) == NULL)
		return;
	code = remote_host_manifest_get(c, who->owner, api_size_setting(
	    "UPLOAD_LIMIT", API_UPLOAD_MAX), id, &reply, &cause);
	api_remote_answer(req, code, reply, cause);
}

/* POST /v1/sync/manifest: a manifest; answers what to send. */
void
api_sync_manifest_post(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct cas	*c;
	const void	*body;
	json_t		*reply = NULL;
	char		*cause = NULL;
	size_t		 len;
	int		 code;

	if ((c = api_remote_store_or_fail(req)) == NULL)
		return;
	body = api_raw(req, &len);
	code = remote_host_manifest_post(c, who->owner, api_size_setting(
	    "UPLOAD_LIMIT", API_UPLOAD_MAX), body, len, &reply, &cause);
	api_remote_answer(req, code, reply, cause);
}

/* POST /v1/blobs: a batch of small blobs, taken whole or not at all. */
void
api_blobs_post(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct cas	*c;
	const void	*body;
	json_t		*reply = NULL;
	char		*cause = NULL;
	size_t		 len;
	int		 code;

	if ((c = api_remote_store_or_fail(req)) == NULL)
		return;
	body = api_raw(req, &len);
	code = remote_host_batch(c, who->owner, body, len, &reply, &cause);
	api_remote_answer(req, code, reply, cause);
}

/* A query parameter as a byte count; -1 if absent, -2 if malformed. */
static int
api_query_u64(struct evhttp_request *req, const char *name, uint64_t *v)
{
	const char	*s = api_query(req, name);
	char		*end;

	if (s == NULL)
		return (-1);
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0)
		return (-2);
	return (0);
}

/*
 * PUT /v1/blobs/DIGEST: a blob, whole, or one part of a large one
 * (?size=N&offset=K).
 */
void
api_blob_put(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct cas	*c;
	const void	*body;
	json_t		*reply = NULL;
	char		*cause = NULL;
	uint64_t	 size, offset;
	size_t		 len;
	int		 code, rs, ro;

	body = api_raw(req, &len);
	rs = api_query_u64(req, "size", &size);
	ro = api_query_u64(req, "offset", &offset);
	if (rs == -2 || ro == -2 || (rs == -1) != (ro == -1)) {
		api_error(req, 400, "a part needs size and offset, in bytes");
		return;
	}
	if ((c = api_remote_store_or_fail(req)) == NULL)
		return;
	if (rs == -1)
		code = remote_host_blob_put(c, who->owner, id, body, len,
		    &cause);
	else
		code = remote_host_blob_part(c, who->owner, id, offset, size,
		    body, len, &reply, &cause);
	api_remote_answer(req, code, reply, cause);
}

/* GET /v1/blobs/DIGEST: the content. */
void
api_blob_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evbuffer	*b;
	struct cas	*c;
	uint64_t	 size;
	int		 fd;

	if ((c = api_remote_store_or_fail(req)) == NULL)
		return;
	if (!digest_valid(id) || (fd = cas_open_blob(c, id, &size)) == -1) {
		api_error(req, 404, "no blob %.64s here", id);
		return;
	}
	b = evbuffer_new();
	if (size > 0)
		evbuffer_add_file(b, fd, 0, (ev_off_t)size);	/* takes fd */
	else
		close(fd);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/octet-stream");
	api_send(req, 200, b);
	evbuffer_free(b);
}

/* POST /v1/jobs/ID/pull {"globs":[...]}: the job's matching files. */
void
api_job_pull(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	struct cas	*c;
	json_t		*body = NULL, *reply = NULL;
	char		*cause = NULL;
	int		 code, fd;

	if ((j = job_find(id)) == NULL || !api_may_job(who, j)) {
		api_error(req, 404, "no job %s", id);
		return;
	}
	if (!job_ended(j)) {
		/* Its files may still change, or be swapped under the walk. */
		api_error(req, 409, "%s is %s: pull once it has ended", j->name,
		    job_state_name(j->state));
		return;
	}
	if ((fd = worktree_open(j->id, &cause)) == -1) {
		if (errno == ENOENT)
			api_error(req, 404, "%s has no synced tree to pull "
			    "from (it was not started with one, or its work "
			    "tree has gone: REMOTE_WORK_RETENTION)", j->name);
		else
			api_error(req, 500, "%s: %s", j->name, cause);
		free(cause);
		return;
	}
	if ((body = api_body(req, &cause)) == NULL)
		code = 400;
	else if ((c = api_remote_store(&cause)) == NULL)
		code = 500;
	else
		code = remote_host_pull(c, fd, body, api_size_setting(
		    "PULL_LIMIT", API_PULL_MAX), &reply, &cause);
	close(fd);
	if (code == 200)
		worktree_pulled(j->id);
	api_remote_answer(req, code, reply, cause);
	json_decref(body);
}

/* Adds NAME=VALUE to env unless NAME is there. */
static void
api_env_default(char ***env, const char *name, const char *value)
{
	size_t	 n, i, len = strlen(name);

	if (value == NULL)
		return;
	for (i = 0; (*env)[i] != NULL; i++) {
		if (strncmp((*env)[i], name, len) == 0 &&
		    (*env)[i][len] == '=')
			return;
	}
	n = i;
	*env = xreallocarray(*env, n + 2, sizeof **env);
	xasprintf(&(*env)[n], "%s=%s", name, value);
	(*env)[n + 1] = NULL;
}

/*
 * The job's tree: checked now (412 if blobs are missing), set up by
 * worktree.c (over a stored tree, or a copy), made by the helper thread
 * (prepare.c) where there is something to make.  Returns 0 with *prep
 * (NULL: nothing to make), or the status with *reply and *cause.
 */
static int
api_remote_tree(const char *mdigest, u_int id, struct prepare **prep,
    json_t **reply, char **cause)
{
	struct manifest	 m;
	struct cas	*c;
	int		 code;

	*prep = NULL;
	if ((code = worktree_reuse(id, mdigest, cause)) != 0)
		return (code == 1 ? 0 : 500);
	if ((c = api_remote_store(cause)) == NULL)
		return (500);
	if ((code = remote_host_tree(c, mdigest, &m, reply, cause)) != 0)
		return (code);
	code = worktree_prepare(id, c, mdigest, &m, prep, cause);
	manifest_clear(&m);
	return (code == 0 ? 0 : 500);
}

/*
 * Job id's directory and its work tree: r's manifest, a stored tree (*prep
 * the work of making it, if any), or an empty one; r->cwd is set to it
 * and, when confined, the host's PATH and HOME are added to what the
 * client sent.  Returns 0, or the status with *cause (and *reply: what is
 * missing, for 412), nothing left behind.
 */
static int
api_remote_setup(struct jobreq *r, u_int id, int confined,
    struct prepare **prep, json_t **reply, char **cause)
{
	char	*dir = path_job(id), *work = path_job_file(id, "work");
	int	 code = 0;

	*prep = NULL;
	*reply = NULL;
	worktree_remove(id);	/* left by a refused job with this id */
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		code = 500;
		xasprintf(cause, "%s: %s", dir, strerror(errno));
	} else if (r->manifest == NULL) {
		if (mkdir(work, 0700) != 0) {
			code = 500;
			xasprintf(cause, "%s: %s", work, strerror(errno));
		}
	} else
		code = api_remote_tree(r->manifest, id, prep, reply, cause);
	if (code != 0) {
		worktree_remove(id);
		rmdir(dir);
	} else {
		if (r->flags & JOB_PULL)
			worktree_pull_pending(id);
		free(r->manifest);
		r->manifest = NULL;
		free(r->cwd);
		r->cwd = work;
		work = NULL;
		if (confined && r->env != NULL) {
			api_env_default(&r->env, "PATH", jail_path());
			api_env_default(&r->env, "HOME", getenv("HOME"));
		}
	}
	free(work);
	free(dir);
	return (code);
}

/*
 * For POST /v1/jobs: a confined request (over TCP) may not name a
 * directory of the host (cwd); it runs in the tree it synced (manifest),
 * copied under the job's directory as jobs/jN/work, or in an empty one
 * there (api_remote_setup).  A request from the Unix socket may also name
 * a manifest.  Returns 0, with *prep the work of making the tree if there
 * is one to make (hand it to prepare_submit), or -1 once it has replied
 * with the refusal (412 if blobs are missing).
 */
int
api_remote_job(struct evhttp_request *req, const struct api_who *who,
    struct jobreq *r, u_int id, struct prepare **prep)
{
	json_t	*reply = NULL;
	char	*cause = NULL;
	int	 code;

	*prep = NULL;
	if (who->confined && r->cwd != NULL) {
		api_error(req, 400, "cwd: a remote job runs in the tree it "
		    "synced (manifest), not in a directory of the host");
		return (-1);
	}
	if (!who->confined && r->manifest == NULL)
		return (0);
	if ((code = api_remote_setup(r, id, who->confined, prep, &reply,
	    &cause)) != 0) {
		api_remote_answer(req, code, reply, cause);
		return (-1);
	}
	return (0);
}

/*
 * A confined cluster job (docs/cluster.md) runs as a remote job: in the
 * tree it brought (fetched here first: cluster-tree.c), or in an empty
 * jobs/jN/work.  Returns 0 with *prep as api_remote_job, or -1 with
 * *cause (nothing left behind).
 */
int
api_remote_cluster_tree(struct jobreq *r, u_int id, struct prepare **prep,
    char **cause)
{
	json_t	*reply = NULL;
	int	 code;

	code = api_remote_setup(r, id, 1, prep, &reply, cause);
	json_decref(reply);
	return (code == 0 ? 0 : -1);
}

/*
 * A tree that came from another member, stored here as if its owner had
 * sent it: the manifest (*reply: what to fetch), then each blob asked for.
 * Return the HTTP status of the same routes, with *cause.
 */
int
api_remote_take_manifest(const char *owner, const void *body, size_t len,
    json_t **reply, char **cause)
{
	struct cas	*c;

	if ((c = api_remote_store(cause)) == NULL)
		return (500);
	return (remote_host_manifest_post(c, owner, api_size_setting(
	    "UPLOAD_LIMIT", API_UPLOAD_MAX), body, len, reply, cause));
}

int
api_remote_take_blob(const char *owner, const char *digest, const void *body,
    size_t len, char **cause)
{
	struct cas	*c;

	if ((c = api_remote_store(cause)) == NULL)
		return (500);
	return (remote_host_blob_put(c, owner, digest, body, len, cause));
}

/*
 * A blob of owner's that this host fetches itself, in parts (a member
 * fetching a cluster job's tree): begun with PUT /v1/blobs' checks, into a
 * writer of its own (remote_host_take_begin); 0, 200 if it is here
 * already, else the status with *cause.
 */
int
api_remote_take_begin(const char *owner, const char *digest, uint64_t size,
    struct cas_writer **w, char **cause)
{
	struct cas	*c;

	if ((c = api_remote_store(cause)) == NULL)
		return (500);
	return (remote_host_take_begin(c, owner, digest, size, w, cause));
}

/* Is the tree of manifest mdigest whole here?  0, or 412 with *reply. */
int
api_remote_have_tree(const char *mdigest, json_t **reply, char **cause)
{
	struct manifest	 m;
	struct cas	*c;
	int		 code;

	*reply = NULL;
	if ((c = api_remote_store(cause)) == NULL)
		return (500);
	if ((code = remote_host_tree(c, mdigest, &m, reply, cause)) == 0)
		manifest_clear(&m);
	return (code);
}

/*
 * What a remote job's submitter should know at once: the --allow rules
 * its fence will refuse because this host keeps its loopback closed to
 * remote jobs (REMOTE_LOOPBACK).  A JSON array of lines, or NULL.
 */
json_t *
api_remote_warnings(const struct jobreq *r)
{
	json_t	*a;
	char	**v;
	size_t	  i;

	if (!r->confined || r->fence == NULL || jail_open_loopback() ||
	    (v = fence_loopback_rules(r->fence)) == NULL)
		return (NULL);
	a = json_array();
	for (i = 0; v[i] != NULL; i++)
		json_array_append_new(a, json_sprintf("the host keeps its "
		    "loopback closed to remote jobs: %s will be refused; see "
		    "REMOTE_LOOPBACK", v[i]));
	strv_free(v);
	return (a);
}

/* The job with this id was refused after all: its tree goes. */
void
api_remote_job_undo(u_int id)
{
	char	*dir;

	dir = path_job(id);
	worktree_remove(id);
	rmdir(dir);
	free(dir);
}
