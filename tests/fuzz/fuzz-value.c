/*
 * fuzz-value.c: a big value's fields and frames (docs/tasks.md, "Big
 * values over TCP").  The input is a PUT's size and offset (a line each),
 * then a worker's stream: frames whose U parts (of task 1 or 2) go to
 * task_vin_part and whose D's "size" ends the value with task_vin_end, as
 * task-conn.c does.  What is spooled must be what came, in order, and the
 * owner's values together (another value of its is there already) must
 * stay within its upload limit.
 * seeds: tests/fuzz/seeds/value/
 */

#include <sys/stat.h>

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"
#include "task-int.h"

#define LIMIT		4096		/* GMUX_UPLOAD_LIMIT */
#define OTHER		3000		/* the owner's value already there */

static char	 home[] = "/tmp/fuzz-value.XXXXXX";
static char	*dir;			/* the owner's spool directory */

static int
remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	remove(path);
	return (0);
}

/* The harness's home goes when the fuzzer exits. */
static void
teardown(void)
{
	nftw(home, remove_one, 16, FTW_DEPTH|FTW_PHYS);
}

static void
setup(void)
{
	char	*cause = NULL, *other;
	FILE	*f;

	if (mkdtemp(home) == NULL)
		abort();
	atexit(teardown);
	setenv("GMUX_HOME", home, 1);
	setenv("GMUX_UPLOAD_LIMIT", "4K", 1);
	if (task_spool_init(&cause) != 0)
		abort();
	xasprintf(&dir, "%s/o/667a", task_spool_dir());	/* "fz" */
	if (mkdir_p(dir, 0700) != 0)
		abort();
	xasprintf(&other, "%s/other", dir);
	if ((f = fopen(other, "w")) == NULL || ftruncate(fileno(f),
	    OTHER) != 0)
		abort();
	fclose(f);
	free(other);
}

/* The bytes of every file in the owner's directory. */
static uint64_t
spooled(void)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d = opendir(dir);
	uint64_t	 sum = 0;

	FUZZ_ASSERT(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	closedir(d);
	return (sum);
}

/* One line of the input as a string (NULL: none left); *p moves on. */
static char *
line(const uint8_t **p, const uint8_t *end)
{
	const uint8_t	*nl = memchr(*p, '\n', (size_t)(end - *p));
	char		*s;

	if (nl == NULL)
		return (NULL);
	s = fuzz_text(*p, (size_t)(nl - *p));
	*p = nl + 1;
	return (s);
}

static void
put_fields(const char *size_s, const char *off_s, size_t len)
{
	uint64_t	 size, off;
	char		*cause = NULL;

	if (task_value_range(size_s, off_s, len, &size, &off, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && (strncmp(cause, "size: ", 6) ==
		    0 || strncmp(cause, "offset: ", 8) == 0));
		free(cause);
		return;
	}
	FUZZ_ASSERT(size_s != NULL && strtoull(size_s, NULL, 10) == size);
	FUZZ_ASSERT(off <= size && len <= size - off);
	FUZZ_ASSERT(off_s != NULL || off == 0);
}

struct shadow {
	struct task_vin	*vin;
	uint64_t	 task;		/* whose bytes these are, 0: none */
	u_char		*buf;
	size_t		 len;
};

/* The file a value ended in holds what came, in order. */
static void
check_file(const char *path, const struct shadow *sh)
{
	struct stat	 st;
	u_char		*got;
	FILE		*f = fopen(path, "r");

	FUZZ_ASSERT(f != NULL && fstat(fileno(f), &st) == 0);
	FUZZ_ASSERT((uint64_t)st.st_size == sh->len);
	got = xmalloc(sh->len + 1);
	FUZZ_ASSERT(fread(got, 1, sh->len, f) == sh->len);
	FUZZ_ASSERT(memcmp(got, sh->buf, sh->len) == 0);
	free(got);
	fclose(f);
}

/* Runs one frame as task-conn.c would; -1: it closes the stream. */
static int
frame_run(struct shadow *sh, struct task *ts, const struct frame *f)
{
	const u_char	*data;
	size_t		 len;
	json_t		*hdr;
	uint64_t	 id, size;
	char		*cause = NULL, *path;
	int		 sized;

	if ((hdr = task_payload_parse(f->data, f->len, &data, &len)) == NULL)
		return (-1);
	if (task_value_field(hdr, "task", &id) != 0 || id < 1 || id > 2)
		goto out;
	if (f->type == TF_UPLOAD) {
		if (sh->task != id)
			sh->len = 0;
		sh->task = id;
		if (task_vin_part(&sh->vin, &ts[id - 1], data, len,
		    &cause) == 0) {
			memcpy(sh->buf + sh->len, data, len);
			sh->len += len;
		} else {
			FUZZ_ASSERT(cause != NULL);
			free(cause);
			task_vin_free(sh->vin, 1);
			sh->vin = NULL;
			sh->task = 0;
		}
	} else if (f->type == TF_DONE &&
	    (sized = task_value_field(hdr, "size", &size)) != 1) {
		path = sized == 0 ? task_vin_end(&sh->vin, id, size, &cause) :
		    NULL;
		if (path != NULL) {
			FUZZ_ASSERT(sh->task == id && size == sh->len);
			check_file(path, sh);
			unlink(path);
			free(path);
		} else
			free(cause);
		task_vin_free(sh->vin, 1);
		sh->vin = NULL;
		sh->task = 0;
	}
	FUZZ_ASSERT(spooled() <= LIMIT);
out:
	json_decref(hdr);
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t	*p = data, *end = data + size;
	struct task	 ts[2];
	struct shadow	 sh;
	struct frame	 f;
	char		*size_s, *off_s, *cause = NULL;
	ssize_t		 n;
	uint32_t	 len;

	if (dir == NULL)
		setup();
	size_s = line(&p, end);
	off_s = line(&p, end);
	put_fields(size_s, off_s, (size_t)(end - p));
	put_fields(size_s, NULL, 0);
	free(size_s);
	free(off_s);
	memset(ts, 0, sizeof ts);
	ts[0].id = 1;
	ts[1].id = 2;
	ts[0].owner = ts[1].owner = (char *)"fz";
	ts[1].attempts = 1;
	memset(&sh, 0, sizeof sh);
	sh.buf = xmalloc(size + 1);
	while ((n = frame_take(p, (size_t)(end - p), FRAME_MAX, &len,
	    &cause)) > 0) {
		f.type = p[0];
		f.len = len;
		f.data = (const char *)p + FRAME_HDR;
		if (frame_run(&sh, ts, &f) != 0)
			break;
		p += n;
	}
	free(cause);
	task_vin_free(sh.vin, 1);
	free(sh.buf);
	FUZZ_ASSERT(spooled() == OTHER);	/* what it made is gone */
	return (0);
}
