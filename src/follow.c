/*
 * follow.c: streaming a job's log to clients (gmux run, logs -f, attach).
 * Each follower reads the log file at its own pace: the next chunk is read
 * only when the previous one has gone out to the socket, so a client that
 * stops reading costs a bounded buffer, not the daemon's memory.  New
 * output is noticed through inotify on the log file; the end of the job
 * through follow_job_ended().  Frames are forwarded whole: the keeper
 * appends each frame in one write, but a reader can still see half of one,
 * so only complete frames leave.
 */

#include <sys/inotify.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "gmux.h"

#define FOLLOW_CHUNK		65536
#define FOLLOW_WRITE_TIMEOUT	300	/* seconds a client may not read */
#define FOLLOW_HEARTBEAT_MS	5000	/* a quiet stream says it lives */

struct follower {
	struct job		*job;
	struct evhttp_request	*req;
	int			 fd;		/* the log, or -1 if none yet */
	uint64_t		 from;		/* output offset asked for */
	uint64_t		 skip;		/* output bytes still to skip */
	char			*buf;		/* read, not yet a full frame */
	size_t			 len;
	int			 follow;
	int			 raw;
	int			 wait_only;	/* no stream: reply at end */
	int			 busy;		/* a chunk is on its way out */
	int			 saw_exit;
	int			 damaged;	/* the log's framing broke */
	int			 done;
	int64_t			 sent;		/* last sent to it, mono ms */
	TAILQ_ENTRY(follower)	 entry;
};

static int		 follow_ifd = -1;
static struct event	*follow_iev;
static struct job	**follow_watched;	/* jobs with a watch */
static u_int		 follow_nwatched;

static void	follow_pump(struct follower *);

/*
 * Finds where output offset `from` is in a log: the file offset of the
 * frame holding it, and in *skip how far into that frame's payload.  The
 * headers are read from large buffered chunks: a line-buffered job writes
 * a frame per line, and a daemon that read them one by one would stall.
 */
static int
follow_seek(int fd, uint64_t from, off_t *off, uint64_t *skip)
{
	static u_char	 buf[1 << 20];
	uint64_t	 pos = 0;
	off_t		 base = 0;
	size_t		 at = 0, have = 0;
	ssize_t		 n;
	uint32_t	 len;

	*off = 0;
	for (;;) {
		if (have - at < FRAME_HDR) {
			/* Refill from the next header on. */
			base = *off;
			n = pread(fd, buf, sizeof buf, base);
			if (n < FRAME_HDR)
				break;
			have = (size_t)n;
			at = 0;
		}
		len = frame_len(buf + at);
		if (!frame_counts(buf[at]) || pos + len > from)
			break;
		pos += len;
		*off += FRAME_HDR + len;
		at = (size_t)(*off - base);
		if (at > have)
			at = have;	/* past the chunk: refill at *off */
	}
	*skip = from > pos ? from - pos : 0;
	return (0);
}

static int
follow_open(struct follower *f)
{
	char	*path;
	off_t	 off;

	if (f->fd != -1)
		return (0);
	path = path_job_file(f->job->id, "log");
	f->fd = open(path, O_RDONLY|O_CLOEXEC);
	free(path);
	if (f->fd == -1)
		return (-1);
	follow_seek(f->fd, f->from, &off, &f->skip);
	lseek(f->fd, off, SEEK_SET);
	return (0);
}

static void
follow_watch(struct job *j)
{
	char	*path;

	if (j->log_wd != -1 || follow_ifd == -1)
		return;
	path = path_job_file(j->id, "log");
	j->log_wd = inotify_add_watch(follow_ifd, path, IN_MODIFY);
	free(path);
	if (j->log_wd == -1)
		return;
	follow_watched = xreallocarray(follow_watched, follow_nwatched + 1,
	    sizeof *follow_watched);
	follow_watched[follow_nwatched++] = j;
}

static void
follow_unwatch(struct job *j)
{
	struct follower	*f;
	u_int		 i;

	TAILQ_FOREACH(f, &j->followers, entry) {
		if (!f->wait_only)
			return;
	}

	if (j->log_wd == -1)
		return;
	inotify_rm_watch(follow_ifd, j->log_wd);
	j->log_wd = -1;
	for (i = 0; i < follow_nwatched; i++) {
		if (follow_watched[i] == j) {
			follow_watched[i] = follow_watched[--follow_nwatched];
			break;
		}
	}
}

static void
follow_free(struct follower *f)
{
	struct job	*j = f->job;

	TAILQ_REMOVE(&j->followers, f, entry);
	if (f->fd != -1)
		close(f->fd);
	free(f->buf);
	free(f);
	follow_unwatch(j);
}

static void
follow_closed(struct evhttp_connection *evcon, void *arg)
{
	struct follower		*f = arg;
	struct evhttp_request	*req = f->req;

	log_debug("%s: %s: client gone", __func__, f->job->name);
	follow_free(f);
	/*
	 * libevent leaves a request whose reply was not finished detached
	 * from its connection, and ours to end: ending it frees it.
	 */
	if (evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
}

/* Adds one frame (or its tail after a skip) to out. */
static void
follow_emit(struct follower *f, struct evbuffer *out, const struct frame *fr)
{
	u_char		 hdr[FRAME_HDR];
	const char	*data = fr->data;
	uint32_t	 len = fr->len;

	if (frame_counts(fr->type) && f->skip > 0) {
		if (f->skip >= len) {
			f->skip -= len;
			return;
		}
		data += f->skip;
		len -= (uint32_t)f->skip;
		f->skip = 0;
	}
	if (fr->type == FRAME_EXIT)
		f->saw_exit = 1;
	if (f->raw) {
		if (frame_counts(fr->type))
			evbuffer_add(out, data, len);
		return;
	}
	frame_header(hdr, fr->type, len);
	evbuffer_add(out, hdr, sizeof hdr);
	evbuffer_add(out, data, len);
}

/* An exit frame for a job whose keeper left none (it was lost). */
static void
follow_emit_exit(struct follower *f, struct evbuffer *out)
{
	struct frame	 fr;
	json_t		*o;
	char		*text;

	o = json_pack("{s:o,s:s}", "exit_code", f->job->exit_code >= 0 ?
	    json_integer(f->job->exit_code) : json_null(), "state",
	    job_state_name(f->job->state));
	if (f->job->lost != 0)
		json_object_set_new(o, "output_lost",
		    json_integer((json_int_t)f->job->lost));
	if (f->job->reason != NULL)
		json_object_set_new(o, "reason", json_string(f->job->reason));
	text = json_dumps(o, JSON_COMPACT);
	fr.type = FRAME_EXIT;
	fr.len = (uint32_t)strlen(text);
	fr.data = text;
	follow_emit(f, out, &fr);
	free(text);
	json_decref(o);
}

static void
follow_written(struct evhttp_connection *evcon, void *arg)
{
	struct follower	*f = arg;

	f->busy = 0;
	follow_pump(f);
}

/*
 * Sends a chunk; the next one, and the end, wait until it has gone out.
 * (Ending a reply while a chunk sent without a callback is still being
 * written loses the rest: libevent 2.1 then runs the chunk's deferred
 * write callback as the end's, and starts reading the next request with
 * the end still in the buffer.)
 */
static void
follow_send(struct follower *f, struct evbuffer *out)
{
	f->busy = 1;
	f->sent = clock_mono_ms();
	evhttp_send_reply_chunk_with_cb(f->req, out, follow_written, f);
}

/* Reads what is new in the log and sends the whole frames in it. */
static ssize_t
follow_read(struct follower *f, struct evbuffer *out)
{
	struct frame	 fr;
	ssize_t		 n, used;
	size_t		 at = 0;
	char		*cause = NULL;

	f->buf = xrealloc(f->buf, f->len + FOLLOW_CHUNK);
	n = read(f->fd, f->buf + f->len, FOLLOW_CHUNK);
	if (n <= 0)
		return (n);
	f->len += (size_t)n;
	while ((used = frame_parse(f->buf + at, f->len - at, &fr,
	    &cause)) > 0) {
		follow_emit(f, out, &fr);
		at += (size_t)used;
	}
	if (used == -1) {
		/* A damaged log: say so once and stop streaming it. */
		log_warnx("%s: %s: %s", __func__, f->job->name, cause);
		free(cause);
		f->len = 0;
		f->damaged = 1;
		return (0);
	}
	memmove(f->buf, f->buf + at, f->len - at);
	f->len -= at;
	return (n);
}

static void
follow_end(struct follower *f, struct evbuffer *out)
{
	if (!f->saw_exit && job_ended(f->job))
		follow_emit_exit(f, out);
	if (evbuffer_get_length(out) > 0)
		evhttp_send_reply_chunk(f->req, out);
	evhttp_connection_set_closecb(evhttp_request_get_connection(f->req),
	    NULL, NULL);
	evhttp_send_reply_end(f->req);
	follow_free(f);
}

static void
follow_pump(struct follower *f)
{
	struct evbuffer	*out;
	ssize_t		 n = 0;

	if (f->busy || f->wait_only)
		return;
	out = evbuffer_new();
	if (follow_open(f) == 0) {
		while (evbuffer_get_length(out) < FOLLOW_CHUNK &&
		    (n = follow_read(f, out)) > 0)
			;
	}
	if (f->damaged || (n <= 0 && (job_ended(f->job) || !f->follow))) {
		follow_end(f, out);
	} else if (evbuffer_get_length(out) > 0)
		follow_send(f, out);
	evbuffer_free(out);
}

static void
follow_inotify_cb(evutil_socket_t fd, short events, void *arg)
{
	char				 buf[4096];
	const struct inotify_event	*ev;
	struct job			*j;
	struct follower			*f, *next;
	ssize_t				 n, at;
	u_int				 i;

	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (at = 0; at < n; at += (ssize_t)sizeof *ev + ev->len) {
			ev = (const struct inotify_event *)(buf + at);
			for (i = 0; i < follow_nwatched; i++) {
				j = follow_watched[i];
				/* An overflow lost events: everyone looks. */
				if (j->log_wd != ev->wd &&
				    !(ev->mask & IN_Q_OVERFLOW))
					continue;
				TAILQ_FOREACH_SAFE(f, &j->followers, entry,
				    next)
					follow_pump(f);
				if (!(ev->mask & IN_Q_OVERFLOW))
					break;
			}
		}
	}
}

void
follow_init(void)
{
	follow_ifd = inotify_init1(IN_NONBLOCK|IN_CLOEXEC);
	if (follow_ifd == -1) {
		log_warn("inotify");
		return;
	}
	follow_iev = event_new(server_base, follow_ifd, EV_READ|EV_PERSIST,
	    follow_inotify_cb, NULL);
	event_add(follow_iev, NULL);
}

/*
 * Starts streaming job j's output from offset `from` to req: frames, or
 * the bare output if raw.  With follow, the stream lasts until the job
 * ends; otherwise it ends at the end of what is there.  An INFO frame with
 * the job goes first when info is set.
 */
void
follow_start(struct job *j, struct evhttp_request *req, uint64_t from,
    int flags, json_t *info)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct timeval		 wtv = { FOLLOW_WRITE_TIMEOUT, 0 };
	struct follower		*f;
	struct evbuffer		*out;
	struct frame		 fr;
	char			*text;

	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", (flags & FOLLOW_RAW) ? "text/plain" :
		    "application/x-gmux-frames");
		api_send(req, 200, NULL);	/* a stream has no length */
		return;
	}
	f = xcalloc(1, sizeof *f);
	f->job = j;
	f->req = req;
	f->fd = -1;
	f->from = from;
	f->follow = (flags & FOLLOW_LIVE) != 0;
	f->raw = (flags & FOLLOW_RAW) != 0;
	f->wait_only = (flags & FOLLOW_WAIT) != 0;
	f->sent = clock_mono_ms();
	TAILQ_INSERT_TAIL(&j->followers, f, entry);
	evhttp_connection_set_closecb(evcon, follow_closed, f);
	/*
	 * A stream may be silent as long as its job is: no read timeout, and
	 * a write timeout only for a client that stops reading altogether.
	 */
	bufferevent_set_timeouts(evhttp_connection_get_bufferevent(evcon),
	    NULL, &wtv);
	if (f->wait_only)
		return;
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", f->raw ? "text/plain" :
	    "application/x-gmux-frames");
	evhttp_send_reply_start(req, 200, "OK");
	if (info != NULL && !f->raw) {
		out = evbuffer_new();
		text = json_dumps(info, JSON_COMPACT);
		fr.type = FRAME_INFO;
		fr.len = (uint32_t)strlen(text);
		fr.data = text;
		follow_emit(f, out, &fr);
		follow_send(f, out);
		evbuffer_free(out);
		free(text);
	}
	if (f->follow)
		follow_watch(j);
	follow_pump(f);
}

/* Sends a live follower the job as it is now (queued, requeued, ...). */
void
follow_job_info(struct job *j)
{
	struct follower	*f;
	struct evbuffer	*out;
	struct frame	 fr;
	json_t		*o;
	char		*text;

	o = job_info_json(j);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	fr.type = FRAME_INFO;
	fr.len = (uint32_t)strlen(text);
	fr.data = text;
	TAILQ_FOREACH(f, &j->followers, entry) {
		if (f->wait_only || f->raw || !f->follow)
			continue;
		out = evbuffer_new();
		follow_emit(f, out, &fr);
		follow_send(f, out);
		evbuffer_free(out);
	}
	free(text);
}

/* The job changed (started, or its place in the queue): tell followers. */
void
follow_job_changed(struct job *j)
{
	struct follower	*f, *next;

	if (j->state == JOB_RUNNING && !TAILQ_EMPTY(&j->followers))
		follow_watch(j);
	TAILQ_FOREACH_SAFE(f, &j->followers, entry, next)
		follow_pump(f);
}

/* The job ended: streams get the rest and close; waiters get the job. */
void
follow_job_ended(struct job *j)
{
	struct follower	*f, *next;
	json_t		*o;

	TAILQ_FOREACH_SAFE(f, &j->followers, entry, next) {
		if (!f->wait_only) {
			follow_pump(f);
			continue;
		}
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(f->req), NULL, NULL);
		o = job_to_json(j);
		api_reply(f->req, 200, o);
		json_decref(o);
		follow_free(f);
	}
}

/*
 * Once a second: a live stream that has had nothing for a while gets an
 * info frame {"heartbeat": MS}, so a client far away can tell a quiet job
 * from a dead connection (it gives up after 15 s of silence).  A client
 * that is not reading (a chunk still on its way) gets nothing more.
 */
void
follow_heartbeat(int64_t now)
{
	struct job	*j;
	struct follower	*f;
	struct evbuffer	*out;
	struct frame	 fr;
	char		 text[64];

	snprintf(text, sizeof text, "{\"heartbeat\":%lld}",
	    (long long)clock_ms());
	fr.type = FRAME_INFO;
	fr.len = (uint32_t)strlen(text);
	fr.data = text;
	TAILQ_FOREACH(j, &all_jobs, entry) {
		TAILQ_FOREACH(f, &j->followers, entry) {
			if (f->wait_only || f->raw || !f->follow || f->busy ||
			    now - f->sent < FOLLOW_HEARTBEAT_MS)
				continue;
			out = evbuffer_new();
			follow_emit(f, out, &fr);
			follow_send(f, out);
			evbuffer_free(out);
		}
	}
}
