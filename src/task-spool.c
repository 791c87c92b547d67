/*
 * task-spool.c: accepted tasks and their results on disk, so that the
 * daemon's kill -9 loses none (docs/tasks.md).  $GMUX_HOME/tasks/spool
 * holds tID.task (a JSON header line, then the call) from acceptance and
 * tID.res (the same, the outcome) from completion, each written whole
 * (a temporary file renamed), both removed when the caller acks.  No
 * fsync: a daemon's death leaves the page cache; a machine's is not this
 * file's promise.  Values that came by file stay in their own files.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "task-int.h"

#define SPOOL_MAX	(FRAME_MAX + 65536)

static char	*spool_dir;
static char	*worker_dir;

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

int
task_spool_init(char **cause)
{
	if (spool_dir == NULL) {
		xasprintf(&spool_dir, "%s/tasks/spool", path_home());
		xasprintf(&worker_dir, "%s/tasks/w", path_home());
	}
	if (mkdir_p(spool_dir, 0700) != 0 || mkdir_p(worker_dir, 0700) != 0) {
		xasprintf(cause, "%s/tasks: %s", path_home(), strerror(errno));
		return (-1);
	}
	return (0);
}

static char *
spool_path(uint64_t id, const char *ext)
{
	char	*p;

	xasprintf(&p, "%s/t%" PRIu64 ".%s", spool_dir, id, ext);
	return (p);
}

/* Writes a header line and a value's bytes as one file. */
static void
spool_write(uint64_t id, const char *ext, json_t *hdr,
    const struct task_value *v)
{
	char	*text, *path, *cause = NULL, *buf;
	size_t	 n;

	if (v->file != NULL)
		json_object_set_new(hdr, "file", json_string(v->file));
	text = json_dumps(hdr, JSON_COMPACT);
	n = strlen(text);
	buf = xmalloc(n + 1 + v->len);
	memcpy(buf, text, n);
	buf[n] = '\n';
	if (v->len != 0)
		memcpy(buf + n + 1, v->data, v->len);
	path = spool_path(id, ext);
	if (write_file_replace(path, buf, n + 1 + v->len, 0600, &cause) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
	}
	free(path);
	free(buf);
	free(text);
}

void
task_spool_task(const struct task *t)
{
	json_t	*hdr;

	hdr = json_pack("{s:I,s:s,s:s,s:I,s:s,s:I,s:i}", "id", (json_int_t)t->id,
	    "owner", t->owner, "session", t->session, "cid",
	    (json_int_t)t->cid, "pool", t->pool, "timeout_ms",
	    (json_int_t)t->timeout_ms, "attempts", (int)t->attempts);
	spool_write(t->id, "task", hdr, &t->call);
	json_decref(hdr);
}

void
task_spool_result(const struct task *t)
{
	json_t	*hdr;

	hdr = json_pack("{s:s,s:i,s:s}", "state", t->state == TASK_DONE ?
	    "done" : "failed", "attempts", (int)t->attempts, "worker",
	    t->wname);
	if (t->error != NULL)
		json_object_set_new(hdr, "error", json_string(t->error));
	spool_write(t->id, "res", hdr, &t->out);
	json_decref(hdr);
}

/* Removes a task's files, and the values it was handed by file. */
void
task_spool_remove(const struct task *t)
{
	char	*p;

	p = spool_path(t->id, "task");
	unlink(p);
	free(p);
	p = spool_path(t->id, "res");
	unlink(p);
	free(p);
	if (t->call.file != NULL)
		unlink(t->call.file);
	if (t->out.file != NULL)
		unlink(t->out.file);
}

/* Reads tID.EXT: its header (caller decrefs) and bytes into v. */
static json_t *
spool_read(uint64_t id, const char *ext, struct task_value *v)
{
	char	*path, *buf, *nl, *cause = NULL;
	size_t	 len;
	json_t	*hdr = NULL;
	const char *file;

	path = spool_path(id, ext);
	buf = read_file(path, SPOOL_MAX, &len, &cause);
	free(path);
	if (buf == NULL) {
		free(cause);
		return (NULL);
	}
	if ((nl = memchr(buf, '\n', len)) != NULL)
		hdr = json_loadb(buf, (size_t)(nl - buf), 0, NULL);
	if (hdr != NULL) {
		len -= (size_t)(nl + 1 - buf);
		v->data = xmalloc(len + 1);
		memcpy(v->data, nl + 1, len);
		v->len = len;
		file = json_string_value(json_object_get(hdr, "file"));
		v->file = file != NULL ? xstrdup(file) : NULL;
	}
	free(buf);
	return (hdr);
}

static json_int_t
hdr_int(json_t *hdr, const char *name)
{
	return (json_integer_value(json_object_get(hdr, name)));
}

static const char *
hdr_str(json_t *hdr, const char *name)
{
	const char	*s = json_string_value(json_object_get(hdr, name));

	return (s != NULL ? s : "");
}

/* Takes one spooled task back: queued, or with its result. */
static void
spool_load_one(struct task_broker *b, uint64_t id)
{
	struct task_value	 call = { 0 }, out = { 0 };
	struct task		*t;
	json_t			*hdr, *res;
	int			 isnew;

	if ((hdr = spool_read(id, "task", &call)) == NULL)
		return;
	if (!task_pool_valid(hdr_str(hdr, "pool")) ||
	    !task_session_valid(hdr_str(hdr, "session")))
		goto out;
	t = task_submit(b, hdr_str(hdr, "owner"), hdr_str(hdr, "session"),
	    (uint64_t)hdr_int(hdr, "cid"), hdr_str(hdr, "pool"),
	    hdr_int(hdr, "timeout_ms"), &isnew);
	if (!isnew)
		goto out;
	t->id = id;
	if (id >= b->next_id)
		b->next_id = id + 1;
	t->call = call;
	memset(&call, 0, sizeof call);
	if ((res = spool_read(id, "res", &out)) != NULL) {
		t->attempts = (u_int)hdr_int(res, "attempts");
		snprintf(t->wname, sizeof t->wname, "%s", hdr_str(res,
		    "worker"));
		if (strcmp(hdr_str(res, "state"), "done") == 0) {
			task_fail(b, t, "-");	/* off the queue */
			t->state = TASK_DONE;
			free(t->error);
			t->error = NULL;
		} else
			task_fail(b, t, "%s", hdr_str(res, "error"));
		t->out = out;
		json_decref(res);
	}
	log_debug("%s: t%" PRIu64 " %s", __func__, id, t->state == TASK_QUEUED ?
	    "queued" : "ended");
out:
	task_value_clear(&call);
	json_decref(hdr);
}

/* Takes back every task the spool holds (a restarted daemon). */
void
task_spool_load(struct task_broker *b)
{
	DIR		*d;
	struct dirent	*de;
	char		*end;
	uint64_t	 id;

	if ((d = opendir(spool_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != 't')
			continue;
		id = strtoull(de->d_name + 1, &end, 10);
		if (id != 0 && strcmp(end, ".task") == 0)
			spool_load_one(b, id);
	}
	closedir(d);
}
