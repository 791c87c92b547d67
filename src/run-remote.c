/*
 * run-remote.c: gmux run on a remote host.  With several hosts, each is
 * asked for its cards at once and the job goes where it leaves the most
 * room (remotes_pick); hosts that do not answer, or show the wrong key,
 * are skipped with a warning.  The working directory goes up
 * content-addressed (remote.c over remote-net.c), the job starts in its
 * copy of it, its output streams back like a local job's (stream.c,
 * resuming from its offset if the connection drops), and --pull brings
 * matching files back when it ends.  A job that lost the race for a card
 * (409, with --no-wait) tries the next host.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define RUN_FAILED	125
#define RUN_PROBE_MS	1500

/* What names this machine, not the job: left out of a remote job's env. */
static const char *const run_env_local[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "TMPDIR",
	"TMP", "TEMP", "HOSTNAME", "MAIL", "SHLVL", "_", "DISPLAY",
	"WAYLAND_DISPLAY", "VIRTUAL_ENV", "CUDA_VISIBLE_DEVICES",
	"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
};
static const char *const run_env_local_prefix[] = {
	"XDG_", "SSH_", "DBUS_", "GMUX_", "LD_", "CONDA_", "PYENV_",
};

static int
run_env_keep(const char *kv)
{
	size_t	 n = strcspn(kv, "="), i;

	for (i = 0; i < nitems(run_env_local); i++) {
		if (strlen(run_env_local[i]) == n &&
		    strncmp(kv, run_env_local[i], n) == 0)
			return (0);
	}
	for (i = 0; i < nitems(run_env_local_prefix); i++) {
		if (strncmp(kv, run_env_local_prefix[i],
		    strlen(run_env_local_prefix[i])) == 0)
			return (0);
	}
	return (1);
}

/* The request as a remote host takes it: a manifest, not a directory. */
static json_t *
run_remote_request(json_t *req, const char *mdigest)
{
	json_t	*o = json_deep_copy(req), *env, *keep, *e;
	size_t	 i;

	json_object_del(o, "cwd");
	json_object_set_new(o, "manifest", json_string(mdigest));
	if ((env = json_object_get(o, "env")) != NULL) {
		keep = json_array();
		json_array_foreach(env, i, e) {
			if (json_is_string(e) && run_env_keep(
			    json_string_value(e)))
				json_array_append(keep, e);
		}
		json_object_set_new(o, "env", keep);
	}
	return (o);
}

/*
 * Sends the directory to the host (with its stat cache if cache); 0 with
 * mdigest, or -1 (printed, after who: "gmux run", "gmux sync").
 */
int
run_remote_sync(const struct remote *rm, const char *cwd, int cache,
    const char *who, char *mdigest)
{
	struct remote_net	 n;
	struct remote_io	 io;
	struct statcache	*sc;
	struct sync_stats	 st;
	char			*path, *cause = NULL;
	int64_t			 t0 = clock_mono_ms();
	u_int			 i;
	int			 rc;

	memset(&n, 0, sizeof n);
	n.target = &rm->target;
	remote_net_io(&n, &io);
	sc = NULL;
	if (cache) {
		path = statcache_path(cwd);
		sc = statcache_load(path);
		free(path);
	}
	memset(&st, 0, sizeof st);
	rc = remote_sync(&io, cwd, sc, progress_tty(), mdigest, &st, &cause);
	for (i = 0; i < st.nwarnings; i++)
		fprintf(stderr, "%s: %s\n", who, st.warnings[i]);
	if (st.skipped > st.nwarnings)
		fprintf(stderr, "%s: ... and %llu more skipped\n", who,
		    (unsigned long long)(st.skipped - st.nwarnings));
	if (rc != 0) {
		fprintf(stderr, "%s: %s: %s\n", who, rm->name, cause);
		free(cause);
	}
	log_debug("%s: %s: %llu files, %llu hashed, %llu sent in %u "
	    "requests, %lld ms", __func__, rm->name,
	    (unsigned long long)st.files, (unsigned long long)st.hashed,
	    (unsigned long long)st.moved, n.requests,
	    (long long)(clock_mono_ms() - t0));
	sync_stats_clear(&st);
	statcache_free(sc);
	return (rc);
}

/* Seats and memory the job asks for, as remotes_pick weighs them. */
static void
run_wants(json_t *req, u_int *seats, uint64_t *mem)
{
	json_t	*m = json_object_get(req, "mem");

	*seats = (u_int)(json_number_value(json_object_get(req, "share")) *
	    100 + 0.5);
	*mem = json_is_integer(m) ? (uint64_t)json_integer_value(m) : 0;
}

/* The largest card of every host that answered, and whose it is. */
struct run_largest {
	uint64_t		 mem;
	const struct remote	*rm;
};

/* One host's answer to GET /v1/cards, as room for remotes_pick. */
static void
run_room(struct remote_room *room, struct remote_card_room *cards,
    json_t *a, const struct remote *rm, struct run_largest *big)
{
	json_t		*c;
	size_t		 i;
	uint64_t	 mem;

	json_array_foreach(a, i, c) {
		mem = (uint64_t)json_integer_value(json_object_get(c,
		    "memory"));
		if (mem > big->mem) {
			big->mem = mem;
			big->rm = rm;
		}
	}
	room->ok = 1;
	room->cards = cards;
	room->ncards = 0;
	json_array_foreach(a, i, c) {
		if (i >= CARDS_MAX)
			break;
		cards[i].seats_free = (u_int)(json_number_value(
		    json_object_get(c, "share_free")) * 100 + 0.5);
		cards[i].mem_free = (uint64_t)json_integer_value(
		    json_object_get(c, "mem_free"));
		room->ncards++;
	}
}

/*
 * Orders the hosts to try: with several, each is asked for its room at
 * once (about 1.5 s at most) and they are ranked by remotes_pick; those
 * that did not answer are dropped with a warning.  Returns how many.
 */
static u_int
run_rank(const struct remote **rv, u_int n, json_t *req,
    struct run_largest *big)
{
	struct client_req	 q[REMOTES_MAX];
	struct remote_room	 room[REMOTES_MAX];
	struct remote_card_room	*cards[REMOTES_MAX];
	const struct remote	*order[REMOTES_MAX];
	uint64_t		 mem;
	u_int			 i, seats, k = 0;
	int			 best;

	if (n <= 1)
		return (n);
	for (i = 0; i < n; i++) {
		client_req_init(&q[i], &rv[i]->target, "GET", "/v1/cards");
		hosts_slow_deadlines(rv[i], &q[i]);
	}
	client_multi(q, n, RUN_PROBE_MS);
	memset(room, 0, sizeof room);
	for (i = 0; i < n; i++) {
		cards[i] = xcalloc(CARDS_MAX, sizeof *cards[i]);
		/* Candidates: the default first, unless it was slow. */
		room[i].is_default = i == 0;
		if (q[i].reply.status == 200 && json_is_array(q[i].reply.body))
			run_room(&room[i], cards[i], q[i].reply.body, rv[i],
			    big);
		else
			hosts_skipped(rv[i], &q[i].reply);
		hosts_slow_heard(rv[i], &q[i]);
		client_reply_clear(&q[i].reply);
	}
	run_wants(req, &seats, &mem);
	while ((best = remotes_pick(room, n, seats, mem)) != -1) {
		order[k++] = rv[best];
		room[best].ok = 0;
	}
	for (i = 0; i < n; i++)
		free(cards[i]);
	memcpy(rv, order, k * sizeof *rv);
	return (k);
}

/* What the host said the job should know at once (its "warnings"). */
static void
run_warnings(const struct remote *rm, json_t *job)
{
	json_t	*w;
	size_t	 i;

	json_array_foreach(json_object_get(job, "warnings"), i, w) {
		if (json_is_string(w))
			fprintf(stderr, "gmux run: %s: %s\n", rm->name,
			    json_string_value(w));
	}
}

/*
 * Starts the job on rm (syncing first; again once if the host lost blobs
 * meanwhile).  Returns 0 with *job (the host's reply), 409 if it did not
 * fit there now, 422 if it never could (no card of its type), 400 if the
 * request was bad, or -1 (printed, after who: "gmux run").  gmux
 * workspace create starts its workspace so too.
 */
int
run_remote_start(const struct remote *rm, json_t *req, const char *cwd,
    const char *who, json_t **job)
{
	struct client_reply	 r;
	char			 mdigest[DIGEST_HEX];
	json_t			*body;
	int			 tries, code;

	if (run_image(rm, req) != 0)
		return (-1);
	for (tries = 0; tries < 2; tries++) {
		if (run_remote_sync(rm, cwd, 1, who, mdigest) != 0)
			return (-1);
		body = run_remote_request(req, mdigest);
		if (client_call_at(&rm->target, "POST", "/v1/jobs", body,
		    &r) != 0)
			r.status = 0;
		json_decref(body);
		if (r.status == 201) {
			run_warnings(rm, r.body);
			*job = json_incref(r.body);
			client_reply_clear(&r);
			return (0);
		}
		if (r.status != 412)
			break;
		client_reply_clear(&r);
	}
	if (r.status == 409 || r.status == 422) {
		fprintf(stderr, "%s: %s: %s\n", who, rm->name, r.error);
		code = (int)r.status;
		client_reply_clear(&r);
		return (code);
	}
	fprintf(stderr, "%s: %s: %s\n", who, rm->name, r.error ? r.error :
	    "refused");
	code = r.status == 400 ? 400 : -1;
	client_reply_clear(&r);
	return (code);
}

/* What a pull brought: how many files and bytes, or that none matched. */
static void
run_pull_said(char **pulls, const struct sync_stats *st)
{
	char	*all, *got;
	size_t	 i;

	if (st->files == 0) {
		fprintf(stderr, "gmux run: --pull: nothing matched");
		for (i = 0; pulls[i] != NULL; i++)
			fprintf(stderr, " '%s'", pulls[i]);
		fprintf(stderr, "\n");
		return;
	}
	all = format_size(st->bytes);
	got = format_size(st->moved_bytes);
	fprintf(stderr, "gmux run: --pull: %llu file%s matched (%s): "
	    "fetched %llu (%s), %llu already here\n",
	    (unsigned long long)st->files, st->files == 1 ? "" : "s", all,
	    (unsigned long long)st->moved, got,
	    (unsigned long long)(st->files - st->moved));
	free(all);
	free(got);
}

/* Fetches --pull files into cwd; 0 or -1 (printed). */
static int
run_pull(const struct remote *rm, const char *job, char **pulls,
    const char *cwd, int flags)
{
	struct remote_net	 n;
	struct remote_io	 io;
	struct sync_stats	 st;
	char			*cause = NULL;
	int			 rc;

	memset(&n, 0, sizeof n);
	n.target = &rm->target;
	remote_net_io(&n, &io);
	memset(&st, 0, sizeof st);
	rc = remote_pull(&io, job, pulls, cwd, progress_tty(), &st, &cause);
	if (rc != 0) {
		fprintf(stderr, "gmux run: --pull: %s\n", cause);
		free(cause);
	} else if (st.files == 0 || !(flags & RUN_QUIET))
		run_pull_said(pulls, &st);	/* that none matched: always */
	sync_stats_clear(&st);
	return (rc);
}

/* Streams the job's output until it ends; returns run's exit code. */
static int
run_follow(const struct remote *rm, json_t *job, char **pulls,
    const char *cwd, int flags)
{
	struct stream	 s;
	const char	*id = json_string_value(json_object_get(job, "id"));
	char		 ref[64], *path;
	int		 rc;

	/* A job that waits is told by the stream's first frame. */
	snprintf(ref, sizeof ref, "%s:%s", rm->name, id);
	stream_init(&s, ref, STREAM_RUN);
	xasprintf(&path, "/v1/jobs/%s/log?from=0&follow=1", ref);
	rc = stream_run(&s, "GET", path, NULL, 1);
	free(path);
	if (rc == 1)
		return (130);
	if (rc == 0 && s.ended && (s.exit_code < 0 ||
	    strcmp(s.state, "preempted") == 0))
		run_why(&s);
	if (rc != 0 || !s.ended || s.exit_code < 0)
		return (RUN_FAILED);
	if (pulls != NULL && pulls[0] != NULL &&
	    run_pull(rm, id, pulls, cwd, flags) != 0)
		return (RUN_FAILED);
	return (s.exit_code);
}

/*
 * Refuses, naming the largest card anywhere, a job whose memory no card of
 * any host that answered could ever hold (each host would name only its
 * own).  Returns 1 if refused (printed).
 */
static int
run_too_big(json_t *req, const struct run_largest *big)
{
	uint64_t	 mem;
	u_int		 seats;
	char		*want, *have;

	run_wants(req, &seats, &mem);
	if (big->rm == NULL || mem <= big->mem)
		return (0);
	want = format_size(mem);
	have = format_size(big->mem);
	fprintf(stderr, "gmux run: no card could ever hold it: it needs %s of "
	    "memory; the largest card of any host has %s (%s)\n", want, have,
	    big->rm->name);
	free(want);
	free(have);
	return (1);
}

/*
 * gmux run when the command goes to remote hosts.  req is the request
 * run built (with cwd and env); pulls the --pull patterns (may be NULL).
 * Returns the exit code.
 */
int
run_remote(json_t *req, int flags, char **pulls)
{
	const struct remote	*rv[REMOTES_MAX];
	struct run_largest	 big;
	json_t			*job = NULL;
	const char		*cwd;
	u_int			 n, i, asked;
	int			 rc = -1, detach = flags & RUN_DETACH;

	if (detach && pulls != NULL) {
		fprintf(stderr, "gmux run: --pull fetches when the job ends: "
		    "it cannot go with -d\n");
		return (EXIT_USAGE);
	}
	/* The host keeps the job's tree until the pull (worktree.c). */
	if (pulls != NULL)
		json_object_set_new(req, "pull", json_true());
	cwd = json_string_value(json_object_get(req, "cwd"));
	memset(&big, 0, sizeof big);
	asked = hosts_candidates(rv, REMOTES_MAX);
	n = run_rank(rv, asked, req, &big);
	if (n == 0) {
		fprintf(stderr, "gmux run: no host answered\n");
		return (RUN_FAILED);
	}
	if (run_too_big(req, &big))
		return (RUN_FAILED);
	for (i = 0; i < n; i++) {
		/* Full now (409), or never (422: no card of its type): next. */
		if ((rc = run_remote_start(rv[i], req, cwd, "gmux run",
		    &job)) != 409 &&
		    rc != 422)
			break;
	}
	if (rc != 0)
		return (run_refused(rc));
	if (detach) {
		printf("%s:%s\n", rv[i]->name, json_string_value(
		    json_object_get(job, "id")));
		rc = 0;
	} else {
		/* Where it went, when there was a choice (-d prints it). */
		if (asked > 1 && !(flags & RUN_QUIET))
			fprintf(stderr, "gmux run: on %s:%s (chosen of %u "
			    "hosts)\n", rv[i]->name, json_string_value(
			    json_object_get(job, "id")), asked);
		rc = run_follow(rv[i], job, pulls, cwd, flags);
	}
	json_decref(job);
	return (rc);
}
