/*
 * task-conn.c: the task broker's connections (docs/tasks.md).  A caller's
 * is an API connection taken over after its upgrade request (evhttp has
 * no hand-over, so the connection object stays, idle, until the stream
 * ends and it is freed with it); a worker's comes to the workers' own
 * socket, in the directory that is every worker job's working directory,
 * and is known by the job its peer belongs to.  Both carry frames of
 * frame.c's shape whose payload is a JSON header and opaque bytes.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gmux.h"
#include "task-int.h"

#define CONN_TICK_MS	100
#define CONN_POOL_TICKS	10
#define CONN_GC_TICKS	50

struct conn {
	struct bufferevent	*bev;
	struct evhttp_connection *evcon;	/* a caller's, freed with it */
	char			*owner;
	char			*session;	/* a caller's */
	int			 tcp;		/* values only inline */
	int			 plain;		/* a socket's bev, no TLS */
	struct task_worker	*worker;	/* a worker's, from its hello */
	u_int			 job;
	char			*member;	/* a peer worker's member */
	char			*rjob;		/* and its cluster job */
	int			 pseats;	/* and its job there */
	int			 pcard;
	int64_t			 pmem;
	struct task_vout	*vout;		/* a call streamed to it */
	struct task_vin		*vin;		/* a result streamed from it */
};

static struct task_broker	*broker;
static struct hmap		*callers;	/* session -> conn */
static struct event		*tick_ev;
static u_int			 ticks;

static void	conn_dispatch(struct task_pool *);
static void	conn_deliver(struct task *);
static void	conn_ended(struct task *);
static void	conn_pool_empty(struct task_pool *, const char *);
static int	task_conn_listen(char **);

/*
 * Writes what it can of iov to a plain socket with nothing queued before
 * it (libevent would add a write event for it, then drop it: two
 * epoll_ctl and a wakeup per frame); returns the bytes written, 0 if
 * none (an error is the bufferevent's to find).
 */
static size_t
conn_write_now(struct conn *c, struct iovec *iov, int n)
{
	ssize_t	 w;

	if (!c->plain ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)) != 0)
		return (0);
	w = writev(bufferevent_getfd(c->bev), iov, n);
	return (w > 0 ? (size_t)w : 0);
}

/* Sends one frame: type, length, header length, header, bytes. */
static void
conn_send(struct conn *c, u_char type, json_t *hdr, const void *data,
    size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);
	u_char		 fh[TASK_FRAME_HDR];
	struct iovec	 iov[3];
	char		*text;
	size_t		 n, done;
	int		 i;

	text = json_dumps(hdr, JSON_COMPACT);
	n = strlen(text);
	task_frame_head(fh, type, n, len);
	iov[0].iov_base = fh;
	iov[0].iov_len = sizeof fh;
	iov[1].iov_base = text;
	iov[1].iov_len = n;
	iov[2].iov_base = (void *)data;
	iov[2].iov_len = len;
	done = conn_write_now(c, iov, len != 0 ? 3 : 2);
	for (i = 0; i < 3; i++) {
		if (done >= iov[i].iov_len) {
			done -= iov[i].iov_len;
			continue;
		}
		evbuffer_add(out, (u_char *)iov[i].iov_base + done,
		    iov[i].iov_len - done);
		done = 0;
	}
	free(text);
}

static void
conn_free(struct conn *c)
{
	bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
	if (c->evcon != NULL)
		evhttp_connection_free(c->evcon);	/* and its bev */
	else
		bufferevent_free(c->bev);
	free(c->owner);
	free(c->session);
	free(c->member);
	free(c->rjob);
	task_vout_free(c->vout);
	task_vin_free(c->vin, 1);
	free(c);
}

/* A caller's connection ended; its tasks go on, their results wait. */
static void
conn_caller_close(struct conn *c)
{
	log_debug("%s: session %s", __func__, c->session);
	if (hmap_get(callers, c->session) == c)
		hmap_del(callers, c->session);
	conn_free(c);
}

/* A worker's connection ended: its task is lost (maybe failed). */
static void
conn_worker_close(struct conn *c, const char *why)
{
	struct task_pool	*p;
	struct task		*t;

	if (c->worker != NULL) {
		log_debug("%s: %s (%s)", __func__, c->worker->name, why);
		p = c->worker->pool;
		t = task_worker_remove(broker, c->worker, why);
		if (t != NULL)
			conn_deliver(t);
		conn_dispatch(p);
		conn_pool_empty(p, "left");
	}
	conn_free(c);
}

/*
 * Streams the rest of the call leased to c (docs/tasks.md, "To a
 * worker"); a file that cannot be read fails its task.
 */
static void
conn_stream_call(struct conn *c)
{
	struct task	*t = c->worker->task;
	int		 rc;

	if ((rc = task_vout_pump(c->bev, c->vout)) == 0)
		return;
	task_vout_free(c->vout);
	c->vout = NULL;
	if (rc == -1 && t != NULL) {
		task_fail(broker, t, "its call's file cannot be read");
		conn_ended(t);
	}
}

static void
conn_drained(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	if (c->vout != NULL && c->worker != NULL)
		conn_stream_call(c);
}

/*
 * The lease frame for t: its call inline, or the file's path; to a
 * worker that cannot reach the spool, the file's size, then its parts.
 */
static void
conn_lease(struct conn *c, struct task *t)
{
	json_t		*hdr;
	uint64_t	 size;
	char		*cause = NULL;

	hdr = json_pack("{s:I,s:i,s:I}", "task", (json_int_t)t->id,
	    "attempt", (int)t->attempts, "timeout_ms",
	    (json_int_t)t->timeout_ms);
	if (c->tcp)
		json_object_set_new(hdr, "stream", json_true());
	if (t->call.file != NULL && c->tcp) {
		task_vout_free(c->vout);
		if ((c->vout = task_vout_open(t, &size, &cause)) == NULL) {
			log_warnx("tasks: t%" PRIu64 ": %s", t->id, cause);
			free(cause);
			size = 0;
		}
		json_object_set_new(hdr, "size", json_integer(size));
	} else if (t->call.file != NULL)
		json_object_set_new(hdr, "file", json_string(t->call.file));
	conn_send(c, TF_LEASE, hdr, t->call.data, t->call.len);
	json_decref(hdr);
	if (c->vout != NULL)
		conn_stream_call(c);
	log_debug("%s: t%" PRIu64 " to %s (attempt %u)", __func__, t->id,
	    c->worker->name, t->attempts);
}

/* Leases queued tasks of p to its idle workers, longest idle first. */
static void
conn_dispatch(struct task_pool *p)
{
	struct task_worker	*w, *w1;
	struct task		*t;
	int64_t			 now;

	if (p->nqueued == 0 || p->nworkers == 0)
		return;
	now = clock_mono_ms();
	TAILQ_FOREACH_SAFE(w, &broker->idle, ientry, w1) {
		if (w->pool != p)
			continue;
		if ((t = task_lease(broker, w, now)) == NULL)
			break;
		conn_lease(w->conn, t);
	}
}

/*
 * Tells the callers waiting on p that it has no worker: why is "none" (a
 * submission found none) or "left" (its last worker went away).
 */
static void
conn_pool_empty(struct task_pool *p, const char *why)
{
	struct task	*t;
	struct conn	*c;
	json_t		*hdr;
	struct hmap	*told;

	if (p->nworkers != 0 || p->nqueued == 0)
		return;
	told = hmap_create();
	hdr = json_pack("{s:s,s:i,s:i,s:s}", "pool", p->pool, "workers", 0,
	    "queued", (int)p->nqueued, "why", why);
	TAILQ_FOREACH(t, &p->queue, qentry) {
		if (hmap_get(told, t->session) != NULL ||
		    (c = hmap_get(callers, t->session)) == NULL)
			continue;
		hmap_put(told, t->session, c);
		conn_send(c, TF_POOL, hdr, NULL, 0);
	}
	json_decref(hdr);
	hmap_free(told);
}

/*
 * A result's file as its caller reads it: the path on the Unix socket;
 * over TCP its name in the owner's directory and its size (GET
 * /v1/tasks/values/NAME).
 */
static void
conn_result_file(struct conn *c, json_t *hdr, const char *path)
{
	struct stat	 st;
	const char	*name = strrchr(path, '/');

	if (!c->tcp) {
		json_object_set_new(hdr, "file", json_string(path));
		return;
	}
	json_object_set_new(hdr, "file", json_string(name != NULL ? name + 1 :
	    path));
	json_object_set_new(hdr, "size", json_integer(stat(path, &st) == 0 ?
	    (json_int_t)st.st_size : -1));
}

/* Sends an ended task's result to its caller, if it is connected. */
static void
conn_deliver(struct task *t)
{
	struct conn	*c;
	json_t		*hdr;

	if (t->ended == 0 || t->state == TASK_QUEUED)
		return;
	if ((c = hmap_get(callers, t->session)) == NULL)
		return;
	hdr = json_pack("{s:I,s:s,s:i,s:s}", "id", (json_int_t)t->cid,
	    "state", t->state == TASK_DONE ? "done" : "failed", "attempts",
	    (int)t->attempts, "worker", t->wname);
	if (t->error != NULL)
		json_object_set_new(hdr, "error", json_string(t->error));
	if (t->out.file != NULL)
		conn_result_file(c, hdr, t->out.file);
	conn_send(c, TF_RESULT, hdr, t->out.data, t->out.len);
	json_decref(hdr);
}

/* A task ended (done or failed): kept on disk, then sent. */
static void
conn_ended(struct task *t)
{
	if (t->ended == 0)
		t->ended = clock_mono_ms();
	task_spool_result(t);
	conn_deliver(t);
}

/*
 * A value named by file: only on the Unix socket, a plain name in the
 * spool, which becomes the daemon's to delete.  Returns the path, or NULL
 * with *cause.
 */
static char *
conn_file(struct conn *c, const char *name, char **cause)
{
	struct stat	 st;
	char		*path;

	if (c->tcp && c->worker == NULL)
		return (task_value_take(c->owner, name, cause));
	if (c->tcp) {
		xasprintf(cause, "values over %u bytes come as U frames here",
		    FRAME_MAX);
		return (NULL);
	}
	if (!task_file_valid(name)) {
		xasprintf(cause, "file: '%s' is not a name in the spool", name);
		return (NULL);
	}
	xasprintf(&path, "%s/%s", task_spool_dir(), name);
	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "file: %s: not a file in the spool", name);
		free(path);
		return (NULL);
	}
	return (path);
}

/* Fails a submission that cannot be taken, telling its caller why. */
static void
conn_refuse(struct conn *c, uint64_t cid, const char *why)
{
	json_t	*hdr;

	hdr = json_pack("{s:I,s:s,s:s,s:i}", "id", (json_int_t)cid, "state",
	    "failed", "error", why, "attempts", 0);
	conn_send(c, TF_RESULT, hdr, NULL, 0);
	json_decref(hdr);
}

static void
conn_submit(struct conn *c, json_t *hdr, const u_char *data, size_t len)
{
	struct task	*t;
	const char	*pool, *file;
	char		*path = NULL, *cause = NULL;
	json_int_t	 cid, timeout;
	int		 isnew;

	cid = json_integer_value(json_object_get(hdr, "id"));
	pool = json_string_value(json_object_get(hdr, "pool"));
	timeout = json_integer_value(json_object_get(hdr, "timeout_ms"));
	file = json_string_value(json_object_get(hdr, "file"));
	if (pool == NULL || !task_pool_valid(pool) || cid < 0) {
		conn_refuse(c, (uint64_t)cid, "pool: not a pool key");
		return;
	}
	if ((t = task_find(broker, c->session, (uint64_t)cid)) != NULL) {
		conn_deliver(t);	/* sent again after a reconnect */
		return;
	}
	if (file != NULL && (path = conn_file(c, file, &cause)) == NULL) {
		conn_refuse(c, (uint64_t)cid, cause);
		free(cause);
		return;
	}
	t = task_submit(broker, c->owner, c->session, (uint64_t)cid, pool,
	    timeout, &isnew);
	task_value_set(&t->call, data, len, path);
	task_spool_task(t);
}

static void
conn_ack(struct conn *c, json_t *hdr)
{
	json_t		*ids = json_object_get(hdr, "ids"), *v;
	struct task	*t;
	size_t		 i;

	json_array_foreach(ids, i, v) {
		t = task_find(broker, c->session,
		    (uint64_t)json_integer_value(v));
		if (t == NULL || t->state == TASK_QUEUED ||
		    t->state == TASK_LEASED)
			continue;
		task_spool_remove(broker, t);
		task_drop(broker, t);
	}
}

/* The caller takes back its queued tasks of a pool (docs/tasks.md, X). */
static void
conn_withdraw(struct conn *c, json_t *hdr)
{
	const char	*pool, *why;
	struct task	*t;

	pool = json_string_value(json_object_get(hdr, "pool"));
	why = json_string_value(json_object_get(hdr, "error"));
	if (pool == NULL || !task_pool_valid(pool))
		return;
	if (why == NULL || *why == '\0')
		why = "withdrawn by its caller";
	while ((t = task_withdraw(broker, c->owner, c->session, pool,
	    why)) != NULL)
		conn_ended(t);
}

/* Runs one frame from a caller; -1 closes the connection. */
static int
conn_caller_frame(struct conn *c, const struct frame *f, struct hmap *pools)
{
	const u_char		*data;
	size_t			 len;
	json_t			*hdr;
	struct task_pool	*p;
	const char		*pool;

	if ((hdr = task_payload_parse(f->data, f->len, &data, &len)) == NULL)
		return (-1);
	if (f->type == TF_SUBMIT) {
		conn_submit(c, hdr, data, len);
		pool = json_string_value(json_object_get(hdr, "pool"));
		if (pool != NULL && (p = task_pool_find(broker, c->owner, pool,
		    0)) != NULL)
			hmap_put(pools, p->pool, p);
	} else if (f->type == TF_ACK)
		conn_ack(c, hdr);
	else if (f->type == TF_WITHDRAW)
		conn_withdraw(c, hdr);
	json_decref(hdr);
	return (f->type == TF_SUBMIT || f->type == TF_ACK ||
	    f->type == TF_WITHDRAW ? 0 : -1);
}

static void
conn_worker_done(struct conn *c, json_t *hdr, const u_char *data,
    size_t len)
{
	struct task_worker	*w = c->worker;
	struct task		*t = w->task;
	const char		*lost, *file;
	char			*path = NULL, *cause = NULL;
	uint64_t		 id, size;
	int			 sized;

	lost = json_string_value(json_object_get(hdr, "lost"));
	file = json_string_value(json_object_get(hdr, "file"));
	if (t == NULL || task_value_field(hdr, "task", &id) != 0 ||
	    t->id != id)
		return;		/* cancelled, or from before a restart */
	if (lost != NULL) {
		if (task_lose(broker, t, lost))
			conn_ended(t);
		return;
	}
	if (file != NULL)
		path = conn_file(c, file, &cause);
	else if ((sized = task_value_field(hdr, "size", &size)) == 0)
		path = task_vin_end(&c->vin, id, size, &cause);
	else if (sized == -1) {
		cause = xstrdup("size: a number of bytes is needed");
		task_vin_free(c->vin, 1);
		c->vin = NULL;
	}
	if (path == NULL && cause != NULL) {
		task_fail(broker, t, "%s", cause);
		free(cause);
		conn_ended(t);
		return;
	}
	t = task_complete(broker, w, id);
	task_value_set(&t->out, data, len, path);
	conn_ended(t);
}

/* A part of the leased task's streamed result (docs/tasks.md, U). */
static void
conn_worker_upload(struct conn *c, json_t *hdr, const u_char *data,
    size_t len)
{
	struct task	*t = c->worker->task;
	char		*cause = NULL;
	json_t		*cancel;
	uint64_t	 id;

	if (t == NULL || task_value_field(hdr, "task", &id) != 0 ||
	    t->id != id || !c->tcp)
		return;		/* cancelled meanwhile */
	if (task_vin_part(&c->vin, t, data, len, &cause) == 0)
		return;
	task_vin_free(c->vin, 1);
	c->vin = NULL;
	cancel = json_pack("{s:I,s:s}", "task", (json_int_t)t->id, "reason",
	    cause);
	conn_send(c, TF_CANCEL, cancel, NULL, 0);
	json_decref(cancel);
	task_fail(broker, t, "%s", cause);
	free(cause);
	conn_ended(t);
}

static void
conn_worker_hello(struct conn *c, json_t *hdr)
{
	const char		*pool, *device;
	struct task_worker	*w;
	struct job		*j;

	pool = json_string_value(json_object_get(hdr, "pool"));
	if (pool == NULL || !task_pool_valid(pool))
		return;
	w = task_worker_add(broker, c->owner, pool);
	w->conn = c;
	w->job = c->job;
	w->since = clock_ms();
	w->score = json_number_value(json_object_get(hdr, "score"));
	device = json_string_value(json_object_get(hdr, "device"));
	w->device = xstrdup(device != NULL ? device : "");
	c->worker = w;
	j = job_find_id(c->job);
	log_debug("%s: %s is %s in %s", __func__, w->name, j != NULL ?
	    j->name : "?", pool);
}

/* Runs one frame from a worker; -1 closes the connection. */
static int
conn_worker_frame(struct conn *c, const struct frame *f)
{
	const u_char	*data;
	size_t		 len;
	json_t		*hdr;
	int		 rc = 0;

	if ((hdr = task_payload_parse(f->data, f->len, &data, &len)) == NULL)
		return (-1);
	if (f->type == TF_HELLO && c->worker == NULL)
		conn_worker_hello(c, hdr);
	else if (f->type == TF_DONE && c->worker != NULL)
		conn_worker_done(c, hdr, data, len);
	else if (f->type == TF_UPLOAD && c->worker != NULL)
		conn_worker_upload(c, hdr, data, len);
	else
		rc = -1;
	json_decref(hdr);
	if (rc == 0 && c->worker == NULL)
		rc = -1;
	return (rc);
}

/*
 * Takes every whole frame from c's input.  Returns -1 if the framing is
 * broken.  A caller's submissions of one read are dispatched together.
 */
static int
conn_read_frames(struct conn *c, struct hmap *pools)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	u_char		 hdr[FRAME_HDR];
	struct frame	 f;
	uint32_t	 n;
	int		 rc;

	for (;;) {
		if (evbuffer_copyout(in, hdr, sizeof hdr) < (ssize_t)sizeof hdr)
			return (0);
		n = frame_len(hdr);
		if (n > FRAME_MAX)
			return (-1);
		if (evbuffer_get_length(in) < FRAME_HDR + n)
			return (0);
		f.type = hdr[0];
		f.len = n;
		f.data = (const char *)evbuffer_pullup(in, FRAME_HDR + n) +
		    FRAME_HDR;
		if (pools != NULL)
			rc = conn_caller_frame(c, &f, pools);
		else
			rc = conn_worker_frame(c, &f);
		evbuffer_drain(in, FRAME_HDR + n);
		if (rc != 0)
			return (-1);
	}
}

static void
conn_caller_read(struct bufferevent *bev, void *arg)
{
	struct conn		*c = arg;
	struct hmap		*pools = hmap_create();
	struct task_pool	*p;
	const char		*key;
	size_t			 i = 0;
	int			 rc;

	rc = conn_read_frames(c, pools);
	while (hmap_next(pools, &i, &key, (void **)&p)) {
		conn_dispatch(p);
		conn_pool_empty(p, "none");
	}
	hmap_free(pools);
	if (rc != 0)
		conn_caller_close(c);
}

static void
conn_worker_read(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	if (conn_read_frames(c, NULL) != 0) {
		conn_worker_close(c, "its connection broke the framing");
		return;
	}
	if (c->worker != NULL)
		conn_dispatch(c->worker->pool);
}

static void
conn_caller_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR))
		conn_caller_close(arg);
}

static void
conn_worker_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR))
		conn_worker_close(arg, "its worker went away");
}

/* Fails what is past its deadline; forgets results nobody came for. */
static void
conn_tick(int fd, short events, void *arg)
{
	struct task		*t, *t1;
	struct task_pool	*p;
	struct conn		*c;
	json_t			*hdr;
	int64_t			 now = clock_mono_ms();

	while ((t = task_expired(broker, now)) != NULL) {
		c = t->worker->conn;
		hdr = json_pack("{s:I,s:s}", "task", (json_int_t)t->id,
		    "reason", "timeout");
		conn_send(c, TF_CANCEL, hdr, NULL, 0);
		json_decref(hdr);
		task_fail(broker, t, "timed out after %" PRId64 " ms",
		    t->timeout_ms);
		conn_ended(t);
		conn_dispatch(c->worker->pool);
	}
	if (++ticks % CONN_POOL_TICKS == 0) {
		/* again each second: a caller may have missed the first */
		TAILQ_FOREACH(p, &broker->pools, entry)
			conn_pool_empty(p, "none");
	}
	if (ticks % CONN_GC_TICKS != 0)
		return;
	task_value_sweep(broker);
	TAILQ_FOREACH_SAFE(t, &broker->tasks, entry, t1) {
		if (t->ended != 0 && now - t->ended > TASK_KEEP_MS &&
		    hmap_get(callers, t->session) == NULL) {
			task_spool_remove(broker, t);
			task_drop(broker, t);
		}
	}
}

/* The broker, made (and the spool taken back) on first use. */
struct task_broker *
task_conn_broker(char **cause)
{
	struct timeval	 tv = { 0, CONN_TICK_MS * 1000 };

	if (broker != NULL)
		return (broker);
	if (task_spool_init(cause) != 0 || task_conn_listen(cause) != 0)
		return (NULL);
	broker = task_broker_create();
	callers = hmap_create();
	task_spool_load(broker);
	tick_ev = event_new(server_base, -1, EV_PERSIST, conn_tick, NULL);
	evtimer_add(tick_ev, &tv);
	return (broker);
}

/* May owner take session?  Not if it is another owner's. */
int
task_conn_session_ok(const char *session, const char *owner)
{
	struct conn	*c;
	struct task	*t;

	if ((c = hmap_get(callers, session)) != NULL &&
	    strcmp(c->owner, owner) != 0)
		return (0);
	TAILQ_FOREACH(t, &broker->tasks, entry) {
		if (strcmp(t->session, session) == 0 &&
		    strcmp(t->owner, owner) != 0)
			return (0);
	}
	return (1);
}

/* An upgraded API connection's 101, but for its last empty line. */
static void
conn_upgrade(struct conn *c, bufferevent_data_cb rd, bufferevent_event_cb ev)
{
	bufferevent_setcb(c->bev, rd, conn_drained, ev, c);
	bufferevent_set_timeouts(c->bev, NULL, NULL);
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	evbuffer_add_printf(bufferevent_get_output(c->bev), "HTTP/1.1 101 "
	    "Switching Protocols\r\nUpgrade: gmux-tasks/1\r\n"
	    "Connection: Upgrade\r\n");
}

/*
 * Takes over an upgraded API connection as the stream of a worker that
 * runs on another member for an owner (pw), relayed by that member
 * (task-peer.c): a worker as a local one is, its values inline.
 */
void
task_conn_peer(struct bufferevent *bev, void *evcon,
    const struct task_peer *pw)
{
	struct conn	*c;

	c = xcalloc(1, sizeof *c);
	c->bev = bev;
	c->evcon = evcon;
	c->owner = xstrdup(pw->owner);
	c->tcp = 1;
	c->member = xstrdup(pw->member);
	c->rjob = xstrdup(pw->job);
	c->pseats = pw->seats;
	c->pcard = pw->card;
	c->pmem = pw->mem;
	conn_upgrade(c, conn_worker_read, conn_worker_event);
	evbuffer_add_printf(bufferevent_get_output(bev), "\r\n");
	bufferevent_enable(bev, EV_READ|EV_WRITE);
	log_debug("%s: %s's worker %s on %s", __func__, pw->owner, pw->job,
	    pw->member);
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0)
		conn_worker_read(bev, c);
}

/*
 * Takes over an upgraded API connection as session's caller stream.  A
 * caller that reconnects replaces its old connection and is sent every
 * result still owed to it.
 */
void
task_conn_caller(struct bufferevent *bev, void *evcon, const char *owner,
    const char *session, int tcp)
{
	struct conn		*c, *old;
	struct task		*t;
	struct evbuffer		*out = bufferevent_get_output(bev);

	c = xcalloc(1, sizeof *c);
	c->bev = bev;
	c->evcon = evcon;
	c->owner = xstrdup(owner);
	c->session = xstrdup(session);
	c->tcp = tcp;
	c->plain = !tcp;	/* over TCP, the bev is TLS's */
	if ((old = hmap_get(callers, session)) != NULL)
		conn_caller_close(old);
	hmap_put(callers, c->session, c);
	conn_upgrade(c, conn_caller_read, conn_caller_event);
	if (!tcp)	/* where a local caller starts workers, puts values */
		evbuffer_add_printf(out, "Gmux-Worker-Dir: %s\r\n"
		    "Gmux-Spool: %s\r\n", task_worker_dir(), task_spool_dir());
	evbuffer_add_printf(out, "\r\n");
	bufferevent_enable(bev, EV_READ|EV_WRITE);
	log_debug("%s: session %s of %s", __func__, session, owner);
	TAILQ_FOREACH(t, &broker->tasks, entry) {
		if (strcmp(t->session, session) == 0)
			conn_deliver(t);
	}
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0)
		conn_caller_read(bev, c);
}

/* The running job whose keeper or process group pid belongs to. */
static struct job *
conn_peer_job(pid_t pid)
{
	struct job	*j;
	pid_t		 pgid = getpgid(pid);

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state != JOB_RUNNING)
			continue;
		if (j->keeper_pid == pid || (pgid > 0 && j->pgid == pgid))
			return (j);
	}
	return (NULL);
}

static void
conn_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct ucred	 cred;
	socklen_t	 len = sizeof cred;
	struct job	*j = NULL;
	struct conn	*c;
	const char	*entry, *cid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		j = conn_peer_job(cred.pid);
	if (j == NULL) {
		log_debug("%s: pid %ld is no running job's", __func__,
		    (long)cred.pid);
		close(fd);
		return;
	}
	if ((entry = cluster_job_entry(j->id, &cid)) != NULL) {
		task_peer_relay(fd, j, entry, cid);	/* another's worker */
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->bev = bufferevent_socket_new(server_base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->owner = xstrdup(j->owner);
	c->job = j->id;
	c->tcp = j->req.confined;	/* a remote job's: no spool files */
	c->plain = 1;
	bufferevent_setcb(c->bev, conn_worker_read, conn_drained,
	    conn_worker_event, c);
	bufferevent_enable(c->bev, EV_READ|EV_WRITE);
}

/* Listens on the workers' socket, $GMUX_HOME/tasks/w/worker.sock. */
static int
task_conn_listen(char **cause)
{
	struct sockaddr_un	 sun;
	struct evconnlistener	*l;
	mode_t			 old;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof sun.sun_path,
	    "%s/worker.sock", task_worker_dir()) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: path too long", task_worker_dir());
		return (-1);
	}
	unlink(sun.sun_path);
	old = umask(077);
	l = evconnlistener_new_bind(server_base, conn_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE|LEV_OPT_CLOSE_ON_EXEC, 64,
	    (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (l == NULL) {
		xasprintf(cause, "%s: %s", sun.sun_path, strerror(errno));
		return (-1);
	}
	return (0);
}

/* Where a listed worker runs: a member of a cluster (its job there). */
static void
conn_list_member(json_t *o, const struct conn *c)
{
	const char	*self = cluster_peer_self();

	if (c->member != NULL) {
		json_object_set_new(o, "member", json_string(c->member));
		json_object_set_new(o, "job", json_string(c->rjob));
		json_object_set_new(o, "share", json_real(c->pseats >= 0 ?
		    c->pseats / 100.0 : 0.0));
		json_object_set_new(o, "card", c->pcard >= 0 ?
		    json_integer(c->pcard) : json_null());
		json_object_set_new(o, "mem", c->pmem >= 0 ?
		    json_integer((json_int_t)c->pmem) : json_null());
	} else if (self != NULL)
		json_object_set_new(o, "member", json_string(self));
}

/* The workers, as GET /v1/workers shows them; owner NULL: every one. */
json_t *
task_conn_workers(const char *owner)
{
	struct task_worker	*w;
	struct job		*j;
	json_t			*a = json_array(), *o;

	if (broker == NULL)
		return (a);
	TAILQ_FOREACH(w, &broker->workers, entry) {
		if (owner != NULL && strcmp(owner, w->owner) != 0)
			continue;
		j = job_find_id(w->job);
		o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:f,s:s,s:f,s:I}",
		    "id", w->name, "owner", w->owner, "pool", w->pool->pool,
		    "state", w->task != NULL ? "busy" : "idle",
		    "tasks", (int)w->done, "score", w->score,
		    "device", w->device, "share",
		    j != NULL ? j->seats / 100.0 : 0.0,
		    "since", (json_int_t)w->since);
		json_object_set_new(o, "job", j != NULL ?
		    json_string(j->name) : json_null());
		json_object_set_new(o, "card", j != NULL && j->card >= 0 ?
		    json_integer(j->card) : json_null());
		json_object_set_new(o, "mem", j != NULL ?
		    json_integer((json_int_t)j->mem) : json_null());
		conn_list_member(o, w->conn);
		json_array_append_new(a, o);
	}
	return (a);
}
