/*
 * stream.c: a job's output on the terminal.  Frames from the daemon go to
 * our stdout and stderr as they were written; the output offset is counted
 * so that a broken connection (a daemon restart, for instance) resumes
 * exactly where it stopped, without repeating or losing a byte.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

#define STREAM_RETRY_MS	(120 * 1000)	/* how long to wait for a daemon */
#define STREAM_START_MS	200		/* between asks for a job to start */

void
stream_init(struct stream *s, const char *job, int mode)
{
	memset(s, 0, sizeof *s);
	if (job != NULL)
		snprintf(s->job, sizeof s->job, "%s", job);
	s->mode = mode;
	s->exit_code = -1;
}

/* Where the job's routes are: a cluster job's are asked of any member. */
static const char *
stream_jobs(const struct stream *s)
{
	return (s->cluster ? "/v1/cluster/jobs" : "/v1/jobs");
}

/* The command whose errors these are. */
static const char *
stream_command(const struct stream *s)
{
	if (s->mode == STREAM_RUN)
		return ("run");
	return (s->mode == STREAM_ATTACH ? "attach" : "logs");
}

/* The job waits: say where it is in the queue and what for. */
static void
stream_info_queued(struct stream *s, json_t *o)
{
	const char	*why = json_string_value(json_object_get(o, "reason"));
	json_t		*pos = json_object_get(o, "position");

	if (why != NULL && strcmp(why, PREPARE_REASON) == 0)
		return;		/* a remote host copies its tree: not a wait */
	s->waited = 1;
	if (json_is_integer(pos))
		fprintf(stderr, "gmux: %s queued at position %lld%s%s\n",
		    s->job, (long long)json_integer_value(pos), why ? ", " : "",
		    why ? why : "");
	else
		fprintf(stderr, "gmux: %s queued%s%s\n", s->job,
		    why ? ": " : "", why ? why : "");
}

static void
stream_info(struct stream *s, const struct frame *f)
{
	json_t		*o;
	const char	*id, *state;

	if ((o = json_loadb(f->data, f->len, 0, NULL)) == NULL)
		return;
	id = json_string_value(json_object_get(o, "id"));
	if (id != NULL && s->job[0] == '\0') {
		snprintf(s->job, sizeof s->job, "%s", id);
		if (s->stop_pending) {
			s->stop_pending = 0;
			s->interrupts = 0;
			stream_interrupt(s);
		}
	}
	state = json_string_value(json_object_get(o, "state"));
	if (state != NULL && strcmp(state, "queued") == 0)
		stream_info_queued(s, o);
	else if (state != NULL && strcmp(state, "running") == 0 &&
	    s->waited) {
		fprintf(stderr, "gmux: %s started\n", s->job);
		s->waited = 0;
	}
	json_decref(o);
}

static void
stream_exit(struct stream *s, const struct frame *f)
{
	json_t		*o, *code;
	const char	*state;
	json_int_t	 lost;

	s->ended = 1;
	if ((o = json_loadb(f->data, f->len, 0, NULL)) == NULL)
		return;
	code = json_object_get(o, "exit_code");
	s->exit_code = json_is_integer(code) ? (int)json_integer_value(code) :
	    -1;
	if ((state = json_string_value(json_object_get(o, "state"))) != NULL)
		snprintf(s->state, sizeof s->state, "%s", state);
	lost = json_integer_value(json_object_get(o, "output_lost"));
	if (lost > 0)
		fprintf(stderr, "gmux: %s: %lld bytes of its output were lost "
		    "(the host's disk is full)\n", s->job, (long long)lost);
	json_decref(o);
}

static int
stream_frame(const struct frame *f, void *arg)
{
	struct stream	*s = arg;

	switch (f->type) {
	case FRAME_STDOUT:
	case FRAME_STDERR:
		if (write_all(f->type == FRAME_STDOUT ? 1 : 2, f->data,
		    f->len) == -1) {
			/* Where we cannot write, we stop (the job goes on). */
			s->write_failed = errno;
			return (-1);
		}
		s->offset += f->len;
		break;
	case FRAME_INFO:
		stream_info(s, f);
		break;
	case FRAME_EXIT:
		stream_exit(s, f);
		break;
	}
	return (0);
}

/*
 * The first Ctrl-C's stop is withdrawn before its KILL: detached, the job
 * keeps running (its TERM was sent).
 */
static void
stream_cancel_stop(struct stream *s)
{
	struct client_reply	 r;
	json_t			*body;
	char			*path;

	xasprintf(&path, "%s/%s/stop", stream_jobs(s), s->job);
	body = json_pack("{s:b}", "cancel", 1);
	client_call("POST", path, body, &r);
	if (r.status != 200 && r.status != 409)
		client_ok(&r, "run");
	client_reply_clear(&r);
	json_decref(body);
	free(path);
}

/*
 * Ctrl-C: in run, the first stops the job and the second detaches (a
 * cluster job's stop goes on: its member is not asked to withdraw it).
 */
int
stream_interrupt(void *arg)
{
	struct stream		*s = arg;
	struct client_reply	 r;
	char			*path;

	s->interrupts++;
	if (s->mode == STREAM_RUN && s->interrupts == 1 && s->job[0] == '\0') {
		/* No id from the daemon yet: stop the job once it has one. */
		s->stop_pending = 1;
		fprintf(stderr, "\ngmux: stopping the job as soon as it has an "
		    "id (Ctrl-C again to detach)\n");
		return (0);
	}
	if (s->mode == STREAM_RUN && s->interrupts == 1) {
		xasprintf(&path, "%s/%s/stop", stream_jobs(s), s->gang[0] ?
		    s->gang : s->job);
		client_call("POST", path, NULL, &r);
		free(path);
		client_ok(&r, "run");
		client_reply_clear(&r);
		fprintf(stderr, "\ngmux: stopping %s (Ctrl-C again to detach%s)"
		    "\n", s->gang[0] ? s->gang : s->job, s->cluster ? "" :
		    " and leave it running");
		return (0);
	}
	if (s->mode == STREAM_RUN && s->cluster)
		fprintf(stderr, "\ngmux: detached from %s; it is stopping "
		    "(gmux logs -f %s)\n", s->gang[0] ? s->gang : s->job,
		    s->job);
	else {
		if (s->mode == STREAM_RUN && !s->stop_pending)
			stream_cancel_stop(s);
		fprintf(stderr, "\ngmux: detached from %s; it keeps running "
		    "(gmux attach %s)\n", s->job, s->job);
	}
	s->detached = 1;
	return (1);
}

/*
 * The job's state now, into st (of len bytes), "" if the daemon cannot
 * say it; the status of the answer (0: none came).
 */
static long
stream_job_state(struct stream *s, char *st, size_t len)
{
	struct client_reply	 r;
	const char		*state;
	char			*path;
	long			 code;

	*st = '\0';
	xasprintf(&path, "%s/%s", stream_jobs(s), s->job);
	if (client_call("GET", path, NULL, &r) == 0 && r.status == 200 &&
	    (state = json_string_value(json_object_get(r.body, "state"))) !=
	    NULL)
		snprintf(st, len, "%s", state);
	code = r.status;
	client_reply_clear(&r);
	free(path);
	return (code);
}

/* Does a job in state st (from stream_job_state's code) go on? */
static int
stream_state_goes_on(const char *st, long code)
{
	if (*st == '\0')	/* unknown now: yes, unless it is no job */
		return (code < 400 || code >= 500);
	return (strcmp(st, "queued") == 0 || strcmp(st, "assigned") == 0 ||
	    strcmp(st, "running") == 0);
}

/*
 * Is the job still queued (a cluster job's: or assigned) or running (its
 * last exit frame was not its end)?  If the daemon cannot say now, the
 * answer is yes: the stream goes on, and resumes from the log, which ends
 * with the job's last exit frame.
 */
static int
stream_job_goes_on(struct stream *s)
{
	char	 st[32];
	long	 code;

	code = stream_job_state(s, st, sizeof st);
	return (stream_state_goes_on(st, code));
}

static void
stream_sleep(int ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * A cluster job's log answers 409 while the job is queued, and while its
 * member has claimed it but not started it yet: asked again every
 * STREAM_START_MS, while queued for as long as it is when following
 * (said once), else up to STREAM_RETRY_MS while the job goes on.  Is it
 * worth asking again (it slept)?
 */
static int
stream_wait_start(struct stream *s, struct client_reply *r, int follow,
    int64_t *deadline)
{
	char	 st[32];
	long	 code;

	if (!s->cluster || r->status != 409 || s->job[0] == '\0')
		return (0);
	if (*deadline == 0)
		*deadline = clock_mono_ms() + STREAM_RETRY_MS;
	stream_sleep(STREAM_START_MS);
	code = stream_job_state(s, st, sizeof st);
	if (strcmp(st, "queued") == 0) {
		if (!follow)
			return (0);	/* no output yet: said so */
		if (!s->waited && s->mode != STREAM_RUN)
			fprintf(stderr, "gmux: %s is queued in the cluster; "
			    "waiting for it to start\n", s->job);
		s->waited = 1;
		*deadline = 0;
		return (1);
	}
	if (clock_mono_ms() > *deadline)
		return (0);
	return (stream_state_goes_on(st, code));
}

/*
 * Streams from a first request (method, path, body), then, if follow and
 * the stream breaks before the job's end, from the job's log at our
 * offset.  Returns 0 when the stream is over, 1 if detached, -1 on error
 * (printed).
 */
int
stream_run(struct stream *s, const char *method, const char *path,
    json_t *body, int follow)
{
	struct client_stream_cbs cbs = { stream_frame, NULL, s };
	struct client_reply	 r;
	char			*next = NULL;
	int64_t			 deadline = 0, started = 0;
	int			 rc, told = 0, retried = 0, asked_ended = 0;
	int			 on;

	if (s->mode != STREAM_LOGS) {
		client_catch_interrupts();
		cbs.interrupt = stream_interrupt;
	}
	for (;;) {
		rc = client_stream(method, path, body, &cbs, &r);
		if (rc == 0 && r.status == 409 && s->cluster) {
			if (stream_wait_start(s, &r, follow, &started)) {
				client_reply_clear(&r);
				continue;
			}
			/*
			 * It ended meanwhile: its log once more (it may have
			 * run and ended between two asks), then it never ran.
			 */
			if (!stream_job_goes_on(s) && !asked_ended++) {
				client_reply_clear(&r);
				continue;
			}
			if (asked_ended && s->mode == STREAM_RUN) {
				client_reply_clear(&r);
				break;	/* gmux run says how it ended */
			}
		}
		/*
		 * A cluster job's member (or etcd) did not answer: asked
		 * again, as after a lost connection, until the deadline.
		 */
		if (rc == 0 && r.status >= 500 && s->cluster && follow &&
		    s->job[0] != '\0') {
			on = stream_job_goes_on(s);
			if (!on && s->mode == STREAM_RUN) {
				client_reply_clear(&r);
				break;	/* it ended (its member left) */
			}
			if (on) {
				if (!told++)
					fprintf(stderr, "gmux: %s; asking "
					    "again\n", r.error != NULL ?
					    r.error : "no answer");
				rc = -1;
			}
		}
		if (rc == 0 && r.status >= 400) {
			s->refused = r.status;
			client_ok(&r, stream_command(s));
			client_reply_clear(&r);
			free(next);
			return (-1);
		}
		/* A submission whose reply was lost goes once more. */
		if (rc == -1 && s->mode == STREAM_RUN && s->job[0] == '\0' &&
		    !retried++ && run_retry(path, &r))
			continue;
		if (rc == -1 && (s->job[0] == '\0' || !follow)) {
			client_ok(&r, stream_command(s));
			client_reply_clear(&r);
			free(next);
			return (-1);
		}
		client_reply_clear(&r);
		/*
		 * An exit frame then a lost connection: a --requeue job that
		 * was preempted runs again, so ask whether it really ended.
		 */
		if (rc == -1 && s->ended && follow && stream_job_goes_on(s))
			s->ended = 0;
		if (rc == 1 || s->ended || !follow || s->job[0] == '\0')
			break;
		if (rc == 0)
			deadline = 0;
		if (deadline == 0)
			deadline = clock_mono_ms() + STREAM_RETRY_MS;
		if (clock_mono_ms() > deadline) {
			fprintf(stderr, "gmux: lost %s; %s may still run (gmux "
			    "%s %s)\n", s->cluster ? "its member" :
			    "the daemon", s->job, s->cluster ? "logs -f" :
			    "attach", s->job);
			free(next);
			return (-1);
		}
		if (!told++)
			fprintf(stderr,
			    "gmux: connection lost; reconnecting\n");
		stream_sleep(rc == 0 ? 0 : 200);
		free(next);
		xasprintf(&next, "%s/%s/log?from=%llu&follow=1",
		    stream_jobs(s), s->job, (unsigned long long)s->offset);
		method = "GET";
		path = next;
		body = NULL;
	}
	free(next);
	if (rc == 1 && s->write_failed != 0) {
		fprintf(stderr, "gmux: cannot write the output: %s; %s goes on "
		    "(gmux attach %s)\n", strerror(s->write_failed), s->job,
		    s->job);
		return (-1);
	}
	return (rc == 1 ? 1 : 0);
}
