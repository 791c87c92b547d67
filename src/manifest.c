/*
 * manifest.c: the list of a tree's entries that a client sends before any
 * content.  Text, one entry a line, sorted by path (bytewise), after the
 * line "gmux-manifest 1":
 *
 *	f MODE SIZE SHA256 PATH		a regular file
 *	d MODE 0 - PATH			a directory (so empty ones exist)
 *	l 777 LEN - PATH TARGET		a symlink, recorded, never followed
 *
 * MODE is octal permission bits; PATH and TARGET escape bytes below 0x21,
 * 0x7f and '%' as %XX.  The text is what gets hashed and stored, so one
 * tree has one manifest digest.  Parsing is also validation: every path
 * passes confine_path_ok, entries are strictly sorted (no duplicates), no
 * entry lies under a file or a symlink, and no symlink points out of the
 * tree, absolute or by "..".
 */

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "gmux.h"

#define MANIFEST_MAGIC	"gmux-manifest 1\n"

void
manifest_init(struct manifest *m)
{
	memset(m, 0, sizeof *m);
}

void
manifest_clear(struct manifest *m)
{
	size_t	 i;

	for (i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].target);
	}
	free(m->v);
	manifest_init(m);
}

/* Adds an entry (copying path and target); returns it. */
struct mentry *
manifest_add(struct manifest *m, char type, const char *path, u_int mode,
    uint64_t size, const char *digest, const char *target)
{
	struct mentry	*e;

	if (m->n == m->size) {
		m->size = m->size ? m->size * 2 : 64;
		m->v = xreallocarray(m->v, m->size, sizeof *m->v);
	}
	e = &m->v[m->n++];
	memset(e, 0, sizeof *e);
	e->type = type;
	e->path = xstrdup(path);
	e->mode = mode & 0777;
	e->size = size;
	if (digest != NULL)
		memcpy(e->digest, digest, DIGEST_HEX);
	if (target != NULL)
		e->target = xstrdup(target);
	if (type == MENTRY_FILE)
		m->bytes += size;
	return (e);
}

/* Makes dst (uninitialized) a copy of src; free it with manifest_clear. */
void
manifest_copy(struct manifest *dst, const struct manifest *src)
{
	const struct mentry	*e;
	size_t			 i;

	manifest_init(dst);
	for (i = 0; i < src->n; i++) {
		e = &src->v[i];
		manifest_add(dst, e->type, e->path, e->mode, e->size,
		    e->type == MENTRY_FILE ? e->digest : NULL, e->target);
	}
}

static int
manifest_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct mentry *)a)->path,
	    ((const struct mentry *)b)->path));
}

static int
manifest_cmp_ptr(const void *a, const void *b)
{
	return (strcmp((*(struct mentry *const *)a)->path,
	    (*(struct mentry *const *)b)->path));
}

/*
 * Sorts by path.  Pointers are sorted, then the entries moved once: an
 * entry is large, and a sort that moved entries would copy each of them
 * many times.
 */
void
manifest_sort(struct manifest *m)
{
	struct mentry	**p, *v;
	size_t		  i;

	if (m->n < 2)
		return;
	p = xreallocarray(NULL, m->n, sizeof *p);
	for (i = 0; i < m->n; i++)
		p[i] = &m->v[i];
	qsort(p, m->n, sizeof *p, manifest_cmp_ptr);
	v = xreallocarray(NULL, m->size, sizeof *v);
	for (i = 0; i < m->n; i++)
		v[i] = *p[i];
	free(p);
	free(m->v);
	m->v = v;
}

/* Returns the entry for path in a sorted manifest, or NULL. */
const struct mentry *
manifest_find(const struct manifest *m, const char *path)
{
	struct mentry	 key;

	key.path = (char *)path;
	if (m->n == 0)
		return (NULL);
	return (bsearch(&key, m->v, m->n, sizeof *m->v, manifest_cmp));
}

static int
manifest_plain(u_char c)
{
	return (c > 0x20 && c != 0x7f && c != '%');
}

/*
 * Writes s escaped at out (which must have room for 3 * strlen + 1) and
 * returns the end (its NUL).
 */
static char *
manifest_escape_to(char *out, const char *s)
{
	static const char	 xd[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		if (manifest_plain((u_char)*s))
			*out++ = *s;
		else {
			*out++ = '%';
			*out++ = xd[(u_char)*s >> 4];
			*out++ = xd[(u_char)*s & 15];
		}
	}
	*out = '\0';
	return (out);
}

/* Appends s escaped as in manifests to b. */
void
manifest_escape_buf(struct evbuffer *b, const char *s)
{
	struct evbuffer_iovec	 v;
	size_t			 len = strlen(s);

	if (len == 0)
		return;
	/* An escape is at most three bytes a byte; and the NUL. */
	if (evbuffer_reserve_space(b, (ev_ssize_t)(3 * len + 1), &v, 1) != 1)
		fatalx("%s: out of memory", __func__);
	v.iov_len = (size_t)(manifest_escape_to(v.iov_base, s) -
	    (char *)v.iov_base);
	evbuffer_commit_space(b, &v, 1);
}

static int
hexval(u_char c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	c = (u_char)tolower(c);
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	return (-1);
}

/*
 * Decodes len bytes of escaped text into out (which may be s itself: the
 * text never grows), NUL-terminated; refuses %00 and malformed escapes.
 * Returns the decoded length or -1.
 */
ssize_t
manifest_unescape_to(char *out, const char *s, size_t len)
{
	char	*o = out;
	size_t	 i;
	int	 h, l;

	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			if (!manifest_plain((u_char)s[i]))
				return (-1);
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= len)
			return (-1);
		if ((h = hexval((u_char)s[i + 1])) < 0 ||
		    (l = hexval((u_char)s[i + 2])) < 0 || (h == 0 && l == 0))
			return (-1);
		*o++ = (char)(h << 4 | l);
		i += 2;
	}
	*o = '\0';
	return ((ssize_t)(o - out));
}

/* The same, allocated; NULL if malformed. */
static char *
manifest_unescape(const char *s, size_t len)
{
	char	*out;

	out = xmalloc(len + 1);
	if (manifest_unescape_to(out, s, len) == -1) {
		free(out);
		return (NULL);
	}
	return (out);
}

/* Writes v in base (8 or 10) at p, as printf would; returns the end. */
static char *
manifest_number(char *p, uint64_t v, u_int base)
{
	char	 tmp[24];
	size_t	 n = 0;

	do {
		tmp[n++] = (char)('0' + v % base);
		v /= base;
	} while (v != 0);
	while (n > 0)
		*p++ = tmp[--n];
	return (p);
}

/* Returns the manifest's text (NUL-terminated, *len bytes); caller frees. */
char *
manifest_format(const struct manifest *m, size_t *len)
{
	const struct mentry	*e;
	size_t			 size = sizeof MANIFEST_MAGIC, i;
	char			*buf, *p;

	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		size += 3 * strlen(e->path) + 3 * (e->target ? strlen(e->target)
		    : 0) + DIGEST_HEX + 48;
	}
	p = buf = xmalloc(size);
	p = stpcpy(p, MANIFEST_MAGIC);
	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		*p++ = e->type;
		*p++ = ' ';
		p = manifest_number(p, e->mode & 0777, 8);
		*p++ = ' ';
		p = manifest_number(p, e->size, 10);
		*p++ = ' ';
		if (e->type == MENTRY_FILE) {
			memcpy(p, e->digest, DIGEST_HEX - 1);
			p += DIGEST_HEX - 1;
		} else
			*p++ = '-';
		*p++ = ' ';
		p = manifest_escape_to(p, e->path);
		if (e->type == MENTRY_LINK) {
			*p++ = ' ';
			p = manifest_escape_to(p, e->target);
		}
		*p++ = '\n';
	}
	*p = '\0';
	*len = (size_t)(p - buf);
	return (buf);
}

/*
 * A symlink at path may hold target only if, read lexically from path's
 * directory, target stays in the tree.  (The host never follows links
 * itself; this keeps a job from being handed one that leads out.)
 */
int
manifest_link_ok(const char *path, const char *target)
{
	const char	*p, *slash;
	size_t		 len;
	long		 depth = 0;

	if (*target == '\0' || *target == '/' || strlen(target) >= PATH_MAX)
		return (0);
	for (p = path; (slash = strchr(p, '/')) != NULL; p = slash + 1)
		depth++;
	for (p = target; *p != '\0'; p = slash + 1) {
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return (0);
		} else if (len != 0 && !(len == 1 && p[0] == '.'))
			depth++;
		if (slash == NULL)
			break;
	}
	return (1);
}

/* Reads "TYPE MODE SIZE DIGEST " at the start of a line. */
static const char *
manifest_fields(const char *p, const char *end, struct mentry *e)
{
	char		*q;
	unsigned long	 mode;
	unsigned long long size;

	if (end - p < 9 || (p[0] != 'f' && p[0] != 'd' && p[0] != 'l') ||
	    p[1] != ' ' || !isdigit((u_char)p[2]))
		return (NULL);
	e->type = p[0];
	mode = strtoul(p + 2, &q, 8);
	if (*q != ' ' || mode > 0777 || q - (p + 2) > 4)
		return (NULL);
	p = q + 1;
	if (!isdigit((u_char)*p) || (*p == '0' && p[1] != ' '))
		return (NULL);
	size = strtoull(p, &q, 10);
	if (*q != ' ' || q - p > 15)
		return (NULL);
	e->mode = (u_int)mode;
	e->size = size;
	p = q + 1;
	if (e->type == MENTRY_FILE) {
		if (end - p < DIGEST_HEX || p[DIGEST_HEX - 1] != ' ')
			return (NULL);
		memcpy(e->digest, p, DIGEST_HEX - 1);
		e->digest[DIGEST_HEX - 1] = '\0';
		if (!digest_valid(e->digest))
			return (NULL);
		return (p + DIGEST_HEX);
	}
	if (end - p < 2 || p[0] != '-' || p[1] != ' ')
		return (NULL);
	return (p + 2);
}

/* Parses one line (without its newline) into a new entry of m. */
static int
manifest_line(struct manifest *m, const char *p, const char *end,
    char **cause)
{
	struct mentry	 e, *prev;
	const char	*sp;
	char		*why = NULL;

	memset(&e, 0, sizeof e);
	if ((p = manifest_fields(p, end, &e)) == NULL)
		goto bad;
	sp = e.type == MENTRY_LINK ? memchr(p, ' ', (size_t)(end - p)) : NULL;
	if ((e.type == MENTRY_LINK) != (sp != NULL))
		goto bad;
	if ((e.path = manifest_unescape(p, (size_t)((sp ? sp : end) - p))) ==
	    NULL)
		goto bad;
	if (!confine_path_ok(e.path, &why)) {
		xasprintf(cause, "entry %zu: %s", m->n + 1, why);
		goto fail;
	}
	prev = m->n ? &m->v[m->n - 1] : NULL;
	if (prev != NULL && strcmp(prev->path, e.path) >= 0) {
		xasprintf(cause, "entry %zu: not sorted or a duplicate",
		    m->n + 1);
		goto fail;
	}
	if (e.type == MENTRY_LINK) {
		e.target = manifest_unescape(sp + 1, (size_t)(end - sp - 1));
		if (e.target == NULL)
			goto bad;
		if (e.size != strlen(e.target)) {
			xasprintf(cause, "entry %zu: symlink '%.200s': size "
			    "%llu is not its target's length, %zu", m->n + 1,
			    e.path, (unsigned long long)e.size,
			    strlen(e.target));
			goto fail;
		}
		if (!manifest_link_ok(e.path, e.target)) {
			xasprintf(cause, "entry %zu: symlink '%.200s' points "
			    "out of the tree", m->n + 1, e.path);
			goto fail;
		}
	} else if (e.type == MENTRY_DIR && e.size != 0)
		goto bad;
	manifest_add(m, e.type, e.path, e.mode, e.size, e.digest, e.target);
	free(e.path);
	free(e.target);
	return (0);
bad:
	xasprintf(cause, "entry %zu is malformed", m->n + 1);
fail:
	free(why);
	free(e.path);
	free(e.target);
	return (-1);
}

/* No entry may lie under a file or a symlink (a link would redirect it). */
static int
manifest_check_parents(const struct manifest *m, char **cause)
{
	struct hmap	*leaves = hmap_create();
	char		*path, *slash;
	size_t		 i;
	int		 found = 0;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].type != MENTRY_DIR)
			hmap_put(leaves, m->v[i].path, &m->v[i]);
	}
	for (i = 0; i < m->n && !found; i++) {
		path = m->v[i].path;
		for (slash = path; (slash = strchr(slash, '/')) != NULL;
		    slash++) {
			*slash = '\0';
			found = hmap_get(leaves, path) != NULL;
			*slash = '/';
			if (found)
				break;
		}
	}
	hmap_free(leaves);
	if (found) {
		xasprintf(cause, "'%.200s' lies under a file or symlink",
		    m->v[i - 1].path);
		return (-1);
	}
	return (0);
}

/*
 * Parses and validates a manifest (at most max entries) into m.  Returns
 * 0, or -1 with *cause naming the first bad entry; m is then empty.
 */
int
manifest_parse(const char *buf, size_t len, size_t max, struct manifest *m,
    char **cause)
{
	const char	*p = buf, *end = buf + len, *nl;

	manifest_init(m);
	if (len < sizeof MANIFEST_MAGIC - 1 ||
	    memcmp(buf, MANIFEST_MAGIC, sizeof MANIFEST_MAGIC - 1) != 0) {
		xasprintf(cause, "not a gmux manifest");
		return (-1);
	}
	p += sizeof MANIFEST_MAGIC - 1;
	while (p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL) {
			xasprintf(cause, "the last entry has no newline");
			goto fail;
		}
		if (m->n >= max) {
			xasprintf(cause, "more than %zu entries", max);
			goto fail;
		}
		if (manifest_line(m, p, nl, cause) != 0)
			goto fail;
		p = nl + 1;
	}
	if (manifest_check_parents(m, cause) != 0)
		goto fail;
	return (0);
fail:
	manifest_clear(m);
	return (-1);
}
