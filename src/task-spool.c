/*
 * task-spool.c: accepted tasks and their results on disk, so that the
 * daemon's kill -9 loses none (docs/tasks.md).  One append-only journal,
 * $GMUX_HOME/tasks/journal (0600), of records in frame.c's shape: 'T' a
 * task accepted (a JSON header line, then its call), 'R' its result (the
 * same, the outcome), 'A' acked (gone).  A file per task cost more than
 * the task (ext4 searches its recently deleted inodes at every create);
 * an append is one write.  When no task is left the journal is emptied;
 * past JOURNAL_COMPACT bytes it is rewritten with the live tasks only.
 * No fsync: a daemon's death leaves the page cache; a machine's is not
 * this file's promise.  A record cut short by a crash ends the replay.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "task-int.h"

#define JOURNAL_COMPACT	(256 * 1024 * 1024)
#define JOURNAL_MAX	(4ULL * 1024 * 1024 * 1024)

static char	*spool_dir;
static char	*worker_dir;
static char	*journal;
static int	 journal_fd = -1;
static uint64_t	 journal_size;
static u_int	 live;

const char *
task_spool_dir(void)
{
	return (spool_dir);
}

const char *
task_worker_dir(void)
{
	return (worker_dir);
}

static int
spool_open(char **cause)
{
	struct stat	 st;

	journal_fd = open(journal, O_RDWR|O_CREAT|O_APPEND|O_CLOEXEC, 0600);
	if (journal_fd == -1 || fstat(journal_fd, &st) != 0) {
		xasprintf(cause, "%s: %s", journal, strerror(errno));
		return (-1);
	}
	journal_size = (uint64_t)st.st_size;
	return (0);
}

int
task_spool_init(char **cause)
{
	if (spool_dir == NULL) {
		xasprintf(&spool_dir, "%s/tasks/spool", path_home());
		xasprintf(&worker_dir, "%s/tasks/w", path_home());
		xasprintf(&journal, "%s/tasks/journal", path_home());
	}
	if (mkdir_p(spool_dir, 0700) != 0 || mkdir_p(worker_dir, 0700) != 0) {
		xasprintf(cause, "%s/tasks: %s", path_home(), strerror(errno));
		return (-1);
	}
	return (journal_fd != -1 ? 0 : spool_open(cause));
}

/* Appends one record: type, length, header line, a value's bytes. */
static void
spool_append(int fd, u_char type, json_t *hdr, const struct task_value *v)
{
	u_char	 fh[FRAME_HDR];
	char	*text, *buf;
	size_t	 n, len;

	if (v != NULL && v->file != NULL)
		json_object_set_new(hdr, "file", json_string(v->file));
	text = json_dumps(hdr, JSON_COMPACT);
	n = strlen(text);
	len = n + 1 + (v != NULL ? v->len : 0);
	buf = xmalloc(FRAME_HDR + len);
	frame_header(fh, type, (uint32_t)len);
	memcpy(buf, fh, FRAME_HDR);
	memcpy(buf + FRAME_HDR, text, n);
	buf[FRAME_HDR + n] = '\n';
	if (v != NULL && v->len != 0)
		memcpy(buf + FRAME_HDR + n + 1, v->data, v->len);
	if (write_all(fd, buf, FRAME_HDR + len) == -1)
		log_warnx("%s: %s: %s", __func__, journal, strerror(errno));
	else if (fd == journal_fd)
		journal_size += FRAME_HDR + len;
	free(buf);
	free(text);
}

static json_t *
spool_task_hdr(const struct task *t)
{
	return (json_pack("{s:I,s:s,s:s,s:I,s:s,s:I}", "id", (json_int_t)t->id,
	    "owner", t->owner, "session", t->session, "cid",
	    (json_int_t)t->cid, "pool", t->pool, "timeout_ms",
	    (json_int_t)t->timeout_ms));
}

static json_t *
spool_result_hdr(const struct task *t)
{
	json_t	*hdr;

	hdr = json_pack("{s:I,s:s,s:i,s:s}", "id", (json_int_t)t->id, "state",
	    t->state == TASK_DONE ? "done" : "failed", "attempts",
	    (int)t->attempts, "worker", t->wname);
	if (t->error != NULL)
		json_object_set_new(hdr, "error", json_string(t->error));
	return (hdr);
}

static void
spool_write_task(int fd, const struct task *t)
{
	json_t	*hdr = spool_task_hdr(t);

	spool_append(fd, 'T', hdr, &t->call);
	json_decref(hdr);
}

static void
spool_write_result(int fd, const struct task *t)
{
	json_t	*hdr = spool_result_hdr(t);

	spool_append(fd, 'R', hdr, &t->out);
	json_decref(hdr);
}

void
task_spool_task(const struct task *t)
{
	live++;
	spool_write_task(journal_fd, t);
}

void
task_spool_result(const struct task *t)
{
	spool_write_result(journal_fd, t);
}

/* Rewrites the journal with b's tasks only (a temporary file renamed). */
static void
spool_compact(struct task_broker *b)
{
	struct task	*t;
	char		*tmp;
	int		 fd;

	xasprintf(&tmp, "%s.tmp", journal);
	fd = open(tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1) {
		log_warnx("%s: %s: %s", __func__, tmp, strerror(errno));
		free(tmp);
		return;
	}
	TAILQ_FOREACH(t, &b->tasks, entry) {
		spool_write_task(fd, t);
		if (t->state == TASK_DONE || t->state == TASK_FAILED)
			spool_write_result(fd, t);
	}
	if (close(fd) == 0 && rename(tmp, journal) == 0) {
		close(journal_fd);
		journal_fd = -1;
		if (spool_open(&tmp) != 0)
			fatalx("%s", tmp);
	} else
		unlink(tmp);
	free(tmp);
}

/*
 * Records that a task is gone and removes the values it was handed by
 * file.  With nothing left the journal starts again empty (no record
 * for the last one: a call at a time costs one write less).
 */
void
task_spool_remove(struct task_broker *b, const struct task *t)
{
	json_t	*hdr;

	if (live > 0)
		live--;
	if (live != 0 || ftruncate(journal_fd, 0) != 0) {
		hdr = json_pack("{s:I}", "id", (json_int_t)t->id);
		spool_append(journal_fd, 'A', hdr, NULL);
		json_decref(hdr);
	} else
		journal_size = 0;
	if (t->call.file != NULL)
		unlink(t->call.file);
	if (t->out.file != NULL)
		unlink(t->out.file);
	if (live == 0)
		return;
	if (journal_size > JOURNAL_COMPACT &&
	    (uint64_t)live * 2 * 1024 * 1024 < journal_size)
		spool_compact(b);
}

static const char *
hdr_str(json_t *hdr, const char *name)
{
	const char	*s = json_string_value(json_object_get(hdr, name));

	return (s != NULL ? s : "");
}

static struct task *
spool_find_id(struct task_broker *b, uint64_t id)
{
	struct task	*t;

	TAILQ_FOREACH_REVERSE(t, &b->tasks, task_list, entry) {
		if (t->id == id)
			return (t);
	}
	return (NULL);
}

static void
spool_value(struct task_value *v, json_t *hdr, const char *data, size_t len)
{
	const char	*file = json_string_value(json_object_get(hdr, "file"));

	task_value_set(v, data, len, file != NULL ? xstrdup(file) : NULL);
}

/* Replays a 'T' record: the task, queued. */
static void
spool_replay_task(struct task_broker *b, json_t *hdr, const char *data,
    size_t len)
{
	struct task	*t;
	uint64_t	 id;
	int		 isnew;

	id = (uint64_t)json_integer_value(json_object_get(hdr, "id"));
	if (!task_pool_valid(hdr_str(hdr, "pool")) ||
	    !task_session_valid(hdr_str(hdr, "session")))
		return;
	t = task_submit(b, hdr_str(hdr, "owner"), hdr_str(hdr, "session"),
	    (uint64_t)json_integer_value(json_object_get(hdr, "cid")),
	    hdr_str(hdr, "pool"), json_integer_value(json_object_get(hdr,
	    "timeout_ms")), &isnew);
	if (!isnew)
		return;
	t->id = id;
	if (id >= b->next_id)
		b->next_id = id + 1;
	spool_value(&t->call, hdr, data, len);
	live++;
}

/* Replays an 'R' record: the task, ended. */
static void
spool_replay_result(struct task_broker *b, json_t *hdr, const char *data,
    size_t len)
{
	struct task	*t;

	t = spool_find_id(b, (uint64_t)json_integer_value(json_object_get(hdr,
	    "id")));
	if (t == NULL || t->state != TASK_QUEUED)
		return;
	task_fail(b, t, "%s", hdr_str(hdr, "error"));	/* off the queue */
	if (strcmp(hdr_str(hdr, "state"), "done") == 0) {
		t->state = TASK_DONE;
		free(t->error);
		t->error = NULL;
	}
	t->attempts = (u_int)json_integer_value(json_object_get(hdr,
	    "attempts"));
	snprintf(t->wname, sizeof t->wname, "%s", hdr_str(hdr, "worker"));
	spool_value(&t->out, hdr, data, len);
}

static void
spool_replay(struct task_broker *b, u_char type, const char *p, size_t n)
{
	const char	*nl = memchr(p, '\n', n);
	json_t		*hdr;
	struct task	*t;
	size_t		 hl;

	if (nl == NULL)
		return;
	hl = (size_t)(nl - p);
	if ((hdr = json_loadb(p, hl, 0, NULL)) == NULL)
		return;
	if (type == 'T')
		spool_replay_task(b, hdr, nl + 1, n - hl - 1);
	else if (type == 'R')
		spool_replay_result(b, hdr, nl + 1, n - hl - 1);
	else if (type == 'A' && (t = spool_find_id(b, (uint64_t)
	    json_integer_value(json_object_get(hdr, "id")))) != NULL) {
		task_drop(b, t);
		if (live > 0)
			live--;
	}
	json_decref(hdr);
}

/*
 * Replays a journal's records into b; stops at the first record cut
 * short (a crash).  Returns the number of live tasks.
 */
u_int
task_spool_replay(struct task_broker *b, const char *buf, size_t len)
{
	size_t		 off = 0;
	uint32_t	 n;

	while (len - off >= FRAME_HDR) {
		n = frame_len((const u_char *)buf + off);
		if (len - off - FRAME_HDR < n)
			break;
		spool_replay(b, (u_char)buf[off], buf + off + FRAME_HDR, n);
		off += FRAME_HDR + n;
	}
	return (live);
}

/* Takes back every task the journal holds (a restarted daemon). */
void
task_spool_load(struct task_broker *b)
{
	char		*buf, *cause = NULL;
	size_t		 len;

	buf = read_file(journal, JOURNAL_MAX, &len, &cause);
	if (buf == NULL) {
		free(cause);
		return;
	}
	task_spool_replay(b, buf, len);
	free(buf);
	log_debug("%s: %u tasks back", __func__, live);
	/* Written again whole: what a crash cut short goes. */
	spool_compact(b);
}
