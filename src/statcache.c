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

#include <event2/buffer.h>

#include "gmux.h"

#define STATCACHE_MAGIC	"gmux-statcache 1 "
#define STATCACHE_MAX	(512 * 1024 * 1024)
#define STATCACHE_END	"end "

/*
 * The entries loaded are in one array, their paths in the loaded text
 * (decoded in place), in the order the scan that saved them saw them: an
 * unchanged tree is walked in the same order, so each lookup is first
 * tried at a cursor (the entry after the last one found), and the hash
 * map (built only on the first miss) is for the rest.  Entries new in
 * this scan are allocated one by one.
 */
struct scentry {
	const char	*path;
	uint64_t	 dev, ino, size, mode;
	int64_t		 mtime, ctime;
	uint32_t	 seen;		/* the order this scan saw it, 0: not */
	int		 owned;		/* path and entry allocated */
	char		 digest[DIGEST_HEX];
};

struct statcache {
	char		 *path;
	char		 *text;		/* the loaded file */
	struct scentry	 *v;		/* loaded, in saved order */
	size_t		  n;
	size_t		  cursor;	/* the next lookup's first guess */
	struct scentry	**extra;	/* added by this scan */
	size_t		  nextra;
	struct hmap	 *map;		/* every entry, once a lookup missed */
	struct scentry	 *last;		/* the last one found */
	uint32_t	  seen;		/* entries seen so far */
	int64_t		  stamp;	/* of the loaded file; 0 if none */
	int64_t		  newstamp;	/* this scan's, once taken */
	int		  dirty;
	size_t		  hits;
	size_t		  misses;
};

static int64_t
ts_ns(const struct timespec *ts)
{
	return ((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec);
}

static void
statcache_empty(struct statcache *sc)
{
	size_t	 i;

	for (i = 0; i < sc->nextra; i++) {
		free((char *)sc->extra[i]->path);
		free(sc->extra[i]);
	}
	free(sc->extra);
	sc->extra = NULL;
	sc->nextra = 0;
	free(sc->v);
	sc->v = NULL;
	sc->n = sc->cursor = 0;
	free(sc->text);
	sc->text = NULL;
	hmap_free(sc->map);
	sc->map = NULL;
	sc->last = NULL;
	sc->seen = 0;
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

/*
 * Parses "DEV INO SIZE MTIME CTIME MODE DIGEST PATH" (p to end, in the
 * loaded text: the path is decoded where it is).  0 or -1.
 */
static int
statcache_line(char *p, char *end, struct scentry *e)
{
	uint64_t	 v[6];
	ssize_t		 n;
	int		 i;

	memset(e, 0, sizeof *e);
	for (i = 0; i < 6; i++) {
		if ((p = (char *)statcache_number(p, end, &v[i])) == NULL)
			return (-1);
	}
	if (end - p < DIGEST_HEX || p[DIGEST_HEX - 1] != ' ')
		return (-1);
	memcpy(e->digest, p, DIGEST_HEX - 1);
	if (!digest_valid(e->digest))
		return (-1);
	p += DIGEST_HEX;
	if ((n = manifest_unescape_to(p, p, (size_t)(end - p))) <= 0)
		return (-1);
	e->path = p;
	e->dev = v[0];
	e->ino = v[1];
	e->size = v[2];
	e->mtime = (int64_t)v[3];
	e->ctime = (int64_t)v[4];
	e->mode = v[5];
	return (0);
}

/* Checks the magic and the sum; returns where the entries start. */
static char *
statcache_head(struct statcache *sc, char *buf, size_t len)
{
	char		*p, *end, *nl;
	uint64_t	 stamp;
	char		 sum[DIGEST_HEX];
	size_t		 tail = sizeof STATCACHE_END - 1 + DIGEST_HEX;

	if (len < sizeof STATCACHE_MAGIC + tail || memcmp(buf, STATCACHE_MAGIC,
	    sizeof STATCACHE_MAGIC - 1) != 0)
		return (NULL);
	end = buf + len - tail;
	digest_buf(buf, len - tail, sum);
	if (memcmp(end, STATCACHE_END, sizeof STATCACHE_END - 1) != 0 ||
	    memcmp(end + sizeof STATCACHE_END - 1, sum, DIGEST_HEX - 1) != 0 ||
	    buf[len - 1] != '\n')
		return (NULL);
	p = buf + sizeof STATCACHE_MAGIC - 1;
	if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL || nl == p ||
	    nl - p > 19)
		return (NULL);
	for (stamp = 0; p < nl; p++) {
		if (*p < '0' || *p > '9')
			return (NULL);
		stamp = stamp * 10 + (uint64_t)(*p - '0');
	}
	sc->stamp = (int64_t)stamp;
	return (nl + 1);
}

/* Parses the text buf (taken: it is freed with sc); 0 or -1. */
static int
statcache_take(struct statcache *sc, char *buf, size_t len)
{
	char	*p, *end, *nl;
	size_t	 n = 0, size;

	sc->text = buf;
	if ((p = statcache_head(sc, buf, len)) == NULL)
		return (-1);
	size = len / 64 + 16;	/* a line is longer: grown at most once */
	sc->v = xreallocarray(NULL, size, sizeof *sc->v);
	end = buf + len - (sizeof STATCACHE_END - 1 + DIGEST_HEX);
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			return (-1);
		if (n == size) {
			size = size ? size * 2 : 1024;
			sc->v = xreallocarray(sc->v, size, sizeof *sc->v);
		}
		if (statcache_line(p, nl, &sc->v[n]) != 0)
			return (-1);
		sc->n = ++n;
	}
	return (0);
}

/*
 * Parses a cache file's text into sc (replacing what it held).  Returns 0,
 * or -1 with *cause (sc is then empty: a bad cache only costs hashing).
 */
int
statcache_parse(struct statcache *sc, const char *buf, size_t len,
    char **cause)
{
	char	*copy;

	statcache_empty(sc);
	copy = xmalloc(len + 1);
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (statcache_take(sc, copy, len) == 0)
		return (0);
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
	statcache_mkdir(path);
	if ((buf = read_file(path, STATCACHE_MAX, &len, &cause)) == NULL) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
		return (sc);
	}
	if (statcache_take(sc, buf, len) != 0) {
		log_warnx("%s: the stat cache is malformed", path);
		statcache_empty(sc);
	}
	return (sc);
}

void
statcache_free(struct statcache *sc)
{
	if (sc == NULL)
		return;
	statcache_empty(sc);
	free(sc->path);
	free(sc);
}

/* Every entry in the map: after a lookup that the cursor missed. */
static void
statcache_map(struct statcache *sc)
{
	size_t	 i;

	sc->map = hmap_create();
	for (i = 0; i < sc->n; i++)
		hmap_put(sc->map, sc->v[i].path, &sc->v[i]);	/* later wins */
	for (i = 0; i < sc->nextra; i++)
		hmap_put(sc->map, sc->extra[i]->path, sc->extra[i]);
}

/* The entry for path, or NULL: at the cursor if the order holds. */
static struct scentry *
statcache_find(struct statcache *sc, const char *path)
{
	struct scentry	*e;

	if (sc->cursor < sc->n && strcmp(sc->v[sc->cursor].path, path) == 0)
		return (sc->last = &sc->v[sc->cursor++]);
	/* statcache_put after the statcache_get that missed. */
	if (sc->last != NULL && strcmp(sc->last->path, path) == 0)
		return (sc->last);
	if (sc->map == NULL)
		statcache_map(sc);
	if ((e = hmap_get(sc->map, path)) != NULL && !e->owned) {
		sc->cursor = (size_t)(e - sc->v) + 1;
		sc->dirty = 1;		/* saved again, in this scan's order */
	}
	return (sc->last = e);
}

static void
statcache_seen(struct statcache *sc, struct scentry *e)
{
	if (e->seen == 0)
		e->seen = ++sc->seen;
}

/*
 * Returns the digest remembered for path if st still matches and the entry
 * is not racy; NULL means "hash it".  The entry is kept on the next save.
 */
const char *
statcache_get(struct statcache *sc, const char *path, const struct stat *st)
{
	struct scentry	*e;

	if ((e = statcache_find(sc, path)) == NULL)
		goto miss;
	statcache_seen(sc, e);
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
	struct scentry	*e;

	if ((e = statcache_find(sc, path)) == NULL) {
		e = xcalloc(1, sizeof *e);
		e->path = xstrdup(path);
		e->owned = 1;
		sc->extra = xreallocarray(sc->extra, sc->nextra + 1,
		    sizeof *sc->extra);
		sc->extra[sc->nextra++] = e;
		if (sc->map != NULL)
			hmap_put(sc->map, e->path, e);
		sc->last = e;
	}
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mode = (uint64_t)st->st_mode;
	e->mtime = ts_ns(&st->st_mtim);
	e->ctime = ts_ns(&st->st_ctim);
	memcpy(e->digest, digest, DIGEST_HEX);
	statcache_seen(sc, e);
	sc->dirty = 1;
}

void
statcache_counts(const struct statcache *sc, size_t *hits, size_t *misses)
{
	*hits = sc->hits;
	*misses = sc->misses;
}

/* The entries this scan saw, in the order it saw them (allocated). */
static struct scentry **
statcache_order(struct statcache *sc)
{
	struct scentry	**o;
	size_t		  i;

	o = xcalloc(sc->seen + 1, sizeof *o);
	for (i = 0; i < sc->n; i++) {
		if (sc->v[i].seen != 0)
			o[sc->v[i].seen - 1] = &sc->v[i];
		else
			sc->dirty = 1;		/* gone: forgotten */
	}
	for (i = 0; i < sc->nextra; i++)
		o[sc->extra[i]->seen - 1] = sc->extra[i];
	return (o);
}

/* Appends one entry's line to b. */
static void
statcache_format(struct evbuffer *b, const struct scentry *e)
{
	evbuffer_add_printf(b, "%llu %llu %llu %lld %lld %llu %s ",
	    (unsigned long long)e->dev, (unsigned long long)e->ino,
	    (unsigned long long)e->size, (long long)e->mtime,
	    (long long)e->ctime, (unsigned long long)e->mode, e->digest);
	manifest_escape_buf(b, e->path);
	evbuffer_add(b, "\n", 1);
}

/*
 * Writes the entries this scan saw (files gone are forgotten), in the
 * order it saw them, if anything changed.  Returns 0 or -1 with *cause.
 */
int
statcache_save(struct statcache *sc, char **cause)
{
	struct scentry	**o;
	struct evbuffer	 *b;
	size_t		  i;
	char		  sum[DIGEST_HEX];
	int		  rc;

	o = statcache_order(sc);
	if (!sc->dirty) {
		free(o);
		return (0);
	}
	statcache_stamp(sc);
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add_printf(b, "%s%lld\n", STATCACHE_MAGIC,
	    (long long)sc->newstamp);
	for (i = 0; i < sc->seen; i++)
		statcache_format(b, o[i]);
	free(o);
	digest_buf(evbuffer_pullup(b, -1), evbuffer_get_length(b), sum);
	evbuffer_add_printf(b, "%s%s\n", STATCACHE_END, sum);
	rc = write_file_replace(sc->path, evbuffer_pullup(b, -1),
	    evbuffer_get_length(b), 0600, cause);
	evbuffer_free(b);
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
