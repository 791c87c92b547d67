/*
 * test-tree.c: confinement (no write, read or removal escapes a directory
 * through a symlink), materializing a job's tree from the blob store (a
 * copy, never a hardlink; a stored tree's links to its own objects), and
 * --pull in both directions.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static void
mkfile(const char *name, const char *content, int mode)
{
	CHECK(tmp_write(name, content, strlen(content), mode) == 0);
}

static char *
slurp(const char *path)
{
	char	*cause = NULL, *s;

	s = read_file(path, 1 << 20, NULL, &cause);
	free(cause);
	return (s);
}

/* tree_pull_at under the directory dir. */
static int
pull(struct cas *c, const char *dir, char *const *globs, uint64_t limit,
    struct manifest *m, char **cause)
{
	int	 fd, rc;

	if ((fd = open(dir, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	rc = tree_pull_at(c, fd, globs, limit, m, cause);
	close(fd);
	return (rc);
}

static void
test_confine(void)
{
	char		*root = tpath("c"), *out = tpath("outside"), *p, *cause;
	const char	*leaf;
	int		 rfd, fd;

	mkdir_p(root, 0755);
	mkdir_p(out, 0755);
	xasprintf(&p, "%s/evil", root);
	CHECK(symlink(out, p) == 0);
	free(p);
	xasprintf(&p, "%s/real", root);
	mkdir(p, 0755);
	free(p);
	rfd = open(root, O_RDONLY|O_DIRECTORY);

	errno = 0;
	CHECK(confine_open(rfd, "evil/x", O_WRONLY|O_CREAT, 0644) == -1);
	CHECK(errno == ELOOP || errno == ENOTDIR || errno == EXDEV);
	CHECK(confine_open(rfd, "evil", O_RDONLY, 0) == -1);
	CHECK(confine_parent(rfd, "evil/x/y", 1, &leaf) == -1);
	fd = confine_open(rfd, "real/ok", O_WRONLY|O_CREAT, 0644);
	CHECK(fd != -1);
	close(fd);
	fd = confine_parent(rfd, "real/new/dirs/f", 1, &leaf);
	CHECK(fd != -1 && strcmp(leaf, "f") == 0);
	close(fd);
	xasprintf(&p, "%s/x", out);
	CHECK(access(p, F_OK) != 0);
	free(p);

	cause = NULL;
	CHECK(confine_path_ok("a/b", &cause));
	CHECK(!confine_path_ok("a/../b", &cause));
	free(cause);
	cause = NULL;
	CHECK(!confine_path_ok("/a", &cause));
	free(cause);
	cause = NULL;
	CHECK(!confine_path_ok("a//b", &cause));
	free(cause);
	cause = NULL;
	CHECK(!confine_path_ok("", &cause));
	free(cause);

	/* Removal does not follow the link either. */
	mkfile("outside/precious", "keep", 0644);
	CHECK(confine_remove(root) == 0);
	CHECK(access(root, F_OK) != 0);
	p = tmp_read("outside/precious", NULL);
	CHECK(p != NULL && strcmp(p, "keep") == 0);
	free(p);
	close(rfd);
	free(root);
	free(out);
}

/* Puts every file of m (read from src) into the store. */
static void
fill_store(struct cas *c, const char *src, const struct manifest *m)
{
	char	*p, *cause = NULL, d[DIGEST_HEX];
	uint64_t size;
	size_t	 i;
	int	 fd;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].type != MENTRY_FILE)
			continue;
		xasprintf(&p, "%s/%s", src, m->v[i].path);
		fd = open(p, O_RDONLY);
		CHECK(cas_ingest_fd(c, fd, d, &size, &cause) == 0);
		CHECK(strcmp(d, m->v[i].digest) == 0);
		close(fd);
		free(p);
	}
}

static void
test_materialize(void)
{
	struct manifest	 m;
	struct sync_stats st;
	struct cas	*c;
	struct stat	 sa, sb;
	char		*src = tpath("src"), *job = tpath("job"), *cause = NULL;
	char		*p, *q, buf[64], *blob;
	ssize_t		 n;

	mkdir_p(src, 0755);
	mkdir_p(T("src/a/b"), 0755);
	mkdir_p(T("src/empty"), 0750);
	mkfile("src/a/b/f.txt", "content", 0644);
	mkfile("src/run.sh", "#!/bin/sh\n", 0755);
	mkfile("src/dup", "content", 0600);
	mkfile("src/zero", "", 0644);
	CHECK(symlink("a/b/f.txt", T("src/link")) == 0);
	memset(&st, 0, sizeof st);
	CHECK(sync_scan(src, NULL, &m, &st, &cause) == 0);
	c = cas_open(T("blobs"), 1 << 20, &cause);

	/* Blobs missing: refused, nothing left pinned or made. */
	CHECK(tree_materialize(c, &m, job, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(access(job, F_OK) != 0);

	fill_store(c, src, &m);
	CHECK(cas_count(c) == 3);		/* dup shares a blob */
	CHECK(tree_materialize(c, &m, job, &cause) == 0);
	p = tmp_read("job/a/b/f.txt", NULL);
	CHECK(p != NULL && strcmp(p, "content") == 0);
	free(p);
	CHECK(stat(T("job/run.sh"), &sa) == 0 && (sa.st_mode & 0777) ==
	    0755);
	CHECK(stat(T("job/empty"), &sa) == 0 && S_ISDIR(sa.st_mode));
	CHECK(lstat(T("job/zero"), &sa) == 0 && sa.st_size == 0);
	n = readlink(T("job/link"), buf, sizeof buf - 1);
	CHECK(n == 9 && memcmp(buf, "a/b/f.txt", 9) == 0);

	/* A copy: not the store's inode, and writing it leaves the blob. */
	xasprintf(&blob, "%s/%.2s/%s", T("blobs"), manifest_find(&m,
	    "dup")->digest, manifest_find(&m, "dup")->digest);
	CHECK(stat(T("job/dup"), &sa) == 0 && stat(blob, &sb) == 0);
	CHECK(sa.st_ino != sb.st_ino && sa.st_nlink == 1 && sb.st_nlink == 1);
	mkfile("job/dup", "CHANGED", 0600);
	q = slurp(blob);
	CHECK(q != NULL && strcmp(q, "content") == 0);
	free(q);
	free(blob);

	/* The directory must be new. */
	CHECK(tree_materialize(c, &m, job, &cause) == -1);
	free(cause);
	cause = NULL;
	manifest_clear(&m);
	sync_stats_clear(&st);
	cas_close(c);
	free(src);
	free(job);
}

/*
 * Stored trees (overlays' lower layers): files are links to one object per
 * content and mode, shared by the trees (the first the store's own blob);
 * the objects no tree links to go.
 */
static void
test_materialize_stored(void)
{
	struct manifest	 m;
	struct sync_stats st;
	struct cas	*c;
	struct stat	 sa, sb, sc;
	char		*src = tpath("ssrc"), *cause = NULL, *blob;
	int		 blobfd, objfd;

	mkdir_p(src, 0755);
	mkfile("ssrc/f.txt", "same", 0644);
	mkfile("ssrc/x.sh", "same", 0755);
	memset(&st, 0, sizeof st);
	CHECK(sync_scan(src, NULL, &m, &st, &cause) == 0);
	c = cas_open(T("sblobs"), 1 << 20, &cause);
	fill_store(c, src, &m);
	mkdir_p(T("objects"), 0700);
	objfd = open(T("objects"), O_RDONLY|O_DIRECTORY);
	blobfd = cas_dup_dirfd(c);
	CHECK(tree_materialize_at(blobfd, objfd, &m, T("t1"), NULL,
	    &cause) == 0);
	CHECK(tree_materialize_at(blobfd, objfd, &m, T("t2"), NULL,
	    &cause) == 0);
	/*
	 * One inode per content and mode, in both trees and objects/: the
	 * first the store's own blob, the other mode a copy.
	 */
	xasprintf(&blob, "%s/%.2s/%s", T("sblobs"), manifest_find(&m,
	    "f.txt")->digest, manifest_find(&m, "f.txt")->digest);
	CHECK(stat(T("t1/f.txt"), &sa) == 0 && stat(T("t2/f.txt"), &sb) == 0);
	CHECK(sa.st_ino == sb.st_ino && (sa.st_mode & 0777) == 0644);
	CHECK(stat(T("t1/x.sh"), &sc) == 0 && sc.st_ino != sa.st_ino);
	CHECK((sc.st_mode & 0777) == 0755 && sc.st_nlink == 3);
	CHECK(stat(blob, &sb) == 0 && sb.st_ino == sa.st_ino &&
	    sb.st_nlink == 4);
	/* Collected: only what no tree links to; the blob stays. */
	tree_collect(T("objects"), T("sblobs"));
	CHECK(stat(T("t1/f.txt"), &sa) == 0 && sa.st_nlink == 4);
	CHECK(confine_remove(T("t1")) == 0 && confine_remove(T("t2")) == 0);
	tree_collect(T("objects"), T("sblobs"));
	CHECK(stat(blob, &sb) == 0 && sb.st_nlink == 1);
	free(blob);
	CHECK(rmdir(T("objects")) == 0);
	close(objfd);
	close(blobfd);
	manifest_clear(&m);
	sync_stats_clear(&st);
	cas_close(c);
	free(src);
}

/*
 * A manifest that bypassed validation (the parser refuses it) still cannot
 * write through its own symlink: links are made last and creates never
 * follow one.
 */
static void
test_materialize_hostile(void)
{
	struct manifest	 m;
	struct cas	*c;
	char		*cause = NULL, d[DIGEST_HEX], *out = tpath("outside2");

	mkdir_p(out, 0755);
	c = cas_open(T("blobs2"), 1 << 20, &cause);
	digest_buf("pwn", 3, d);
	CHECK(cas_put(c, d, "pwn", 3, &cause) == 0);
	manifest_init(&m);
	manifest_add(&m, MENTRY_LINK, "a", 0777, strlen(out), NULL, out);
	manifest_add(&m, MENTRY_FILE, "a/x", 0644, 3, d, NULL);
	CHECK(tree_materialize(c, &m, T("job2"), &cause) == -1);
	free(cause);
	CHECK(access(T("outside2/x"), F_OK) != 0);
	manifest_clear(&m);
	cas_close(c);
	free(out);
}

static struct cas	*fetch_cas;
static int		 fetches;

static int
fetch_blob(const char *digest, int fd, void *arg, char **cause)
{
	char	 buf[4096];
	ssize_t	 n;
	int	 src;

	fetches++;
	if ((src = cas_open_blob(fetch_cas, digest, NULL)) == -1) {
		xasprintf(cause, "no blob");
		return (-1);
	}
	while ((n = read(src, buf, sizeof buf)) > 0)
		write_all(fd, buf, (size_t)n);
	close(src);
	return (0);
}

/* A fetch that sends the wrong content. */
static int
fetch_lie(const char *digest, int fd, void *arg, char **cause)
{
	return (write_all(fd, "lies", 4) == 4 ? 0 : -1);
}

static void
test_pull(void)
{
	struct manifest	 m;
	struct sync_stats st;
	struct cas	*c;
	char		*job = tpath("pjob"), *cli = tpath("pcli");
	char		*cause = NULL;
	char		*globs[] = { (char *)"out", NULL };
	char		*globs2[] = { (char *)"*.txt", NULL };
	char		*p;

	mkdir_p(T("pjob/out/sub"), 0755);
	mkfile("pjob/out/a.txt", "A", 0644);
	mkfile("pjob/out/sub/b.bin", "BB", 0755);
	mkfile("pjob/log.txt", "L", 0644);
	CHECK(symlink("/etc/passwd", T("pjob/out/evil")) == 0);
	c = fetch_cas = cas_open(T("pblobs"), 1 << 20, &cause);

	CHECK(pull(c, job, globs, 1 << 20, &m, &cause) == 0);
	CHECK(m.n == 2 && strcmp(m.v[0].path, "out/a.txt") == 0 &&
	    strcmp(m.v[1].path, "out/sub/b.bin") == 0);
	manifest_clear(&m);
	CHECK(pull(c, job, globs2, 1 << 20, &m, &cause) == 0);
	CHECK(m.n == 2 && manifest_find(&m, "log.txt") != NULL);
	manifest_clear(&m);
	CHECK(pull(c, job, globs, 2, &m, &cause) == -2);
	free(cause);
	cause = NULL;

	/* Into the client's directory; only what differs is fetched. */
	mkdir_p(cli, 0755);
	mkdir_p(T("pcli/out"), 0755);
	mkfile("pcli/out/a.txt", "A", 0644);
	CHECK(pull(c, job, globs, 1 << 20, &m, &cause) == 0);
	memset(&st, 0, sizeof st);
	fetches = 0;
	CHECK(sync_pull_apply(cli, &m, fetch_blob, NULL, NULL, &st, &cause) ==
	    0);
	CHECK(fetches == 1 && st.moved == 1);
	p = tmp_read("pcli/out/sub/b.bin", NULL);
	CHECK(p != NULL && strcmp(p, "BB") == 0);
	free(p);
	fetches = 0;
	CHECK(sync_pull_apply(cli, &m, fetch_blob, NULL, NULL, &st, &cause) ==
	    0);
	CHECK(fetches == 0);

	/* Content that does not match: the old file stays, no temp left. */
	mkfile("pcli/out/a.txt", "old", 0644);
	CHECK(sync_pull_apply(cli, &m, fetch_lie, NULL, NULL, &st, &cause) ==
	    -1);
	free(cause);
	cause = NULL;
	p = tmp_read("pcli/out/a.txt", NULL);
	CHECK(p != NULL && strcmp(p, "old") == 0);
	free(p);
	p = tpath("pcli/out");
	CHECK(access(T("pcli/out/.gmux-pull"), F_OK) != 0);
	free(p);

	/* A symlink in the client's tree does not lead the write out. */
	CHECK(confine_remove(T("pcli/out")) == 0);
	mkdir_p(T("outside3"), 0755);
	CHECK(symlink(T("outside3"), T("pcli/out")) == 0);
	CHECK(sync_pull_apply(cli, &m, fetch_blob, NULL, NULL, &st, &cause) ==
	    -1);
	free(cause);
	CHECK(access(T("outside3/a.txt"), F_OK) != 0);
	manifest_clear(&m);
	cas_close(c);
	free(job);
	free(cli);
}

static volatile int	 swap_stop;
static char		*swap_a, *swap_b;

/* Swaps pfifo/out/f (a regular file) with pfifo/spare (a FIFO), again
 * and again, while the pulls run. */
static void *
swapper(void *arg)
{
	while (!swap_stop)
		renameat2(AT_FDCWD, swap_a, AT_FDCWD, swap_b, RENAME_EXCHANGE);
	return (NULL);
}

/*
 * A leftover process of the job swaps a listed regular file for a FIFO
 * between the walk's stat and the open: the open must not wait for a
 * writer (it would hold the daemon's loop forever), and what is pulled is
 * only ever the file that was listed.  SIGALRM fails the test if it hangs.
 */
static void
test_pull_fifo_swap(void)
{
	struct manifest	 m;
	struct cas	*c;
	pthread_t	 t;
	char		*cause = NULL, *dir = tpath("pfifo");
	char		*globs[] = { (char *)"out/", NULL };
	int		 i, ok = 1;

	mkdir_p(T("pfifo/out"), 0755);
	mkfile("pfifo/out/f", "data", 0644);
	CHECK(mkfifo(T("pfifo/spare"), 0644) == 0);
	c = cas_open(T("pfblobs"), 1 << 20, &cause);
	swap_a = tpath("pfifo/out/f");
	swap_b = tpath("pfifo/spare");
	alarm(20);
	swap_stop = 0;
	CHECK(pthread_create(&t, NULL, swapper, NULL) == 0);
	for (i = 0; i < 20000 && ok; i++) {
		if (pull(c, dir, globs, 1 << 20, &m, &cause) != 0)
			ok = 0;
		else if (m.n > 1 || (m.n == 1 && m.v[0].size != 4))
			ok = 0;
		manifest_clear(&m);
	}
	swap_stop = 1;
	pthread_join(t, NULL);
	alarm(0);
	CHECK(ok);
	free(cause);
	free(swap_a);
	free(swap_b);
	free(dir);
	cas_close(c);
}

int
main(void)
{
	if (tmpdir_init("tree") != 0)
		return (1);
	RUN(test_confine);
	RUN(test_materialize);
	RUN(test_materialize_hostile);
	RUN(test_materialize_stored);
	RUN(test_pull);
	RUN(test_pull_fifo_swap);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
