/*
 * cas.c: the host's blob store, $GMUX_HOME/blobs.  A blob is a file named
 * by the SHA-256 of its content, under a fan-out directory of the digest's
 * first two hex digits (blobs/ab/abcd...).  A blob arrives in a temporary
 * file (blobs/tmp), is checked against the digest and size it was announced
 * with, and only then renamed into place.  The store is bounded: past its
 * limit the least recently used blobs go, except pinned ones (a job being
 * materialized holds pins).  Blobs still arriving count too: each writer
 * holds room for what it announced (or, size unknown, what it has
 * written), and writers together never hold more than the limit, so
 * uploads left half done (a remote's parts wait between requests) cannot
 * fill the disk.  Last use survives restarts as the blob's
 * mtime, refreshed at most hourly to spare writes.
 *
 * Durability is by verification, not by a flush per blob (a first sync of
 * ten thousand files would spend most of its time in fsync): an orderly
 * cas_close flushes the filesystem and leaves blobs/clean; a store opened
 * without that marker (a crash, a power loss) hashes each blob again the
 * first time it is used, and drops one whose content no longer matches its
 * name, so a torn write costs a re-upload, never a wrong input.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define CAS_TOUCH_MS	(3600 * 1000)
#define CAS_CLEAN	"clean"
#define CAS_EMPTY \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct cas_blob {
	char			 digest[DIGEST_HEX];
	uint64_t		 size;
	int64_t			 used;		/* ms */
	int64_t			 disk_used;	/* the mtime on disk, ms */
	u_int			 pins;
	int			 verified;	/* known to match its name */
	TAILQ_ENTRY(cas_blob)	 entry;		/* least recently used first */
};

struct cas {
	uint64_t		 generation;	/* changes when a blob goes */
	char			*dir;
	int			 dirfd;
	uint64_t		 limit;
	uint64_t		 total;
	uint64_t		 pending;	/* held by writers, <= limit */
	struct hmap		*map;
	TAILQ_HEAD(, cas_blob)	 lru;
	u_int			 seq;
	int			 was_clean;	/* opened after cas_close */
};

struct cas_writer {
	struct cas		*cas;
	char			 want[DIGEST_HEX];	/* "" if unknown */
	char			 got[DIGEST_HEX];
	uint64_t		 want_size;
	uint64_t		 size;
	uint64_t		 held;		/* its part of pending */
	int			 fd;
	char			 tmp[64];
	struct digest		 d;
};

static uint64_t	cas_opened;

static int	cas_verify_fd(struct cas *, struct cas_blob *, int);
static void	cas_evict(struct cas *);

/* Relative path of a blob: "ab/abcd...". */
static void
cas_name(const char *digest, char *buf, size_t len)
{
	snprintf(buf, len, "%.2s/%s", digest, digest);
}

static struct cas_blob *
cas_index(struct cas *c, const char *digest, uint64_t size, int64_t used)
{
	struct cas_blob	*b;

	b = xcalloc(1, sizeof *b);
	memcpy(b->digest, digest, DIGEST_HEX);
	b->size = size;
	b->used = b->disk_used = used;
	b->verified = c->was_clean;
	hmap_put(c->map, b->digest, b);
	c->total += size;
	return (b);
}

static void
cas_unindex(struct cas *c, struct cas_blob *b)
{
	c->generation++;
	hmap_del(c->map, b->digest);
	TAILQ_REMOVE(&c->lru, b, entry);
	c->total -= b->size;
	free(b);
}

static int
cas_cmp_used(const void *a, const void *b)
{
	const struct cas_blob	*x = *(struct cas_blob *const *)a;
	const struct cas_blob	*y = *(struct cas_blob *const *)b;

	return (x->used < y->used ? -1 : x->used > y->used);
}

/* Reads one fan-out directory into the index. */
static void
cas_scan_fan(struct cas *c, const char *fan)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd;

	if ((fd = openat(c->dirfd, fan, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
	    O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!digest_valid(de->d_name) || strncmp(de->d_name, fan, 2)
		    != 0 || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW)
		    != 0 || !S_ISREG(st.st_mode))
			continue;
		/* A crash before the data reached the disk leaves it empty. */
		if (st.st_size == 0 && strcmp(de->d_name, CAS_EMPTY) != 0) {
			unlinkat(fd, de->d_name, 0);
			continue;
		}
		cas_index(c, de->d_name, (uint64_t)st.st_size,
		    (int64_t)st.st_mtim.tv_sec * 1000 +
		    st.st_mtim.tv_nsec / 1000000);
	}
	closedir(d);
}

/* Indexes every blob and orders them by last use. */
static void
cas_scan(struct cas *c)
{
	struct cas_blob	**v;
	const char	 *key;
	void		 *val;
	char		  fan[3];
	size_t		  it = 0, n = 0, i;

	for (i = 0; i < 256; i++) {
		snprintf(fan, sizeof fan, "%02zx", i);
		cas_scan_fan(c, fan);
	}
	v = xcalloc(hmap_count(c->map), sizeof *v);
	while (hmap_next(c->map, &it, &key, &val))
		v[n++] = val;
	qsort(v, n, sizeof *v, cas_cmp_used);
	for (i = 0; i < n; i++)
		TAILQ_INSERT_TAIL(&c->lru, v[i], entry);
	free(v);
}

/* Removes what interrupted writes left in tmp/. */
static void
cas_clean_tmp(struct cas *c)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((fd = openat(c->dirfd, "tmp", O_RDONLY|O_DIRECTORY|O_CLOEXEC)) ==
	    -1 || (d = fdopendir(fd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			unlinkat(fd, de->d_name, 0);
	}
	closedir(d);
}

/* Flushes everything, then leaves the marker that says so. */
static void
cas_mark_clean(struct cas *c)
{
	int	 fd;

	if (syncfs(c->dirfd) != 0)
		return;
	fd = openat(c->dirfd, CAS_CLEAN, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC,
	    0600);
	if (fd == -1)
		return;
	fsync(fd);
	close(fd);
	fsync(c->dirfd);
}

/*
 * Opens (creating) the store at dir, holding at most limit bytes.  Returns
 * it (free with cas_close) or NULL with *cause.
 */
struct cas *
cas_open(const char *dir, uint64_t limit, char **cause)
{
	struct cas	*c;
	char		*tmp;

	xasprintf(&tmp, "%s/tmp", dir);
	if (mkdir_p(tmp, 0700) != 0) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return (NULL);
	}
	free(tmp);
	c = xcalloc(1, sizeof *c);
	c->generation = ++cas_opened << 40;
	c->dir = xstrdup(dir);
	c->limit = limit;
	c->map = hmap_create();
	TAILQ_INIT(&c->lru);
	if ((c->dirfd = open(dir, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		cas_close(c);
		return (NULL);
	}
	/* From here until cas_close, a crash leaves the store unverified. */
	c->was_clean = unlinkat(c->dirfd, CAS_CLEAN, 0) == 0;
	if (!c->was_clean)
		log_info("%s: %s was not closed cleanly; blobs are checked "
		    "again as they are used", __func__, dir);
	cas_clean_tmp(c);
	cas_scan(c);
	cas_evict(c);
	return (c);
}

void
cas_close(struct cas *c)
{
	struct cas_blob	*b;

	if (c == NULL)
		return;
	while ((b = TAILQ_FIRST(&c->lru)) != NULL)
		cas_unindex(c, b);
	hmap_free(c->map);
	if (c->dirfd != -1) {
		cas_mark_clean(c);
		close(c->dirfd);
	}
	free(c->dir);
	free(c);
}

/*
 * A number that changes whenever a blob leaves the store, and differs
 * between stores: what was found complete stays complete while it holds.
 */
uint64_t
cas_generation(const struct cas *c)
{
	return (c->generation);
}

uint64_t
cas_total(const struct cas *c)
{
	return (c->total);
}

uint64_t
cas_limit(const struct cas *c)
{
	return (c->limit);
}

size_t
cas_count(const struct cas *c)
{
	return (hmap_count(c->map));
}

/* Returns 1 and the size if the store holds the blob. */
int
cas_has(const struct cas *c, const char *digest, uint64_t *size)
{
	struct cas_blob	*b;

	if ((b = hmap_get(c->map, digest)) == NULL)
		return (0);
	if (size != NULL)
		*size = b->size;
	return (1);
}

/* Marks a blob used now: it moves to the back of the eviction queue. */
void
cas_touch(struct cas *c, const char *digest)
{
	struct cas_blob	*b;
	struct timespec	 ts[2];
	char		 name[DIGEST_HEX + 4];
	int64_t		 now = clock_ms();

	if ((b = hmap_get(c->map, digest)) == NULL)
		return;
	b->used = now;
	TAILQ_REMOVE(&c->lru, b, entry);
	TAILQ_INSERT_TAIL(&c->lru, b, entry);
	if (now - b->disk_used < CAS_TOUCH_MS)
		return;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = now / 1000;
	ts[1].tv_nsec = (now % 1000) * 1000000;
	cas_name(digest, name, sizeof name);
	if (utimensat(c->dirfd, name, ts, AT_SYMLINK_NOFOLLOW) == 0)
		b->disk_used = now;
}

/* Returns a read-only fd on the blob (and touches it), or -1. */
int
cas_open_blob(struct cas *c, const char *digest, uint64_t *size)
{
	struct cas_blob	*b;
	char		 name[DIGEST_HEX + 4];
	int		 fd;

	if ((b = hmap_get(c->map, digest)) == NULL)
		return (-1);
	cas_name(digest, name, sizeof name);
	if ((fd = openat(c->dirfd, name, O_RDONLY|O_NOFOLLOW|O_CLOEXEC)) ==
	    -1) {
		if (errno == ENOENT && b->pins == 0)	/* removed by hand */
			cas_unindex(c, b);
		return (-1);
	}
	if (!b->verified && cas_verify_fd(c, b, fd) != 0) {
		close(fd);
		return (-1);
	}
	if (size != NULL)
		*size = b->size;
	cas_touch(c, digest);
	return (fd);
}

/*
 * Checks a blob not verified since an unclean stop: it must still hash to
 * its name.  One that does not is dropped (-1).  fd is left at offset 0.
 */
static int
cas_verify_fd(struct cas *c, struct cas_blob *b, int fd)
{
	char		 got[DIGEST_HEX], name[DIGEST_HEX + 4];
	uint64_t	 size;

	if (digest_fd(fd, got, &size, NULL) == 0 && size == b->size &&
	    strcmp(got, b->digest) == 0 && lseek(fd, 0, SEEK_SET) == 0) {
		b->verified = 1;
		return (0);
	}
	log_warnx("%s: blob %s is damaged; dropped", __func__, b->digest);
	cas_name(b->digest, name, sizeof name);
	if (b->pins == 0) {
		unlinkat(c->dirfd, name, 0);
		cas_unindex(c, b);
	}
	return (-1);
}

/*
 * Returns 1 if the store holds the blob and it is sound: after an unclean
 * stop this hashes it once.  For deciding what a client must send.
 */
int
cas_check(struct cas *c, const char *digest, uint64_t *size)
{
	struct cas_blob	*b;
	int		 fd;

	if ((b = hmap_get(c->map, digest)) == NULL)
		return (0);
	if (!b->verified) {
		if ((fd = cas_open_blob(c, digest, NULL)) == -1)
			return (0);
		close(fd);
	}
	if (size != NULL)
		*size = b->size;
	return (1);
}

/*
 * For a helper thread: its own descriptor of the store's directory, and a
 * blob opened through it.  These touch nothing of the store's memory (the
 * index, the eviction queue), which the daemon's loop alone owns; a blob
 * opened this way must be pinned by the loop for as long as it is used,
 * so that eviction leaves its file in place.
 */
int
cas_dup_dirfd(const struct cas *c)
{
	return (fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0));
}

int
cas_open_at(int dirfd, const char *digest)
{
	char	 name[DIGEST_HEX + 4];

	cas_name(digest, name, sizeof name);
	return (openat(dirfd, name, O_RDONLY|O_NOFOLLOW|O_CLOEXEC));
}

/* Pins a blob against eviction; returns -1 if it is not there. */
int
cas_pin(struct cas *c, const char *digest)
{
	struct cas_blob	*b;

	if ((b = hmap_get(c->map, digest)) == NULL)
		return (-1);
	b->pins++;
	return (0);
}

void
cas_unpin(struct cas *c, const char *digest)
{
	struct cas_blob	*b;

	if ((b = hmap_get(c->map, digest)) != NULL && b->pins > 0)
		b->pins--;
}

/*
 * Drops least recently used, unpinned blobs until the store, with the room
 * its writers hold, fits.
 */
static void
cas_evict(struct cas *c)
{
	struct cas_blob	*b, *next;
	char		 name[DIGEST_HEX + 4];

	for (b = TAILQ_FIRST(&c->lru); b != NULL &&
	    c->total + c->pending > c->limit; b = next) {
		next = TAILQ_NEXT(b, entry);
		if (b->pins != 0)
			continue;
		cas_name(b->digest, name, sizeof name);
		log_debug("%s: %s (%llu bytes)", __func__, b->digest,
		    (unsigned long long)b->size);
		unlinkat(c->dirfd, name, 0);
		cas_unindex(c, b);
	}
}

/* Sets the room w holds in the store to n bytes. */
static void
cas_writer_hold(struct cas_writer *w, uint64_t n)
{
	w->cas->pending = w->cas->pending - w->held + n;
	w->held = n;
}

/*
 * Is there room now for a blob of size: not over the store's limit, and
 * not over what uploads in progress leave of it?  A caller that answers a
 * client asks first, to tell "too large" (413) from a failure (500).
 */
int
cas_room(const struct cas *c, uint64_t size, char **cause)
{
	if (size > c->limit) {
		xasprintf(cause, "a blob of %llu bytes is larger than the "
		    "store's limit of %llu", (unsigned long long)size,
		    (unsigned long long)c->limit);
		return (-1);
	}
	if (size > c->limit - c->pending) {
		xasprintf(cause, "uploads in progress hold %llu bytes of the "
		    "store's %llu: no room for %llu more now",
		    (unsigned long long)c->pending,
		    (unsigned long long)c->limit, (unsigned long long)size);
		return (-1);
	}
	return (0);
}

/*
 * Starts writing a blob.  digest may be NULL (computed: ingesting a file)
 * and size CAS_SIZE_UNKNOWN.  Returns the writer or NULL with *cause.
 */
struct cas_writer *
cas_writer_create(struct cas *c, const char *digest, uint64_t size,
    char **cause)
{
	struct cas_writer	*w;

	if (size != CAS_SIZE_UNKNOWN && cas_room(c, size, cause) != 0)
		return (NULL);
	w = xcalloc(1, sizeof *w);
	w->cas = c;
	if (digest != NULL)
		memcpy(w->want, digest, DIGEST_HEX);
	w->want_size = size;
	snprintf(w->tmp, sizeof w->tmp, "tmp/%ld.%u", (long)getpid(),
	    c->seq++);
	w->fd = openat(c->dirfd, w->tmp, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|
	    O_CLOEXEC, 0600);
	if (w->fd == -1) {
		xasprintf(cause, "%s/%s: %s", c->dir, w->tmp, strerror(errno));
		free(w);
		return (NULL);
	}
	digest_init(&w->d);
	if (size != CAS_SIZE_UNKNOWN)
		cas_writer_hold(w, size);
	return (w);
}

int
cas_writer_write(struct cas_writer *w, const void *buf, size_t len,
    char **cause)
{
	struct cas	*c = w->cas;

	if (w->size + len > c->limit || (w->want_size != CAS_SIZE_UNKNOWN
	    && w->size + len > w->want_size)) {
		xasprintf(cause, "blob %.16s is larger than announced",
		    *w->want ? w->want : "(new)");
		return (-2);
	}
	if (w->want_size == CAS_SIZE_UNKNOWN) {
		if (len > c->limit - c->pending) {
			xasprintf(cause, "blob %.16s: uploads in progress hold "
			    "the store's %llu bytes", *w->want ? w->want :
			    "(new)", (unsigned long long)c->limit);
			return (-2);
		}
		cas_writer_hold(w, w->size + len);
	}
	digest_update(&w->d, buf, len);
	if (write_all(w->fd, buf, len) == -1) {
		xasprintf(cause, "%s/%s: %s", w->cas->dir, w->tmp,
		    strerror(errno));
		return (-1);
	}
	w->size += len;
	return (0);
}

/*
 * Checks the content against the announced digest and size and, if sync,
 * makes it durable.  The blob is not visible until cas_writer_commit.
 * On failure the writer is freed and -2 (content does not match) or -1
 * (I/O) returned with *cause.
 */
int
cas_writer_finish(struct cas_writer *w, int sync, char *digest,
    char **cause)
{
	digest_final(&w->d, w->got);
	if (w->want_size != CAS_SIZE_UNKNOWN && w->size != w->want_size) {
		xasprintf(cause, "blob %.16s: %llu bytes arrived, not %llu",
		    w->want, (unsigned long long)w->size,
		    (unsigned long long)w->want_size);
		cas_writer_abort(w);
		return (-2);
	}
	if (*w->want != '\0' && strcmp(w->want, w->got) != 0) {
		xasprintf(cause, "blob %.16s: its content hashes to %.16s",
		    w->want, w->got);
		cas_writer_abort(w);
		return (-2);
	}
	if (sync && fdatasync(w->fd) != 0) {
		xasprintf(cause, "%s: %s", w->tmp, strerror(errno));
		goto fail;
	}
	close(w->fd);
	w->fd = -1;
	if (digest != NULL)
		memcpy(digest, w->got, DIGEST_HEX);
	return (0);
fail:
	cas_writer_abort(w);
	return (-1);
}

/* Renames a finished blob into place and frees the writer. */
int
cas_writer_commit(struct cas_writer *w, char **cause)
{
	struct cas	*c = w->cas;
	struct cas_blob	*b;
	char		 name[DIGEST_HEX + 4];
	int		 rc = 0;

	cas_writer_hold(w, 0);	/* counted as a blob from here */
	cas_name(w->got, name, sizeof name);
	if (cas_has(c, w->got, NULL))
		unlinkat(c->dirfd, w->tmp, 0);
	else {
		name[2] = '\0';
		if (mkdirat(c->dirfd, name, 0700) != 0 && errno != EEXIST)
			rc = -1;
		name[2] = '/';
		if (rc == 0 && renameat(c->dirfd, w->tmp, c->dirfd, name) != 0)
			rc = -1;
		if (rc != 0) {
			xasprintf(cause, "%s/%s: %s", c->dir, name,
			    strerror(errno));
			unlinkat(c->dirfd, w->tmp, 0);
		} else {
			b = cas_index(c, w->got, w->size, clock_ms());
			b->verified = 1;	/* hashed on the way in */
			TAILQ_INSERT_TAIL(&c->lru, b, entry);
		}
	}
	if (rc == 0) {
		/* Never evict what was just written to make room for it. */
		cas_touch(c, w->got);
		cas_pin(c, w->got);
		cas_evict(c);
		cas_unpin(c, w->got);
	}
	free(w);
	return (rc);
}

void
cas_writer_abort(struct cas_writer *w)
{
	if (w == NULL)
		return;
	cas_writer_hold(w, 0);
	if (w->fd != -1) {
		close(w->fd);
		digest_abort(&w->d);
	}
	unlinkat(w->cas->dirfd, w->tmp, 0);
	free(w);
}

/*
 * Stores a blob from memory (one PUT).  Returns 0, -2 if the content is
 * not what digest names, or -1.
 */
int
cas_put(struct cas *c, const char *digest, const void *buf, size_t len,
    char **cause)
{
	struct cas_writer	*w;
	int			 rc;

	if ((w = cas_writer_create(c, digest, len, cause)) == NULL)
		return (-1);
	if ((rc = cas_writer_write(w, buf, len, cause)) != 0) {
		cas_writer_abort(w);
		return (rc);
	}
	if ((rc = cas_writer_finish(w, 0, NULL, cause)) != 0)
		return (rc);
	return (cas_writer_commit(w, cause));
}

/*
 * Copies what is left on fd into the store in one pass (the digest is
 * computed on the way, so a file changing meanwhile cannot mismatch).
 * Returns 0 with digest and *size, or -1 with *cause.
 */
int
cas_ingest_fd(struct cas *c, int fd, char *digest, uint64_t *size,
    char **cause)
{
	static char		 buf[128 * 1024];
	struct cas_writer	*w;
	ssize_t			 n;

	if ((w = cas_writer_create(c, NULL, CAS_SIZE_UNKNOWN, cause)) == NULL)
		return (-1);
	for (;;) {
		if ((n = read(fd, buf, sizeof buf)) == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			xasprintf(cause, "read: %s", strerror(errno));
			cas_writer_abort(w);
			return (-1);
		}
		if (n == 0)
			break;
		if (cas_writer_write(w, buf, (size_t)n, cause) != 0) {
			cas_writer_abort(w);
			return (-1);
		}
	}
	*size = w->size;
	if (cas_writer_finish(w, 0, digest, cause) != 0)
		return (-1);
	return (cas_writer_commit(w, cause));
}
