/*
 * task-value.c: big values for those who cannot reach the spool
 * (docs/tasks.md, "Big values over TCP"): a TCP caller's parts up and a
 * result down by HTTP, a jailed or another member's worker's by frames
 * on its own stream.  Each goes through a file of its owner's directory
 * of the spool, a part at a time: the daemon never holds a value whole.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"
#include "task-int.h"

#define VALUE_PART_MAX	(8 * 1024 * 1024)	/* one PUT's body */
#define VALUE_CHUNK	(960 * 1024)		/* one V frame's bytes */
#define VALUE_OUT_LOW	(1024 * 1024)		/* the next V below this */
#define VALUE_GET_CHUNK	(1024 * 1024)		/* one GET chunk */
#define VALUE_ORPHAN_S	30			/* unheld, unwritten: gone */
#define VALUE_UPLOAD_MAX (10ULL << 30)		/* UPLOAD_LIMIT */

struct task_vout {
	int		 fd;
	uint64_t	 task;
	uint64_t	 off;
	uint64_t	 size;
};

struct task_vin {
	int		 fd;
	uint64_t	 task;
	uint64_t	 have;
	char		*name;		/* in the owner's directory */
	char		*path;
};

struct value_get {
	struct evhttp_request	*req;
	int			 fd;
};

/* The owner's directory of the spool, made if missing; NULL on error. */
static char *
value_dir(const char *owner, int make)
{
	char	*dir, *p;
	size_t	 i, n = strlen(owner);

	dir = xmalloc(strlen(task_spool_dir()) + 4 + 2 * n + 1);
	p = dir + sprintf(dir, "%s/o/", task_spool_dir());
	for (i = 0; i < n; i++)
		p += sprintf(p, "%02x", (u_char)owner[i]);
	if (make && mkdir_p(dir, 0700) != 0) {
		log_warnx("%s: %s: %s", __func__, dir, strerror(errno));
		free(dir);
		return (NULL);
	}
	return (dir);
}

/* The path of owner's value name, or NULL if name is not a spool name. */
static char *
value_path(const char *owner, const char *name, int make)
{
	char	*dir, *path;

	if (!task_file_valid(name) || (dir = value_dir(owner,
	    make)) == NULL)
		return (NULL);
	xasprintf(&path, "%s/%s", dir, name);
	free(dir);
	return (path);
}

static uint64_t
value_limit(void)
{
	return (api_size_setting("UPLOAD_LIMIT", VALUE_UPLOAD_MAX));
}

/* The bytes of owner's spooled values, but for skip's. */
static uint64_t
value_used(const char *owner, const char *skip)
{
	struct dirent	*de;
	struct stat	 st;
	char		*dir;
	DIR		*d;
	uint64_t	 sum = 0;

	if ((dir = value_dir(owner, 0)) == NULL ||
	    (d = opendir(dir)) == NULL) {
		free(dir);
		return (0);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (skip != NULL &&
		    strcmp(de->d_name, skip) == 0))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	free(dir);
	return (sum);
}

/* Whether size more bytes of owner's fit its limit; *cause if not. */
static int
value_fits(const char *owner, const char *name, uint64_t size, char **cause)
{
	uint64_t	 limit = value_limit();

	if (size > limit || value_used(owner, name) > limit - size) {
		xasprintf(cause, "size: %" PRIu64 " bytes is over the upload "
		    "limit (UPLOAD_LIMIT, %" PRIu64 " bytes)", size, limit);
		return (0);
	}
	return (1);
}

/* A decimal number of bytes, nothing else; -1 if not one. */
static int
value_u64(const char *s, uint64_t *v)
{
	char	*end;

	if (s == NULL || *s < '0' || *s > '9')
		return (-1);
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno != 0 || *end != '\0' ? -1 : 0);
}

/*
 * A PUT's size and offset fields (offset NULL: 0) for a part of len
 * bytes: 0 with *size and *off, or -1 with *cause, the 400's message.
 */
int
task_value_range(const char *size_s, const char *off_s, size_t len,
    uint64_t *size, uint64_t *off, char **cause)
{
	if (value_u64(size_s, size) != 0) {
		xasprintf(cause, "size: a number of bytes is needed");
		return (-1);
	}
	*off = 0;
	if ((off_s != NULL && value_u64(off_s, off) != 0) ||
	    len > VALUE_PART_MAX || *off > *size || len > *size - *off) {
		xasprintf(cause, "offset: a part of at most %u bytes within "
		    "size is needed", VALUE_PART_MAX);
		return (-1);
	}
	return (0);
}

/*
 * A value frame header's field (a U's "task", a D's "size"): 0 with *v
 * if it is a non-negative integer, 1 if it is not there, -1 if it is
 * anything else.
 */
int
task_value_field(json_t *hdr, const char *key, uint64_t *v)
{
	json_t	*o = json_object_get(hdr, key);

	if (o == NULL)
		return (1);
	if (!json_is_integer(o) || json_integer_value(o) < 0)
		return (-1);
	*v = (uint64_t)json_integer_value(o);
	return (0);
}

/* Appends a part at off to path (off 0: starts it); an HTTP code. */
static int
value_append(const char *path, uint64_t off, const void *data, size_t len,
    char **cause)
{
	struct stat	 st;
	int		 fd, flags = O_WRONLY|O_CREAT|O_NOFOLLOW|O_CLOEXEC;

	if (off == 0)
		flags |= O_TRUNC;
	if ((fd = open(path, flags, 0600)) == -1 || fstat(fd, &st) != 0) {
		xasprintf(cause, "value: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return (500);
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != off) {
		xasprintf(cause, "offset: %" PRIu64 ", but %jd bytes are here",
		    off, (intmax_t)st.st_size);
		close(fd);
		return (409);
	}
	if (lseek(fd, 0, SEEK_END) == -1 || write_all(fd, data, len) == -1) {
		xasprintf(cause, "value: %s", strerror(errno));
		close(fd);
		return (500);
	}
	close(fd);
	return (200);
}

/* PUT /v1/tasks/values/NAME?size=N&offset=K: one part of a big value. */
void
api_task_value_put(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	uint64_t	 size, off;
	size_t		 len = evbuffer_get_length(in);
	const char	*q;
	char		*path, *cause = NULL, *size_s = NULL, *off_s = NULL;
	json_t		*reply;
	int		 code;

	if (!task_file_valid(id)) {
		api_error(req, 400, "name: '%.128s' is not a spool name", id);
		return;
	}
	if (task_conn_broker(&cause) == NULL) {
		api_error(req, 500, "tasks: %s", cause);
		free(cause);
		return;
	}
	/* each api_query ends the string of the one before */
	if ((q = api_query(req, "size")) != NULL)
		size_s = xstrdup(q);
	if ((q = api_query(req, "offset")) != NULL)
		off_s = xstrdup(q);
	code = task_value_range(size_s, off_s, len, &size, &off, &cause);
	free(size_s);
	free(off_s);
	if (code != 0) {
		api_error(req, 400, "%s", cause);
		free(cause);
		return;
	}
	if (off == 0 && !value_fits(who->owner, id, size, &cause)) {
		api_error(req, 413, "%s", cause);
		free(cause);
		return;
	}
	if ((path = value_path(who->owner, id, 1)) == NULL) {
		api_error(req, 500, "tasks: %s", strerror(errno));
		return;
	}
	code = value_append(path, off, len != 0 ? evbuffer_pullup(in, -1) :
	    (u_char *)"", len, &cause);
	free(path);
	if (code != 200) {
		api_error(req, code, "%s", cause);
		free(cause);
		return;
	}
	reply = json_pack("{s:s,s:I,s:I}", "name", id, "have",
	    (json_int_t)(off + len), "size", (json_int_t)size);
	api_reply(req, 200, reply);	/* which does not take it */
	json_decref(reply);
}

static void
value_get_free(struct value_get *g)
{
	evhttp_connection_set_closecb(evhttp_request_get_connection(g->req),
	    NULL, NULL);
	close(g->fd);
	free(g);
}

static void
value_get_closed(struct evhttp_connection *evcon, void *arg)
{
	struct value_get	*g = arg;

	close(g->fd);
	free(g);
}

/* Sends the next chunk of g's file, or ends the reply. */
static void
value_get_pump(struct evhttp_connection *evcon, void *arg)
{
	struct value_get	*g = arg;
	struct evbuffer		*b = evbuffer_new();
	struct evbuffer_iovec	 v;
	ssize_t			 n;

	evbuffer_reserve_space(b, VALUE_GET_CHUNK, &v, 1);
	n = read(g->fd, v.iov_base, VALUE_GET_CHUNK);
	if (n <= 0) {
		evbuffer_free(b);
		evhttp_send_reply_end(g->req);
		value_get_free(g);
		return;
	}
	v.iov_len = (size_t)n;
	evbuffer_commit_space(b, &v, 1);
	evhttp_send_reply_chunk_with_cb(g->req, b, value_get_pump, g);
	evbuffer_free(b);
}

/* GET /v1/tasks/values/NAME: the owner's value, a chunk at a time. */
void
api_task_value_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct value_get	*g;
	struct stat		 st;
	char			*path;
	char			*cause = NULL;
	int			 fd = -1;

	if (task_conn_broker(&cause) == NULL) {
		api_error(req, 500, "tasks: %s", cause);
		free(cause);
		return;
	}
	if ((path = value_path(who->owner, id, 0)) != NULL)
		fd = open(path, O_RDONLY|O_NOFOLLOW|O_CLOEXEC);
	free(path);
	if (fd == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd != -1)
			close(fd);
		api_error(req, 404, "no value %.128s of yours", id);
		return;
	}
	g = xcalloc(1, sizeof *g);
	g->req = req;
	g->fd = fd;
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    value_get_closed, g);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/octet-stream");
	evhttp_send_reply_start(req, 200, "OK");
	value_get_pump(NULL, g);
}

/*
 * A TCP caller's value name: a whole file of its owner's directory.
 * Returns its path, or NULL with *cause.
 */
char *
task_value_take(const char *owner, const char *name, char **cause)
{
	struct stat	 st;
	char		*path;

	if ((path = value_path(owner, name, 0)) == NULL) {
		xasprintf(cause, "file: '%.128s' is not a spool name", name);
		return (NULL);
	}
	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "file: no value %.128s of yours", name);
		free(path);
		return (NULL);
	}
	return (path);
}

/*
 * A task frame's head: type, length, then the length of its JSON header
 * of n bytes (len: the bytes after that header).
 */
void
task_frame_head(u_char *fh, u_char type, size_t n, size_t len)
{
	frame_header(fh, type, (uint32_t)(4 + n + len));
	fh[FRAME_HDR] = (u_char)(n >> 24);
	fh[FRAME_HDR + 1] = (u_char)(n >> 16);
	fh[FRAME_HDR + 2] = (u_char)(n >> 8);
	fh[FRAME_HDR + 3] = (u_char)n;
}

/* Adds one task frame's head (type, lengths, header) to out. */
static void
value_frame_head(struct evbuffer *out, u_char type, json_t *hdr,
    size_t len)
{
	u_char	 fh[TASK_FRAME_HDR];
	char	*text = json_dumps(hdr, JSON_COMPACT);
	size_t	 n = strlen(text);

	task_frame_head(fh, type, n, len);
	evbuffer_add(out, fh, sizeof fh);
	evbuffer_add(out, text, n);
	free(text);
}

/* A stream of t's call (a file) to a worker; NULL with *cause. */
struct task_vout *
task_vout_open(const struct task *t, uint64_t *size, char **cause)
{
	struct task_vout	*vo;
	struct stat		 st;
	int			 fd;

	fd = open(t->call.file, O_RDONLY|O_NOFOLLOW|O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) != 0) {
		xasprintf(cause, "file: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return (NULL);
	}
	vo = xcalloc(1, sizeof *vo);
	vo->fd = fd;
	vo->task = t->id;
	vo->size = *size = (uint64_t)st.st_size;
	return (vo);
}

void
task_vout_free(struct task_vout *vo)
{
	if (vo != NULL) {
		close(vo->fd);
		free(vo);
	}
}

/*
 * Queues V frames on bev while its output is under VALUE_OUT_LOW.
 * Returns 1 when the whole value went, 0 if more is to come (on the next
 * write callback), -1 if the file cannot be read.
 */
int
task_vout_pump(struct bufferevent *bev, struct task_vout *vo)
{
	struct evbuffer		*out = bufferevent_get_output(bev);
	struct evbuffer_iovec	 v;
	json_t			*hdr;
	size_t			 n;
	ssize_t			 r;

	bufferevent_setwatermark(bev, EV_WRITE, VALUE_OUT_LOW, 0);
	while (vo->off < vo->size && evbuffer_get_length(out) <
	    VALUE_OUT_LOW) {
		n = vo->size - vo->off < VALUE_CHUNK ?
		    (size_t)(vo->size - vo->off) : VALUE_CHUNK;
		hdr = json_pack("{s:I,s:I}", "task", (json_int_t)vo->task,
		    "offset", (json_int_t)vo->off);
		value_frame_head(out, TF_VALUE, hdr, n);
		json_decref(hdr);
		evbuffer_reserve_space(out, n, &v, 1);
		r = pread(vo->fd, v.iov_base, n, (off_t)vo->off);
		if (r != (ssize_t)n)
			return (-1);
		v.iov_len = n;
		evbuffer_commit_space(out, &v, 1);
		vo->off += n;
	}
	if (vo->off < vo->size)
		return (0);
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	return (1);
}

/* The file of task t's streamed result, made; NULL with *cause. */
static struct task_vin *
value_vin_open(const struct task *t, char **cause)
{
	struct task_vin	*vi;

	vi = xcalloc(1, sizeof *vi);
	vi->task = t->id;
	xasprintf(&vi->name, "r-t%" PRIu64 "-a%u", t->id, t->attempts);
	vi->path = value_path(t->owner, vi->name, 1);
	vi->fd = vi->path == NULL ? -1 : open(vi->path, O_WRONLY|O_CREAT|
	    O_TRUNC|O_NOFOLLOW|O_CLOEXEC, 0600);
	if (vi->fd == -1) {
		xasprintf(cause, "a result's file: %s", strerror(errno));
		task_vin_free(vi, 1);
		return (NULL);
	}
	return (vi);
}

/*
 * A part of task's streamed result; *vinp made on its first.  -1 with
 * *cause: it would pass the owner's limit, with its other values.
 */
int
task_vin_part(struct task_vin **vinp, const struct task *t, const void *data,
    size_t len, char **cause)
{
	struct task_vin	*vi = *vinp;

	if (vi != NULL && vi->task != t->id) {
		task_vin_free(vi, 1);
		*vinp = vi = NULL;
	}
	if (vi == NULL && (*vinp = vi = value_vin_open(t, cause)) == NULL)
		return (-1);
	if (!value_fits(t->owner, vi->name, vi->have + len, cause))
		return (-1);
	if (write_all(vi->fd, data, len) == -1) {
		xasprintf(cause, "a result's file: %s", strerror(errno));
		return (-1);
	}
	vi->have += len;
	return (0);
}

/*
 * The end of task id's streamed result of size bytes: its path (the
 * caller's to keep), or NULL with *cause.  *vinp is freed.
 */
char *
task_vin_end(struct task_vin **vinp, uint64_t id, uint64_t size,
    char **cause)
{
	struct task_vin	*vi = *vinp;
	char		*path;

	if (vi == NULL || vi->task != id || vi->have != size) {
		xasprintf(cause, "the result's stream ended at %" PRIu64
		    " of %" PRIu64 " bytes", vi != NULL && vi->task == id ?
		    vi->have : 0, size);
		task_vin_free(vi, 1);
		*vinp = NULL;
		return (NULL);
	}
	path = vi->path;
	vi->path = NULL;
	task_vin_free(vi, 0);
	*vinp = NULL;
	return (path);
}

void
task_vin_free(struct task_vin *vi, int unlink_it)
{
	if (vi == NULL)
		return;
	if (vi->fd != -1)
		close(vi->fd);
	if (unlink_it && vi->path != NULL)
		unlink(vi->path);
	free(vi->name);
	free(vi->path);
	free(vi);
}

/* Removes the unheld files of one owner's directory left for long. */
static void
value_sweep_dir(const char *dir, struct hmap *held, time_t old)
{
	struct dirent	*de;
	struct stat	 st;
	char		*path;
	DIR		*d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (hmap_get(held, path) == NULL && lstat(path, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime < old) {
			log_debug("%s: %s", __func__, path);
			unlink(path);
		}
		free(path);
	}
	closedir(d);
}

/* Removes what no task holds and nobody wrote for VALUE_ORPHAN_S. */
void
task_value_sweep(struct task_broker *b)
{
	struct hmap	*held = hmap_create();
	struct dirent	*de;
	struct task	*t;
	char		*top, *dir;
	DIR		*d;

	TAILQ_FOREACH(t, &b->tasks, entry) {
		if (t->call.file != NULL)
			hmap_put(held, t->call.file, t);
		if (t->out.file != NULL)
			hmap_put(held, t->out.file, t);
	}
	xasprintf(&top, "%s/o", task_spool_dir());
	if ((d = opendir(top)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			xasprintf(&dir, "%s/%s", top, de->d_name);
			value_sweep_dir(dir, held, time(NULL) -
			    VALUE_ORPHAN_S);
			free(dir);
		}
		closedir(d);
	}
	free(top);
	hmap_free(held);
}
