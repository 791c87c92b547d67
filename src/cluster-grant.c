/*
 * cluster-grant.c: a token sees and submits to the clusters it is granted
 * only (docs/cluster.md, "Several clusters").  The member that checks a
 * token decides, on every request over TCP: a token not granted this
 * member's cluster gets 403 on the cluster's routes and sees none of the
 * cluster's jobs that run here.  A member's call to another is its own
 * (the owner travels, the token does not), made only after that check.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "gmux.h"

/*
 * This host's cluster as its config names it (NULL: standalone), known
 * before the cluster's own start: the first invite is made before it.
 */
const char *
cluster_grant_own(void)
{
	const char	*mode = config_get("CLUSTER_MODE");

	if (mode == NULL || strcmp(mode, "member") != 0)
		return (NULL);
	return (config_get("CLUSTER_ID"));
}

/* Is token tk (NULL: none) granted this host's cluster, if it has one? */
int
cluster_grant_ok(const struct token *tk)
{
	const char	*own = cluster_grant_own();

	if (own == NULL)
		return (1);
	return (tk != NULL && token_granted(tk, own));
}

/* A cluster route: /v1/cluster and what is under it. */
static int
cluster_grant_route(const char *path)
{
	return (strncmp(path, "/v1/cluster", 11) == 0 && (path[11] == '\0' ||
	    path[11] == '/'));
}

/*
 * A request whose token lacks this member's cluster, on one of the
 * cluster's routes: 403 naming the cluster.  Returns 1 if it answered.
 */
int
cluster_grant_refuse(struct evhttp_request *req, const char *path,
    const struct api_who *who)
{
	if (!who->ungranted || path == NULL || !cluster_grant_route(path))
		return (0);
	api_error(req, 403, "cluster %s: this token is not granted it (on "
	    "the host: gmux token grant ID %s)", cluster_grant_own(),
	    cluster_grant_own());
	return (1);
}

/*
 * Does local job j run a cluster job?  Such a job has its id in
 * jobs/jN/cluster (cluster-job.c), even after it ended.
 */
int
cluster_grant_runs_cluster_job(const struct job *j)
{
	struct stat	 st;
	char		*path;
	int		 rc;

	path = path_job_file(j->id, "cluster");
	rc = stat(path, &st) == 0;
	free(path);
	return (rc);
}

/* Does the asker's token lack the cluster whose job local job j runs? */
int
cluster_grant_hides(const struct api_who *who, const struct job *j)
{
	return (who->ungranted && cluster_grant_runs_cluster_job(j));
}
