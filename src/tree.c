/*
 * tree.c: the host's side of moving a tree.  tree_materialize makes a
 * job's private copy of a manifest from the blob store, by reflink where
 * the filesystem can (FICLONE), else copy_file_range, else read and write,
 * and never by hardlink: a job writing its copy must not write the store.
 * Every create is relative to a directory fd and follows no symlink, and
 * the manifest's symlinks are made last, so none can redirect a write.
 * A stored tree (an overlay's lower layer, which no job writes) is made
 * of hard links to one inode per content and mode, shared by the trees.
 * tree_pull_at lists the files of a job's directory that match --pull
 * patterns, copying each into the store as it hashes it.
 */

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/fs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

/*
 * What making one tree needs: the store's directory (a descriptor of the
 * caller's own), a copy buffer, and a flag that asks it to stop.  Nothing
 * here touches the store's memory, so a helper thread can make a tree
 * while the daemon's loop goes on (see prepare.c).
 */
struct tree_make {
	int		 blobfd;
	int		 objfd;		/* a stored tree's objects; -1: none */
	char		*buf;
	const _Atomic int *stop;
};
#define TREE_BUF	(128 * 1024)

/* Copies size bytes from src to dst (both at offset 0). */
static int
tree_copy(struct tree_make *t, int src, int dst, uint64_t size, char **cause)
{
	uint64_t	 left = size;
	ssize_t		 n;

	if (size == 0 || ioctl(dst, FICLONE, src) == 0)
		return (0);
	while (left > 0) {
		n = copy_file_range(src, NULL, dst, NULL, left, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		left -= (uint64_t)n;
	}
	errno = 0;
	while (left > 0) {
		if ((n = read(src, t->buf, TREE_BUF)) == -1 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(dst, t->buf, (size_t)n) == -1)
			break;
		left -= (uint64_t)n;
	}
	if (left != 0) {
		xasprintf(cause, "copy: %s", errno ? strerror(errno) :
		    "the blob is shorter than its entry");
		return (-1);
	}
	return (0);
}

/* The parent directory of path, reusing the last one when it is the same. */
static int
tree_parent(int rootfd, const char *path, char **last, int *lastfd,
    const char **leaf)
{
	const char	*slash = strrchr(path, '/');
	size_t		 len = slash ? (size_t)(slash - path) : 0;

	if (*lastfd != -1 && strlen(*last) == len &&
	    strncmp(*last, path, len) == 0) {
		*leaf = slash ? slash + 1 : path;
		return (*lastfd);
	}
	if (*lastfd != -1)
		close(*lastfd);
	free(*last);
	*last = xstrndup(path, len);
	*lastfd = confine_parent(rootfd, path, 1, leaf);
	return (*lastfd);
}

static int
tree_copy_file(struct tree_make *t, int pfd, const char *leaf,
    const struct mentry *e, char **cause)
{
	int	 src, dst, rc;

	if ((src = cas_open_at(t->blobfd, e->digest)) == -1) {
		xasprintf(cause, "%s: blob %.16s is missing", e->path,
		    e->digest);
		return (-1);
	}
	dst = openat(pfd, leaf, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
	    0600);
	if (dst == -1) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		close(src);
		return (-1);
	}
	rc = tree_copy(t, src, dst, e->size, cause);
	if (rc == 0 && fchmod(dst, e->mode | 0600) != 0) {
		xasprintf(cause, "%s: %s", e->path, strerror(errno));
		rc = -1;
	}
	close(src);
	close(dst);
	return (rc);
}

/*
 * Makes the object tmp of e's content: the store's own blob where no other
 * object is (blobs never change once stored; the store keeps its name and
 * may drop it, the object stays), given e's mode; else a copy.
 */
static int
tree_object(struct tree_make *t, const char *tmp, const struct mentry *e,
    char **cause)
{
	struct stat	 st;
	char		 p[64];
	int		 fd;

	if ((fd = cas_open_at(t->blobfd, e->digest)) == -1) {
		xasprintf(cause, "%s: blob %.16s is missing", e->path,
		    e->digest);
		return (-1);
	}
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, p, t->objfd, tmp, AT_SYMLINK_FOLLOW) == 0) {
		if (fstat(fd, &st) == 0 && st.st_nlink <= 2 &&
		    (uint64_t)st.st_size == e->size &&
		    fchmod(fd, e->mode | 0600) == 0) {
			close(fd);
			return (0);
		}
		unlinkat(t->objfd, tmp, 0);	/* another mode's object */
	}
	close(fd);
	return (tree_copy_file(t, t->objfd, tmp, e, cause));
}

/*
 * A stored tree's file: a hard link to the one inode of its content and
 * mode (objects/DIGEST.MODE), made the first time it is needed, so trees
 * that differ in a few files share the rest, and the first of them shares
 * the blob store's files.  A stored tree is only ever the lower layer of
 * overlays (worktree.c), which no job can write: a job's write copies the
 * file up into its own layer first.
 */
static int
tree_link_file(struct tree_make *t, int pfd, const char *leaf,
    const struct mentry *e, char **cause)
{
	char	 name[DIGEST_HEX + 16], tmp[DIGEST_HEX + 24];

	snprintf(name, sizeof name, "%s.%o", e->digest, e->mode | 0600);
	if (linkat(t->objfd, name, pfd, leaf, 0) == 0)
		return (0);
	if (errno == ENOENT) {
		snprintf(tmp, sizeof tmp, "tmp.%s", name);
		unlinkat(t->objfd, tmp, 0);
		if (tree_object(t, tmp, e, cause) != 0)
			return (-1);
		if (renameat(t->objfd, tmp, t->objfd, name) == 0 &&
		    linkat(t->objfd, name, pfd, leaf, 0) == 0)
			return (0);
	}
	/* Too many links to it, or it went: a file of its own. */
	log_debug("%s: %s: %s", __func__, e->path, strerror(errno));
	return (tree_copy_file(t, pfd, leaf, e, cause));
}

static int
tree_file(struct tree_make *t, int pfd, const char *leaf,
    const struct mentry *e, char **cause)
{
	if (t->objfd != -1)
		return (tree_link_file(t, pfd, leaf, e, cause));
	return (tree_copy_file(t, pfd, leaf, e, cause));
}

/*
 * Whether the object name (st) is linked to by no stored tree: its only
 * other link, if any, is the store's blob of the same content.
 */
static int
tree_unused(int blobfd, const char *name, const struct stat *st)
{
	struct stat	 bs;
	char		 digest[DIGEST_HEX];
	int		 fd, alone = 0;

	if (st->st_nlink == 1 || strncmp(name, "tmp.", 4) == 0)
		return (1);
	if (st->st_nlink != 2 || strlen(name) < DIGEST_HEX)
		return (0);
	memcpy(digest, name, DIGEST_HEX - 1);
	digest[DIGEST_HEX - 1] = '\0';
	if (!digest_valid(digest) || (fd = cas_open_at(blobfd, digest)) == -1)
		return (0);
	if (fstat(fd, &bs) == 0 && bs.st_dev == st->st_dev &&
	    bs.st_ino == st->st_ino)
		alone = 1;
	close(fd);
	return (alone);
}

/*
 * Removes the objects (objects/DIGEST.MODE) no stored tree links to any
 * more, and what was left half made; the store is in blobs.  In the
 * thread that makes trees: never while one is being made.
 */
void
tree_collect(const char *objects, const char *blobs)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	u_int		 n = 0;
	int		 blobfd;

	if ((d = opendir(objects)) == NULL)
		return;
	blobfd = open(blobs, O_RDONLY|O_DIRECTORY|O_CLOEXEC);
	while ((de = readdir(d)) != NULL) {
		if (*de->d_name == '.' || fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (tree_unused(blobfd, de->d_name, &st) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	if (blobfd != -1)
		close(blobfd);
	closedir(d);
	log_debug("%s: %u removed", __func__, n);
}

/* Makes every entry of one kind: links in a second pass, after the rest. */
static int
tree_pass(struct tree_make *t, int rootfd, const struct manifest *m,
    int links, char **cause)
{
	const struct mentry	*e;
	const char		*leaf;
	char			*last = NULL;
	int			 lastfd = -1, pfd, rc = 0;
	size_t			 i;

	for (i = 0; i < m->n && rc == 0; i++) {
		e = &m->v[i];
		if ((e->type == MENTRY_LINK) != links)
			continue;
		if (t->stop != NULL && atomic_load(t->stop)) {
			xasprintf(cause, "the host is stopping");
			rc = -1;
		} else if ((pfd = tree_parent(rootfd, e->path, &last, &lastfd,
		    &leaf)) == -1) {
			xasprintf(cause, "%s: %s", e->path, strerror(errno));
			rc = -1;
		} else if (e->type == MENTRY_FILE)
			rc = tree_file(t, pfd, leaf, e, cause);
		else if ((e->type == MENTRY_DIR ? mkdirat(pfd, leaf, e->mode |
		    0700) : symlinkat(e->target, pfd, leaf)) != 0 &&
		    !(e->type == MENTRY_DIR && errno == EEXIST)) {
			xasprintf(cause, "%s: %s", e->path, strerror(errno));
			rc = -1;
		}
	}
	if (lastfd != -1)
		close(lastfd);
	free(last);
	return (rc);
}

/* Unpins the blobs of the first n entries of m. */
void
tree_unpin(struct cas *c, const struct manifest *m, size_t n)
{
	size_t	 i;

	for (i = 0; i < n && i < m->n; i++) {
		if (m->v[i].type == MENTRY_FILE)
			cas_unpin(c, m->v[i].digest);
	}
}

/*
 * Pins every blob of m against eviction (in the loop, before a tree is
 * made from them).  Returns 0, or -1 with *cause (none is left pinned).
 */
int
tree_pin(struct cas *c, const struct manifest *m, char **cause)
{
	size_t	 i;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].type == MENTRY_FILE && cas_pin(c, m->v[i].digest)
		    != 0) {
			xasprintf(cause, "%s: blob %.16s is missing",
			    m->v[i].path, m->v[i].digest);
			tree_unpin(c, m, i);
			return (-1);
		}
	}
	return (0);
}

/*
 * Makes dir (which must not exist) a copy of the validated manifest m,
 * its blobs read through blobfd (cas_dup_dirfd; the caller has pinned
 * them); a stored tree's files are links into the directory objfd (see
 * tree_link_file; -1: copies).  Safe in a helper thread: see struct
 * tree_make.  Stops early, failing, once *stop is set (stop may be NULL).
 * On failure dir may hold part of the tree (remove it with
 * confine_remove).
 */
int
tree_materialize_at(int blobfd, int objfd, const struct manifest *m,
    const char *dir, const _Atomic int *stop, char **cause)
{
	struct tree_make	 t;
	int			 rootfd, rc = -1;

	if (mkdir(dir, 0700) != 0 || (rootfd = open(dir, O_RDONLY|O_DIRECTORY|
	    O_NOFOLLOW|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	t.blobfd = blobfd;
	t.objfd = objfd;
	t.buf = xmalloc(TREE_BUF);
	t.stop = stop;
	if (tree_pass(&t, rootfd, m, 0, cause) == 0 &&
	    tree_pass(&t, rootfd, m, 1, cause) == 0)
		rc = 0;
	free(t.buf);
	close(rootfd);
	return (rc);
}

/*
 * The same, at once, from the store c: its blobs are pinned while they
 * are copied.
 */
int
tree_materialize(struct cas *c, const struct manifest *m, const char *dir,
    char **cause)
{
	int	 fd, rc;

	if (tree_pin(c, m, cause) != 0)
		return (-1);
	if ((fd = cas_dup_dirfd(c)) == -1) {
		xasprintf(cause, "the blob store: %s", strerror(errno));
		rc = -1;
	} else {
		rc = tree_materialize_at(fd, -1, m, dir, NULL, cause);
		close(fd);
	}
	tree_unpin(c, m, m->n);
	return (rc);
}

struct tree_pull_ctx {
	struct cas	*cas;
	struct ignore	*want;
	struct manifest	*m;
	uint64_t	 limit;
	uint64_t	 bytes;
	int		 over;
	int		 matched[CONFINE_DEPTH + 2];	/* a dir matched */
	u_int		 depth;
};

static int
tree_pull_enter(int dirfd, const char *path, void *arg, char **cause)
{
	struct tree_pull_ctx	*ctx = arg;
	int			 up;

	up = ctx->depth ? ctx->matched[ctx->depth - 1] : 0;
	ctx->matched[ctx->depth++] = up || (*path != '\0' &&
	    ignore_match(ctx->want, path, 1));
	return (0);
}

static void
tree_pull_leave(const char *path, void *arg)
{
	((struct tree_pull_ctx *)arg)->depth--;
}

/*
 * Opens the regular file the walk listed as st, or returns -1.  What is
 * there now may be something else: a process of the job can swap in a
 * FIFO, whose open would wait for a writer and hold the daemon's loop.  So
 * the open does not block and follows no link, and the file opened must be
 * the one listed.
 */
static int
tree_pull_open(int dirfd, const char *name, const struct stat *st)
{
	struct stat	 now;
	int		 fd;

	fd = openat(dirfd, name, O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC);
	if (fd == -1)
		return (-1);
	if (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) ||
	    now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		log_debug("%s: %s changed since it was listed", __func__, name);
		close(fd);
		return (-1);
	}
	return (fd);
}

static int
tree_pull_entry(int dirfd, const char *name, const char *path,
    const struct stat *st, void *arg, char **cause)
{
	struct tree_pull_ctx	*ctx = arg;
	char			 digest[DIGEST_HEX];
	uint64_t		 size;
	int			 fd, rc;

	if (S_ISDIR(st->st_mode))
		return (1);
	if (!S_ISREG(st->st_mode) || !(ctx->matched[ctx->depth - 1] ||
	    ignore_match(ctx->want, path, 0)))
		return (0);
	if (ctx->bytes + (uint64_t)st->st_size > ctx->limit) {
		xasprintf(cause, "the files to pull hold more than %llu bytes",
		    (unsigned long long)ctx->limit);
		ctx->over = 1;
		return (-1);
	}
	if ((fd = tree_pull_open(dirfd, name, st)) == -1)
		return (0);	/* gone, changed, or not ours to read */
	rc = cas_ingest_fd(ctx->cas, fd, digest, &size, cause);
	close(fd);
	if (rc != 0)
		return (-1);
	ctx->bytes += size;
	manifest_add(ctx->m, MENTRY_FILE, path, st->st_mode, size, digest,
	    NULL);
	return (0);
}

/*
 * Lists the regular files under the directory fd matching any of the
 * gitignore-style patterns (a matching directory brings all it holds)
 * into m, sorted, each copied into the store.  Symlinks are not followed
 * nor listed.  Returns 0, or -2 (more than limit bytes) or -1 with *cause.
 */
int
tree_pull_at(struct cas *c, int fd, char *const *globs, uint64_t limit,
    struct manifest *m, char **cause)
{
	static const struct walk_ops ops = {
		tree_pull_enter, tree_pull_leave, tree_pull_entry
	};
	struct tree_pull_ctx	 ctx;
	size_t			 i;
	int			 rc;

	memset(&ctx, 0, sizeof ctx);
	ctx.cas = c;
	ctx.want = ignore_create();
	for (i = 0; globs[i] != NULL; i++)
		ignore_parse(ctx.want, "", globs[i], strlen(globs[i]));
	ctx.m = m;
	ctx.limit = limit;
	manifest_init(m);
	rc = confine_walk(fd, &ops, &ctx, cause);
	ignore_free(ctx.want);
	if (rc != 0) {
		manifest_clear(m);
		return (ctx.over ? -2 : -1);
	}
	manifest_sort(m);
	return (0);
}
