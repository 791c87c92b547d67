/*
 * cluster-job.c: the jobs a member claims and runs (docs/cluster.md).  It
 * mirrors its assignments (a/NAME/), claims each by a compare-and-swap
 * (a/NAME/ID -> r/NAME/ID) and only then starts it as a local job, through
 * the same scheduler, keeper, ledger and fence as any other; the moment
 * the local job ends (job_set_state tells it), it moves r/NAME/ID to e/ID,
 * again by CAS, and retries on the tick only what etcd refused.  The
 * local job carries its cluster id in GMUX_CLUSTER_JOB and in its
 * directory, so a restarted daemon finds what it was running.  A stop
 * asked on any member is a key, s/ID, that the member holding the job
 * acts on.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster-int.h"

#define CLUSTER_ENV	"GMUX_CLUSTER_JOB="

struct cj {
	char		*id;		/* the cluster's job id */
	u_int		 local;		/* the local job, 0: none */
	char		 lkey[16];	/* local, as cj.byloc's key */
	int64_t		 mod;		/* r/NAME/ID as we wrote it */
	json_t		*rec;
	int		 busy;		/* a Txn in flight */
	int		 cutoff;	/* stopped when cut off: requeue */
	int		 unstarted;	/* claimed, never started: requeue */
	int		 ended;		/* its end is to be written */
};

static struct {
	struct mirror	*a;
	struct mirror	*s;		/* stop requests: s/ID */
	struct hmap	*jobs;		/* id -> struct cj (ours) */
	struct hmap	*byloc;		/* local job id -> struct cj */
	u_int		 nretry;	/* ends etcd did not take yet */
	struct hmap	*claims;	/* a/ keys being claimed -> key */
	struct hmap	*locals;	/* cluster id -> u_int * local id */
	int		 loaded;	/* r/NAME/ read after a start */
	int		 loading;
} cj;

/* Which local job runs c (0: none yet), found again by its end. */
static void
cj_set_local(struct cj *c, u_int local)
{
	if (c->local != 0)
		hmap_del(cj.byloc, c->lkey);
	c->local = local;
	if (local == 0)
		return;
	snprintf(c->lkey, sizeof c->lkey, "%u", local);
	hmap_put(cj.byloc, c->lkey, c);
}

static struct cj *
cj_add(const char *id, u_int local, int64_t mod, json_t *rec)
{
	struct cj	*c = xcalloc(1, sizeof *c);

	c->id = xstrdup(id);
	c->mod = mod;
	c->rec = rec;
	hmap_put(cj.jobs, c->id, c);
	cj_set_local(c, local);
	return (c);
}

static void
cj_free(struct cj *c)
{
	cj_set_local(c, 0);
	hmap_del(cj.jobs, c->id);
	json_decref(c->rec);
	free(c->id);
	free(c);
}

/*
 * Which local job runs (ran) which cluster job: kept in memory and in the
 * job's directory (jobs/jN/cluster), since a job's environment, where
 * GMUX_CLUSTER_JOB is, is dropped when it ends.
 */
static void
cj_local_set(const char *id, u_int local, int save)
{
	u_int	*v;
	char	*dir, *path, *cause = NULL;

	if ((v = hmap_get(cj.locals, id)) == NULL) {
		v = xmalloc(sizeof *v);
		hmap_put(cj.locals, xstrdup(id), v);
	}
	*v = local;
	if (!save)
		return;
	dir = path_job(local);
	path = path_job_file(local, "cluster");
	/* no fsync: a daemon's kill leaves it; a host's crash, its jobs too */
	if (mkdir_p(dir, 0700) != 0 || write_file_replace(path, id, strlen(id),
	    0600, &cause) != 0) {
		log_warnx("cluster: %s: %s", path, cause != NULL ? cause :
		    strerror(errno));
		free(cause);
	}
	free(path);
	free(dir);
}

/* After a start: the cluster jobs of the jobs this daemon knows. */
static void
cj_locals_load(void)
{
	struct job	*j;
	char		*path, *text, *cause = NULL;
	size_t		 len;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		path = path_job_file(j->id, "cluster");
		text = read_file(path, 256, &len, &cause);
		free(path);
		free(cause);
		cause = NULL;
		if (text == NULL)
			continue;
		if (len > 0 && strlen(text) == len && hmap_get(cj.locals,
		    text) == NULL)
			cj_local_set(text, j->id, 0);
		free(text);
	}
}

static struct job *
cj_local_find(const char *id)
{
	u_int	*v = hmap_get(cj.locals, id);

	return (v != NULL ? job_find_id(*v) : NULL);
}

/* The local job that runs (or ran) cluster job id here, or NULL. */
struct job *
cluster_job_local(const char *id)
{
	return (cj_local_find(id));
}

/*
 * The member whose broker a @mesh worker running here as local job works
 * for (docs/python.md, "Across a cluster"), if that is another member;
 * its cluster job's id in *id.  NULL for any other job.
 */
const char *
cluster_job_entry(u_int local, const char **id)
{
	char		 lkey[16];
	struct cj	*c;
	const char	*entry;

	if (cluster == NULL || cj.byloc == NULL)
		return (NULL);
	snprintf(lkey, sizeof lkey, "%u", local);
	if ((c = hmap_get(cj.byloc, lkey)) == NULL)
		return (NULL);
	entry = json_string_value(json_object_get(c->rec, "task_entry"));
	if (entry == NULL || strcmp(entry, cluster->name) == 0)
		return (NULL);
	*id = c->id;
	return (entry);
}

/* ------------------------------------------------------------------ */
/* Ending: r/NAME/ID -> e/ID (or back to q/ID after a cut-off). */

static void
cj_end_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct cj	*c = hmap_get(cj.jobs, arg);

	free(arg);
	if (c == NULL)
		return;
	c->busy = 0;
	if (err != NULL) {
		cj.nretry++;	/* again next tick */
		return;
	}
	if (r->succeeded)
		cluster->nwrites++;
	else
		log_info("cluster: job %s was moved (requeued) meanwhile",
		    c->id);
	cj_free(c);
}

/*
 * A gang's part that failed ends its gang: the stops of its other parts
 * go in the Txn of its end (their members stop them, or end them unstarted).
 */
static void
cj_gang_stops(json_t *rec, json_t *ops)
{
	json_t		*g = json_object_get(rec, "gang");
	const char	*gid = json_string_value(json_object_get(g, "id"));
	json_int_t	 rank, size, k, attempt;
	char		*owner, *id;

	if (gid == NULL)
		return;
	rank = json_integer_value(json_object_get(g, "rank"));
	size = json_integer_value(json_object_get(g, "size"));
	attempt = json_integer_value(json_object_get(g, "attempt"));
	owner = cluster_stop_value(json_object_get(rec, "owner"));
	for (k = 0; k < size && k < CLUSTER_GANG_MAX; k++) {
		if (k == rank)
			continue;
		id = cluster_part_id(gid, (u_int)k, (u_int)attempt);
		json_array_append_new(ops, etcd_op_put(cluster_key("s/%s", id),
		    owner, 0));
		free(id);
	}
	free(owner);
}

static void
cj_end(struct cj *c, struct job *j)
{
	json_t		*o = json_deep_copy(c->rec), *ops, *fail = NULL;
	char		*text, *to, *from;
	int		 failed, gang = json_object_get(c->rec, "gang") != NULL;

	/* a gang's part never goes back alone: the leader requeues gangs */
	if (!gang && (c->unstarted || (c->cutoff && j != NULL &&
	    j->state == JOB_STOPPED))) {
		xasprintf(&to, "%sq/%s", cluster->prefix, c->id);
		json_object_del(o, "member");
		json_object_del(o, "cards");
	} else {
		xasprintf(&to, "%se/%s", cluster->prefix, c->id);
		json_object_set_new(o, "state", json_string(j != NULL ?
		    job_state_name(j->state) : "failed"));
		json_object_set_new(o, "exit_code", json_integer(j != NULL ?
		    j->exit_code : -1));
		/* (a start that failed said why: cj_start) */
		if (j == NULL && json_object_get(o, "reason") == NULL)
			json_object_set_new(o, "reason", json_string(
			    c->unstarted ? "its member restarted before it "
			    "started" : "its member lost the local job"));
		else if (j != NULL && j->reason != NULL)
			json_object_set_new(o, "reason",
			    json_string(j->reason));
		json_object_set_new(o, "ended", json_integer(clock_ms()));
	}
	failed = j == NULL || j->state != JOB_EXITED || j->exit_code != 0;
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	c->busy = c->ended = 1;
	xasprintf(&from, "%sr/%s/%s", cluster->prefix, cluster->name, c->id);
	ops = json_pack("[ooo]", etcd_op_delete(from), etcd_op_put(to, text,
	    0), etcd_op_delete(cluster_key("s/%s", c->id)));
	if (failed)
		cj_gang_stops(c->rec, ops);	/* a gang's part: the others */
	/*
	 * A part the leader ended (its member left) has a stop that only
	 * its own member deletes; a part's id is never used again.
	 */
	if (gang)
		fail = json_pack("[o]", etcd_op_delete(cluster_key("s/%s",
		    c->id)));
	etcd_call_owns(etcd_txn(cluster->etcd, json_pack("[o]",
	    etcd_cmp(from, "MOD", c->mod)), ops, fail, cj_end_cb,
	    xstrdup(c->id)), free);
	free(from);
	free(to);
	free(text);
}

/* ------------------------------------------------------------------ */
/* Claiming: a/NAME/ID -> r/NAME/ID, then the local job. */

/*
 * A gang's part learns its place: the names torch.distributed's env://
 * and torchrun read, and gmux's own.  It is one part here (nodes 1).
 */
static void
cj_gang_env(json_t *g, struct jobreq *r)
{
	const char	*gid = json_string_value(json_object_get(g, "id"));
	const char	*master;
	json_int_t	 rank, size, port;

	master = json_string_value(json_object_get(g, "master"));
	if (gid == NULL || master == NULL)
		return;
	rank = json_integer_value(json_object_get(g, "rank"));
	size = json_integer_value(json_object_get(g, "size"));
	port = json_integer_value(json_object_get(g, "port"));
	job_env_set(&r->env, "RANK=%lld", (long long)rank);
	job_env_set(&r->env, "NODE_RANK=%lld", (long long)rank);
	job_env_set(&r->env, "LOCAL_RANK=0");
	job_env_set(&r->env, "WORLD_SIZE=%lld", (long long)size);
	job_env_set(&r->env, "MASTER_ADDR=%s", master);
	job_env_set(&r->env, "MASTER_PORT=%lld", (long long)port);
	job_env_set(&r->env, "GMUX_GANG_ID=%s", gid);
	job_env_set(&r->env, "GMUX_GANG_RANK=%lld", (long long)rank);
	job_env_set(&r->env, "GMUX_GANG_SIZE=%lld", (long long)size);
	/* Slurm's names, one task a node as a part is */
	job_env_set(&r->env, "SLURM_PROCID=%lld", (long long)rank);
	job_env_set(&r->env, "SLURM_NODEID=%lld", (long long)rank);
	job_env_set(&r->env, "SLURM_LOCALID=0");
	job_env_set(&r->env, "SLURM_NTASKS=%lld", (long long)size);
	job_env_set(&r->env, "SLURM_NNODES=%lld", (long long)size);
	r->spec.nodes = 1;
}

/*
 * A gang's rank 0 serves its rendezvous on MASTER_PORT here (torch's
 * TCPStore): the leader keeps live gangs' ports apart, but a port another
 * program holds on this host fails the part (the gang with it) with the
 * reason, not a rendezvous that waits for ever.
 */
static int
cj_gang_port_free(json_t *g, char **cause)
{
	struct sockaddr_in	 sin;
	json_int_t		 port;
	int			 fd, one = 1, rc;

	if (g == NULL || json_integer_value(json_object_get(g, "rank")) != 0)
		return (0);
	port = json_integer_value(json_object_get(g, "port"));
	if (port <= 0 || port > 65535 ||
	    (fd = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0)) == -1)
		return (0);
	/* (past connections' TIME_WAIT do not count) */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	rc = bind(fd, (struct sockaddr *)&sin, sizeof sin);
	close(fd);
	if (rc == 0 || errno != EADDRINUSE)
		return (0);
	xasprintf(cause, "MASTER_PORT %lld is in use on %s (another "
	    "program holds it)", (long long)port, cluster->name);
	return (-1);
}

/* Takes out of env (in place) the variables whose names start prefix. */
static void
cj_env_drop(char **env, const char *prefix)
{
	size_t	 i, k, len = strlen(prefix);

	for (i = k = 0; env != NULL && env[i] != NULL; i++) {
		if (strncmp(env[i], prefix, len) == 0)
			free(env[i]);
		else
			env[k++] = env[i];
	}
	if (env != NULL)
		env[k] = NULL;
}

static int
cj_run(struct cj *c, char **cause)
{
	struct jobreq	 r;
	struct prepare	*prep = NULL;
	struct job	*j;
	const char	*owner;
	int		 code, rc;

	jobreq_init(&r);
	if (jobreq_from_json(json_object_get(c->rec, "req"), &r, cause) != 0)
		goto fail;
	job_env_set(&r.env, "%s%s", CLUSTER_ENV, c->id);
	cj_gang_env(json_object_get(c->rec, "gang"), &r);
	if (cj_gang_port_free(json_object_get(c->rec, "gang"), cause) != 0)
		goto fail;
	/* its own array's, not one its submitter ran in */
	cj_env_drop(r.env, "GMUX_ARRAY_");
	cj_env_drop(r.env, "SLURM_ARRAY_");
	cluster_array_env(json_object_get(c->rec, "element"), &r.env);
	owner = json_string_value(json_object_get(c->rec, "owner"));
	/* From another machine (docs/cluster.md): jailed, as a remote job. */
	if (json_is_true(json_object_get(c->rec, "confined")) &&
	    (jail_remote_job(&r.confined, cause) != 0 ||
	    api_remote_cluster_tree(&r, state_peek_id(), &prep, cause) != 0))
		goto fail;
	/* A @mesh worker (docs/python.md): it reaches this member's broker. */
	if ((r.flags & JOB_TASK_WORKER) && task_worker_job(&r, cause) != 0)
		goto fail;
	/*
	 * Which local job it is, said before it can start: a daemon killed
	 * before this line left a claim that never ran (requeued when it is
	 * back), one killed after it, a job that may have (never run again).
	 */
	cj_local_set(c->id, state_peek_id(), 1);
	j = job_create(0, owner != NULL ? owner : "?", &r);
	/* a synced tree is copied first, off the loop (prepare.c) */
	if (prep != NULL)
		rc = prepare_submit(prep, j, state_peek_id(), &code, cause);
	else
		rc = server_sched_submit(j, state_peek_id(), &code, cause);
	if (rc != 0) {
		job_free(j);
		api_remote_job_undo(state_peek_id());
		goto fail;
	}
	state_next_id();
	cj_set_local(c, j->id);
	log_info("cluster: job %s runs here as %s", c->id, j->name);
	if (job_ended(j))
		cj_end(c, j);	/* ended before it was known as c's */
	return (0);
fail:
	jobreq_clear(&r);
	return (-1);
}

/* Starts claimed job c, or ends it failed with why (or err: it could not). */
static void
cj_start(struct cj *c, const char *err)
{
	char	*cause = NULL;

	if (err == NULL && cj_run(c, &cause) == 0)
		return;
	log_warnx("cluster: job %s: %s", c->id, err != NULL ? err : cause);
	json_object_set_new(c->rec, "reason", json_string(err != NULL ? err :
	    cause));
	free(cause);
	cj_end(c, NULL);
}

/* Its tree came (err NULL) or did not: the job id starts, or fails. */
static void
cj_fetched(void *arg, const char *err)
{
	char		*id = arg;
	struct cj	*c;

	if (cluster != NULL && (c = hmap_get(cj.jobs, id)) != NULL &&
	    c->local == 0 && !c->ended)
		cj_start(c, err);	/* else stopped or gone meanwhile */
	free(id);
}

static void
cj_claim_cb(struct etcd_reply *r, const char *err, void *arg)
{
	char		*akey = arg;
	const char	*id = strrchr(akey, '/') + 1;
	struct cj	*c;
	json_t		*rec;

	rec = hmap_del(cj.claims, akey);
	if (err != NULL || !r->succeeded || cluster == NULL) {
		log_debug("%s: %s: %s", __func__, akey, err != NULL ? err :
		    "not ours now");
		json_decref(rec);
		free(akey);
		return;
	}
	cluster->nwrites++;
	mirror_delete(cj.a, akey, r->rev);
	c = cj_add(id, 0, r->rev, rec);
	if (cluster_tree_from(rec) != NULL)	/* its tree comes first */
		cluster_tree_fetch(rec, cj_fetched, xstrdup(id));
	else
		cj_start(c, NULL);
	free(akey);
}

static void
cj_claim(struct mirror_entry *me)
{
	const char	*id = strrchr(me->key, '/') + 1;
	json_t		*rec;
	char		*text, *akey;

	if (hmap_get(cj.claims, me->key) != NULL ||
	    hmap_get(cj.jobs, id) != NULL ||
	    mirror_get(cj.s, cluster_key("s/%s", id)) != NULL)
		return;		/* in flight, ours, or to be stopped */
	rec = json_deep_copy(me->val);
	json_object_set_new(rec, "claimed", json_integer(clock_ms()));
	if (cluster->origin[0] != '\0')	/* which daemon of this name */
		json_object_set_new(rec, "claimed_by",
		    json_string(cluster->origin));
	text = json_dumps(rec, JSON_COMPACT);
	akey = xstrdup(me->key);
	hmap_put(cj.claims, akey, rec);
	etcd_txn(cluster->etcd, json_pack("[o]", etcd_cmp(me->key, "MOD",
	    me->mod_rev)), json_pack("[oo]", etcd_op_delete(me->key),
	    etcd_op_put(cluster_key("r/%s/%s", cluster->name, id), text, 0)),
	    NULL, cj_claim_cb, akey);
	free(text);
}

/* ------------------------------------------------------------------ */
/* After a start: what r/NAME/ says this member runs. */

/*
 * Was claim rec made by another daemon that used this member's name (its
 * home's origin is not ours)?  Such a daemon's keepers may still run the
 * job: this one neither requeues nor ends it.
 */
static int
cj_claimed_elsewhere(json_t *rec)
{
	const char	*by = json_string_value(json_object_get(rec,
			    "claimed_by"));

	return (by != NULL && cluster->origin[0] != '\0' &&
	    strcmp(by, cluster->origin) != 0);
}

static void
cj_load_cb(struct etcd_reply *r, const char *err, void *arg)
{
	size_t		 plen;
	u_int		 i;
	struct job	*j;
	struct cj	*c;
	json_t		*rec;

	cj.loading = 0;
	if (err != NULL || cluster == NULL)
		return;
	plen = strlen(cluster_key("r/%s/", cluster->name));
	for (i = 0; i < r->nkvs; i++) {
		if (hmap_get(cj.jobs, r->kvs[i].key + plen) != NULL)
			continue;
		if ((rec = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0,
		    NULL)) == NULL) {
			log_warnx("cluster: %s: not JSON; skipped",
			    r->kvs[i].key);
			continue;
		}
		j = cj_local_find(r->kvs[i].key + plen);
		if (j == NULL && cj_claimed_elsewhere(rec)) {
			/* its keeper may run it still: never again here */
			log_warnx("cluster: %s was claimed by another daemon "
			    "named %s (another home); left as it is",
			    r->kvs[i].key + plen, cluster->name);
			json_decref(rec);
			continue;
		}
		c = cj_add(r->kvs[i].key + plen, j != NULL ? j->id : 0,
		    r->kvs[i].mod_rev, rec);
		if (j != NULL) {
			/* it ended while this daemon was away */
			if (job_ended(j))
				cj_end(c, j);
			continue;
		}
		/* claimed, then the daemon died: did it start? */
		c->unstarted = hmap_get(cj.locals, c->id) == NULL;
		cj_end(c, NULL);
	}
	cj.loaded = 1;
}

static void
cj_stopped_cb(struct etcd_reply *r, const char *err, void *arg)
{
	if (err == NULL && r->succeeded && cluster != NULL)
		cluster->nwrites++;
}

/* A stop asked for an assignment not claimed: it ends, never started. */
static void
cj_stop_assigned(struct mirror_entry *me, const char *id)
{
	json_t	*o = json_deep_copy(me->val);
	char	*text;

	json_object_set_new(o, "state", json_string("stopped"));
	json_object_set_new(o, "reason", json_string("stopped before it "
	    "started"));
	json_object_set_new(o, "ended", json_integer(clock_ms()));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	etcd_txn(cluster->etcd, json_pack("[o]", etcd_cmp(me->key, "MOD",
	    me->mod_rev)), json_pack("[ooo]", etcd_op_delete(me->key),
	    etcd_op_put(cluster_key("e/%s", id), text, 0), etcd_op_delete(
	    cluster_key("s/%s", id))), NULL, cj_stopped_cb, NULL);
	free(text);
	mirror_delete(cj.a, me->key, mirror_revision(cj.a) + 1);
}

/* The stops asked (s/ID) for what this member holds. */
static void
cj_stops(void)
{
	struct mirror_entry	*me, *am;
	size_t			 it = 0, plen = strlen(cluster_key("s/"));
	struct cj		*c;
	struct job		*j;
	const char		*id;

	while (mirror_ready(cj.s) && mirror_next(cj.s, &it, &me)) {
		id = me->key + plen;
		if ((c = hmap_get(cj.jobs, id)) != NULL) {
			if ((j = job_find_id(c->local)) != NULL &&
			    !job_ended(j) && !j->stopping)
				job_stop(j, j->req.grace_ms, "stopped through "
				    "the cluster");
			continue;
		}
		/*
		 * A job of ours the cluster ended meanwhile (a gang's part
		 * whose member left: this one, back): stopped here too.
		 */
		if ((j = cj_local_find(id)) != NULL && !job_ended(j) &&
		    !j->stopping) {
			job_stop(j, j->req.grace_ms, "stopped through the "
			    "cluster (it ended there while this member was "
			    "away)");
			continue;
		}
		am = mirror_get(cj.a, cluster_key("a/%s/%s", cluster->name,
		    id));
		if (am != NULL)
			cj_stop_assigned(am, id);
	}
}

/*
 * A local job changed state (job_set_state): if it ran a cluster job and
 * has ended, its end goes to etcd now.
 */
static void
cj_local_changed(struct job *j, enum job_state was)
{
	char		 lkey[16];
	struct cj	*c;

	if (!job_ended(j) || cluster == NULL)
		return;
	snprintf(lkey, sizeof lkey, "%u", j->id);
	if ((c = hmap_get(cj.byloc, lkey)) != NULL && !c->busy)
		cj_end(c, j);
}

/* The ends etcd did not take (it was away): tried again. */
static void
cj_retry(void)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;
	struct cj	**ended = NULL, *c;
	u_int		 n = 0, i;

	while (hmap_next(cj.jobs, &it, &k, &v)) {
		c = v;
		if (c->ended && !c->busy) {
			ended = xreallocarray(ended, n + 1, sizeof *ended);
			ended[n++] = c;
		}
	}
	cj.nretry = 0;
	for (i = 0; i < n; i++)
		cj_end(ended[i], job_find_id(ended[i]->local));
	free(ended);
}

void
cluster_job_tick(int64_t now)
{
	struct mirror_entry		*me;
	size_t				 it = 0;

	if (!cj.loaded) {
		if (!cj.loading) {
			cj.loading = 1;
			etcd_range(cluster->etcd, cluster_key("r/%s/",
			    cluster->name), 1, cj_load_cb, NULL);
		}
		return;
	}
	mirror_restart(cj.a);
	mirror_restart(cj.s);
	cj_stops();
	while (mirror_ready(cj.a) && mirror_next(cj.a, &it, &me))
		cj_claim(me);
	if (cj.nretry > 0)
		cj_retry();
}

/*
 * How long j's keeper may go without a daemon before it stops j itself
 * (docs/cluster.md, "Faults"): a --requeue cluster job is placed again
 * once its member has been gone the lease and the grace, so its copy here
 * must be gone before then, daemon or not.  0 for any other job.
 */
int64_t
cluster_job_orphan_ms(const struct job *j)
{
	if (cluster == NULL || !(j->req.flags & JOB_REQUEUE) ||
	    jobreq_env(&j->req, "GMUX_CLUSTER_JOB") == NULL)
		return (0);
	return ((int64_t)cluster->ttl * 1000 + CLUSTER_GRACE_MS -
	    CLUSTER_ORPHAN_MARGIN_MS);
}

/*
 * Cut off from etcd past the lease: stops the --requeue jobs this member
 * runs for the cluster before the leader may place them again.
 */
void
cluster_job_cutoff(void)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;
	struct cj	*c;
	struct job	*j;

	while (cj.jobs != NULL && hmap_next(cj.jobs, &it, &k, &v)) {
		c = v;
		if ((j = job_find_id(c->local)) == NULL || job_ended(j) ||
		    !(j->req.flags & JOB_REQUEUE) || c->cutoff)
			continue;
		c->cutoff = 1;
		log_warnx("cluster: cut off: stopping %s (%s) to be requeued",
		    c->id, j->name);
		job_stop(j, j->req.grace_ms, "cut off from the cluster");
	}
}

void
cluster_job_start(void)
{
	cj.jobs = hmap_create();
	cj.byloc = hmap_create();
	cj.nretry = 0;
	cj.claims = hmap_create();
	cj.locals = hmap_create();
	cj_locals_load();
	cj.a = mirror_create(cluster->etcd, cluster_key("a/%s/",
	    cluster->name), NULL, NULL);
	cj.s = mirror_create(cluster->etcd, cluster_key("s/"), NULL, NULL);
	job_state_hook = cj_local_changed;
}

void
cluster_job_stop(void)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;

	mirror_free(cj.a);
	mirror_free(cj.s);
	cj.a = cj.s = NULL;
	while (cj.jobs != NULL && hmap_next(cj.jobs, &it, &k, &v)) {
		json_decref(((struct cj *)v)->rec);
		free(((struct cj *)v)->id);
		free(v);
	}
	hmap_free(cj.jobs);
	cj.jobs = NULL;
	hmap_free(cj.byloc);
	cj.byloc = NULL;
	job_state_hook = NULL;
	it = 0;
	while (cj.claims != NULL && hmap_next(cj.claims, &it, &k, &v)) {
		free((char *)k);
		json_decref(v);
	}
	hmap_free(cj.claims);
	cj.claims = NULL;
	it = 0;
	while (cj.locals != NULL && hmap_next(cj.locals, &it, &k, &v)) {
		free((char *)k);
		free(v);
	}
	hmap_free(cj.locals);
	cj.locals = NULL;
}
