/*
 * statcache.c: the client's memory of what it has hashed, so an unchanged
 * tree is not read again.  An entry maps a path and its stat (device,
 * inode, size, mtime and ctime in ns, mode) to the content's SHA-256.  It
 * is trusted only while the stat is identical and both times are older
 * than the cache's stamp: the filesystem time taken (by touching a stamp
 * file) before the first file of the scan that wrote it was hashed.  A
 * file written in the same clock tick as that stamp may have changed after
 * it was hashed without its times moving, so such "racy" entries are
 * hashed again, as git does with entries as new as its index.
 *
 * File (0600):
 *	gmux-statcache 1 STAMP_NS
 *	DEV INO SIZE MTIME_NS CTIME_NS MODE SHA256 PATH	(PATH escaped)
 *	end SHA256					(of all above)
 *
 * It is replaced by rename but not fsynced: it is only a cache, and the
 * checksum line turns a file torn by a crash into an empty cache, which
 * costs hashing and nothing else.  (An fsync per run would cost more than
 * the whole unchanged scan.)
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define STATCACHE_MAGIC	"gmux-statcache 1 "
#define STATCACHE_MAX	(512 * 1024 * 1024)
#define STATCACHE_END	"end "

struct scentry {
	char		*path;
	uint64_t	 dev, ino, size, mode;
	int64_t		 mtime, ctime;
	char		 digest[DIGEST_HEX];
	int		 seen;
};

struct statcache {
	char		*path;
	struct hmap	*map;
	int64_t		 stamp;		/* of the loaded file; 0 if none */
	int64_t		 newstamp;	/* this scan's, once taken */
	int		 dirty;
	size_t		 hits;
	size_t		 misses;
};

static int64_t
ts_ns(const struct timespec *ts)
{
	return ((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec);
}

static void
scentry_free(struct scentry *e)
{
	free(e->path);
	free(e);
}

static void
statcache_empty(struct statcache *sc)
{
	const char	*key;
	void		*val;
	size_t		 it = 0;

	while (hmap_next(sc->map, &it, &key, &val))
		scentry_free(val);
	hmap_free(sc->map);
	sc->map = hmap_create();
	sc->stamp = 0;
}

/* Reads a decimal number and the space after it; NULL if there is none. */
static const char *
statcache_number(const char *p, const char *end, uint64_t *v)
{
	const char	*start = p;

	*v = 0;
	while (p < end && *p >= '0' && *p <= '9' && p - start < 20)
		*v = *v * 10 + (uint64_t)(*p++ - '0');
	if (p == start || p >= end || *p != ' ')
		return (NULL);
	return (p + 1);
}

/* Parses "DEV INO SIZE MTIME CTIME MODE DIGEST PATH". */
static struct scentry *
statcache_line(const char *p, const char *end)
{
	struct scentry		 e, *n;
	uint64_t		 v[6];
	int			 i;

	memset(&e, 0, sizeof e);
	for (i = 0; i < 6; i++) {
		if ((p = statcache_number(p, end, &v[i])) == NULL)
			return (NULL);
	}
	if (end - p < DIGEST_HEX || p[DIGEST_HEX - 1] != ' ')
		return (NULL);
	memcpy(e.digest, p, DIGEST_HEX - 1);
	if (!digest_valid(e.digest))
		return (NULL);
	p += DIGEST_HEX;
	if ((e.path = manifest_unescape(p, (size_t)(end - p))) == NULL)
		return (NULL);
	e.dev = v[0];
	e.ino = v[1];
	e.size = v[2];
	e.mtime = (int64_t)v[3];
	e.ctime = (int64_t)v[4];
	e.mode = v[5];
	n = xmalloc(sizeof *n);
	*n = e;
	return (n);
}

/*
 * Parses a cache file's text into sc (replacing what it held).  Returns 0,
 * or -1 with *cause (sc is then empty: a bad cache only costs hashing).
 */
int
statcache_parse(struct statcache *sc, const char *buf, size_t len,
    char **cause)
{
	const char	*p = buf, *end, *nl;
	struct scentry	*e;
	uint64_t	 stamp;
	char		 sum[DIGEST_HEX];
	size_t		 tail = sizeof STATCACHE_END - 1 + DIGEST_HEX;

	statcache_empty(sc);
	if (len < sizeof STATCACHE_MAGIC + tail || memcmp(buf, STATCACHE_MAGIC,
	    sizeof STATCACHE_MAGIC - 1) != 0)
		goto bad;
	end = buf + len - tail;
	digest_buf(buf, len - tail, sum);
	if (memcmp(end, STATCACHE_END, sizeof STATCACHE_END - 1) != 0 ||
	    memcmp(end + sizeof STATCACHE_END - 1, sum, DIGEST_HEX - 1) != 0 ||
	    buf[len - 1] != '\n')
		goto bad;
	p += sizeof STATCACHE_MAGIC - 1;
	if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL || nl == p ||
	    nl - p > 19)
		goto bad;
	for (stamp = 0; p < nl; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		stamp = stamp * 10 + (uint64_t)(*p - '0');
	}
	sc->stamp = (int64_t)stamp;
	for (p = nl + 1; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL ||
		    (e = statcache_line(p, nl)) == NULL)
			goto bad;
		if ((e = hmap_put(sc->map, e->path, e)) != NULL)
			scentry_free(e);	/* a duplicate: later wins */
	}
	return (0);
bad:
	xasprintf(cause, "the stat cache is malformed");
	statcache_empty(sc);
	return (-1);
}

static void
statcache_mkdir(const char *path)
{
	char	*dir, *slash;

	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		mkdir_p(dir, 0700);
	}
	free(dir);
}

/*
 * Loads the cache at path; a missing or broken file is an empty cache.
 * Free it with statcache_free.
 */
struct statcache *
statcache_load(const char *path)
{
	struct statcache	*sc;
	char			*buf, *cause = NULL;
	size_t			 len;

	sc = xcalloc(1, sizeof *sc);
	sc->path = xstrdup(path);
	sc->map = hmap_create();
	statcache_mkdir(path);
	if ((buf = read_file(path, STATCACHE_MAX, &len, &cause)) == NULL) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
		return (sc);
	}
	if (statcache_parse(sc, buf, len, &cause) != 0) {
		log_warnx("%s: %s", path, cause);
		free(cause);
	}
	free(buf);
	return (sc);
}

void
statcache_free(struct statcache *sc)
{
	const char	*key;
	void		*val;
	size_t		 it = 0;

	if (sc == NULL)
		return;
	while (hmap_next(sc->map, &it, &key, &val))
		scentry_free(val);
	hmap_free(sc->map);
	free(sc->path);
	free(sc);
}

/*
 * Returns the digest remembered for path if st still matches and the entry
 * is not racy; NULL means "hash it".  The entry is kept on the next save.
 */
const char *
statcache_get(struct statcache *sc, const char *path, const struct stat *st)
{
	struct scentry	*e;

	if ((e = hmap_get(sc->map, path)) == NULL)
		goto miss;
	e->seen = 1;
	if (e->dev != (uint64_t)st->st_dev || e->ino != (uint64_t)st->st_ino ||
	    e->size != (uint64_t)st->st_size ||
	    e->mode != (uint64_t)st->st_mode ||
	    e->mtime != ts_ns(&st->st_mtim) ||
	    e->ctime != ts_ns(&st->st_ctim) ||
	    e->mtime >= sc->stamp || e->ctime >= sc->stamp)
		goto miss;
	sc->hits++;
	return (e->digest);
miss:
	sc->misses++;
	return (NULL);
}

/*
 * Takes the stamp of this scan, once, before the first file is hashed:
 * the mtime the filesystem gives a file touched now.
 */
static void
statcache_stamp(struct statcache *sc)
{
	struct stat	 st;
	char		*p;
	int		 fd;

	if (sc->newstamp != 0)
		return;
	xasprintf(&p, "%s.stamp", sc->path);
	fd = open(p, O_WRONLY|O_CREAT|O_CLOEXEC, 0600);
	if (fd != -1 && futimens(fd, NULL) == 0 && fstat(fd, &st) == 0)
		sc->newstamp = ts_ns(&st.st_mtim);
	else	/* no stamp: every entry of this scan will be racy */
		sc->newstamp = INT64_MAX;
	if (fd != -1)
		close(fd);
	free(p);
}

/* Must be called before path is hashed; remembers its digest after. */
void
statcache_hashing(struct statcache *sc)
{
	statcache_stamp(sc);
}

void
statcache_put(struct statcache *sc, const char *path, const struct stat *st,
    const char *digest)
{
	struct scentry	*e, *old;

	e = xcalloc(1, sizeof *e);
	e->path = xstrdup(path);
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mode = (uint64_t)st->st_mode;
	e->mtime = ts_ns(&st->st_mtim);
	e->ctime = ts_ns(&st->st_ctim);
	memcpy(e->digest, digest, DIGEST_HEX);
	e->seen = 1;
	if ((old = hmap_put(sc->map, e->path, e)) != NULL)
		scentry_free(old);
	sc->dirty = 1;
}

void
statcache_counts(const struct statcache *sc, size_t *hits, size_t *misses)
{
	*hits = sc->hits;
	*misses = sc->misses;
}

/* Writes a temporary file and renames it over path (no fsync: see top). */
static int
statcache_replace(const char *path, const char *buf, size_t len,
    char **cause)
{
	char	*tmp;
	int	 fd, rc = -1;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600)) == -1)
		goto out;
	if (write_all(fd, buf, len) == -1) {
		close(fd);
		goto out;
	}
	if (close(fd) == 0 && rename(tmp, path) == 0)
		rc = 0;
out:
	if (rc != 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return (rc);
}

/*
 * Writes the entries this scan saw (files gone are forgotten), if anything
 * changed.  Returns 0 or -1 with *cause.
 */
int
statcache_save(struct statcache *sc, char **cause)
{
	struct scentry	*e;
	const char	*key;
	void		*val;
	size_t		 it = 0, size = 64 + 80, used;
	char		*buf, *p, *esc, sum[DIGEST_HEX];
	int		 rc;

	while (hmap_next(sc->map, &it, &key, &val)) {
		e = val;
		if (!e->seen)
			sc->dirty = 1;
		size += 3 * strlen(e->path) + DIGEST_HEX + 6 * 21 + 2;
	}
	if (!sc->dirty)
		return (0);
	statcache_stamp(sc);
	p = buf = xmalloc(size);
	p += sprintf(p, "%s%lld\n", STATCACHE_MAGIC, (long long)sc->newstamp);
	for (it = 0; hmap_next(sc->map, &it, &key, &val);) {
		if (!(e = val)->seen)
			continue;
		esc = manifest_escape(e->path);
		p += sprintf(p, "%llu %llu %llu %lld %lld %llu %s %s\n",
		    (unsigned long long)e->dev, (unsigned long long)e->ino,
		    (unsigned long long)e->size, (long long)e->mtime,
		    (long long)e->ctime, (unsigned long long)e->mode, e->digest,
		    esc);
		free(esc);
	}
	used = (size_t)(p - buf);
	digest_buf(buf, used, sum);
	used += (size_t)sprintf(p, "%s%s\n", STATCACHE_END, sum);
	rc = statcache_replace(sc->path, buf, used, cause);
	free(buf);
	if (rc == 0)
		sc->dirty = 0;
	return (rc);
}

/*
 * Returns where the cache for directory dir lives: the client's state
 * directory, one file per directory (named by a hash of its real path).
 * The caller frees it.
 */
char *
statcache_path(const char *dir)
{
	char	*real, *s, hex[DIGEST_HEX];

	if ((real = realpath(dir, NULL)) == NULL)
		real = xstrdup(dir);
	digest_buf(real, strlen(real), hex);
	free(real);
	hex[32] = '\0';
	xasprintf(&s, "%s/sync/%s.cache", path_home(), hex);
	return (s);
}
