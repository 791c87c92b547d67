/*
 * sync.c: the client's side of moving a tree.  sync_scan walks the working
 * directory (never following a symlink, honouring .gmuxignore files and
 * the defaults) and makes its manifest, hashing only files the stat cache
 * cannot vouch for.  sync_pull_apply is the way back: files a job made are
 * written into the working directory, each fetched into a temporary file
 * beside its target, checked against its digest and renamed over it, all
 * resolved beneath the directory without following symlinks.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define SYNC_IGNORE_FILE	".gmuxignore"
#define SYNC_IGNORE_MAX		(1024 * 1024)
#define SYNC_WARNINGS_MAX	20

struct sync_ctx {
	struct ignore		*ig;
	struct statcache	*sc;
	struct manifest		*m;
	struct sync_stats	*st;
	size_t			 marks[CONFINE_DEPTH + 2];
	u_int			 depth;
};

void
sync_stats_clear(struct sync_stats *st)
{
	strv_free(st->warnings);
	memset(st, 0, sizeof *st);
}

static void printflike(2, 3)
sync_warn(struct sync_stats *st, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	st->skipped++;
	if (st->nwarnings >= SYNC_WARNINGS_MAX)
		return;
	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	st->warnings = xreallocarray(st->warnings, st->nwarnings + 2,
	    sizeof *st->warnings);
	st->warnings[st->nwarnings++] = s;
	st->warnings[st->nwarnings] = NULL;
}

static int
sync_dir_enter(int dirfd, const char *path, void *arg, char **cause)
{
	struct sync_ctx	*ctx = arg;
	char		*text;
	size_t		 len;
	int		 fd;

	ctx->marks[ctx->depth++] = ignore_mark(ctx->ig);
	fd = openat(dirfd, SYNC_IGNORE_FILE, O_RDONLY|O_NOFOLLOW|O_CLOEXEC);
	if (fd == -1)
		return (0);
	if ((text = confine_read_fd(fd, SYNC_IGNORE_MAX, &len)) != NULL)
		ignore_parse(ctx->ig, path, text, len);
	free(text);
	close(fd);
	return (0);
}

static void
sync_dir_leave(const char *path, void *arg)
{
	struct sync_ctx	*ctx = arg;

	ignore_truncate(ctx->ig, ctx->marks[--ctx->depth]);
}

/* Hashes a regular file; st gets the stat that goes with the digest. */
static int
sync_hash(int dirfd, const char *name, const char *path, struct stat *st,
    char *digest, char **cause)
{
	uint64_t	 n;
	int		 fd, tries;

	for (tries = 0; tries < 3; tries++) {
		fd = openat(dirfd, name, O_RDONLY|O_NOFOLLOW|O_CLOEXEC);
		if (fd == -1 || fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
			xasprintf(cause, "%s: %s", path, fd == -1 ?
			    strerror(errno) : "changed while being read");
			if (fd != -1)
				close(fd);
			return (-1);
		}
		if (digest_fd(fd, digest, &n, cause) != 0) {
			close(fd);
			return (-1);
		}
		close(fd);
		if (n == (uint64_t)st->st_size)
			return (0);
	}
	xasprintf(cause, "%s: keeps changing while being read", path);
	return (-1);
}

static int
sync_file(struct sync_ctx *ctx, int dirfd, const char *name,
    const char *path, const struct stat *lst, char **cause)
{
	struct stat	 st = *lst;
	const char	*known;
	char		 digest[DIGEST_HEX];

	known = ctx->sc != NULL ? statcache_get(ctx->sc, path, &st) : NULL;
	if (known != NULL)
		memcpy(digest, known, DIGEST_HEX);
	else {
		if (ctx->sc != NULL)
			statcache_hashing(ctx->sc);
		if (sync_hash(dirfd, name, path, &st, digest, cause) != 0)
			return (-1);
		if (ctx->sc != NULL)
			statcache_put(ctx->sc, path, &st, digest);
		ctx->st->hashed++;
		ctx->st->hashed_bytes += (uint64_t)st.st_size;
	}
	manifest_add(ctx->m, MENTRY_FILE, path, st.st_mode,
	    (uint64_t)st.st_size, digest, NULL);
	ctx->st->files++;
	ctx->st->bytes += (uint64_t)st.st_size;
	return (0);
}

static int
sync_link(struct sync_ctx *ctx, int dirfd, const char *name, const char *path)
{
	char	 target[PATH_MAX];
	ssize_t	 n;

	if ((n = readlinkat(dirfd, name, target, sizeof target - 1)) == -1) {
		sync_warn(ctx->st, "%s: %s", path, strerror(errno));
		return (0);
	}
	target[n] = '\0';
	if (!manifest_link_ok(path, target)) {
		sync_warn(ctx->st, "%s -> %s: skipped, it points out of the "
		    "directory", path, target);
		return (0);
	}
	manifest_add(ctx->m, MENTRY_LINK, path, 0777, (uint64_t)n, NULL,
	    target);
	ctx->st->links++;
	return (0);
}

static int
sync_entry(int dirfd, const char *name, const char *path,
    const struct stat *st, void *arg, char **cause)
{
	struct sync_ctx	*ctx = arg;
	int		 isdir = S_ISDIR(st->st_mode);

	if (ignore_match(ctx->ig, path, isdir))
		return (0);
	if (isdir) {
		manifest_add(ctx->m, MENTRY_DIR, path, st->st_mode, 0, NULL,
		    NULL);
		ctx->st->dirs++;
		return (1);
	}
	if (S_ISREG(st->st_mode))
		return (sync_file(ctx, dirfd, name, path, st, cause));
	if (S_ISLNK(st->st_mode))
		return (sync_link(ctx, dirfd, name, path));
	sync_warn(ctx->st, "%s: skipped, not a file, directory or symlink",
	    path);
	return (0);
}

/*
 * Makes the manifest of the tree at root into m (sorted).  sc is the stat
 * cache to consult and update (NULL: hash everything).  Returns 0, or -1
 * with *cause.
 */
int
sync_scan(const char *root, struct statcache *sc, struct manifest *m,
    struct sync_stats *st, char **cause)
{
	static const struct walk_ops ops = {
		sync_dir_enter, sync_dir_leave, sync_entry
	};
	struct sync_ctx	 ctx;
	int		 fd, rc;

	if ((fd = open(root, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", root, strerror(errno));
		return (-1);
	}
	memset(&ctx, 0, sizeof ctx);
	ctx.ig = ignore_create();
	ignore_defaults(ctx.ig);
	ctx.sc = sc;
	ctx.m = m;
	ctx.st = st;
	manifest_init(m);
	rc = confine_walk(fd, &ops, &ctx, cause);
	ignore_free(ctx.ig);
	close(fd);
	if (rc != 0) {
		manifest_clear(m);
		return (-1);
	}
	manifest_sort(m);
	return (0);
}

/* Returns 1 if the local file at path already has e's content. */
static int
sync_pull_same(int rootfd, const struct mentry *e)
{
	struct stat	 st;
	char		 digest[DIGEST_HEX];
	uint64_t	 n;
	int		 fd, same = 0;

	if ((fd = confine_open(rootfd, e->path, O_RDONLY, 0)) == -1)
		return (0);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == e->size &&
	    digest_fd(fd, digest, &n, NULL) == 0)
		same = strcmp(digest, e->digest) == 0;
	close(fd);
	return (same);
}

/* Fetches one file into a temporary beside it, checks it, renames it in. */
static int
sync_pull_one(int rootfd, const struct mentry *e, sync_fetch_cb fetch,
    void *arg, char **cause)
{
	const char	*leaf;
	char		 tmp[64], digest[DIGEST_HEX];
	uint64_t	 n;
	int		 pfd, fd = -1, rc = -1;

	if ((pfd = confine_parent(rootfd, e->path, 1, &leaf)) == -1) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		return (-1);
	}
	snprintf(tmp, sizeof tmp, ".gmux-pull.%ld", (long)getpid());
	unlinkat(pfd, tmp, 0);
	fd = openat(pfd, tmp, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600);
	if (fd == -1) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		goto out;
	}
	if (fetch(e->digest, fd, arg, cause) != 0)
		goto out;
	if (lseek(fd, 0, SEEK_SET) != 0 ||
	    digest_fd(fd, digest, &n, cause) != 0)
		goto out;
	if (strcmp(digest, e->digest) != 0 || n != e->size) {
		xasprintf(cause, "%s: what arrived does not match its digest",
		    e->path);
		goto out;
	}
	if (fchmod(fd, (e->mode & 0777) | 0600) != 0 || fsync(fd) != 0 ||
	    renameat(pfd, tmp, pfd, leaf) != 0) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (rc != 0)
		unlinkat(pfd, tmp, 0);
	close(pfd);
	return (rc);
}

/*
 * Brings the files of m (a validated pull manifest) into root, fetching
 * only those whose local copy differs.  Returns 0 or -1 with *cause.
 */
int
sync_pull_apply(const char *root, const struct manifest *m,
    sync_fetch_cb fetch, void *arg, struct progress *pg,
    struct sync_stats *st, char **cause)
{
	const struct mentry	*e;
	size_t			 i;
	int			 rootfd, rc = 0;

	if ((rootfd = open(root, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", root, strerror(errno));
		return (-1);
	}
	for (i = 0; i < m->n && rc == 0; i++) {
		e = &m->v[i];
		if (e->type != MENTRY_FILE)
			continue;
		st->files++;
		st->bytes += e->size;
		if (sync_pull_same(rootfd, e))
			continue;
		if ((rc = sync_pull_one(rootfd, e, fetch, arg, cause)) == 0) {
			st->moved++;
			st->moved_bytes += e->size;
			if (pg != NULL)
				progress_add(pg, 1, e->size, clock_mono_ms());
		}
	}
	close(rootfd);
	return (rc);
}
