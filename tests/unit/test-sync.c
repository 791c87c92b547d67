/*
 * test-sync.c: .gmuxignore matching, manifests (and the paths they
 * refuse), the stat cache with its racy rule, the client's scan, the
 * batch format and the progress line.
 */

#include <sys/stat.h>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static void
mkfile(const char *dir, const char *name, const char *content)
{
	char	*p;
	int	 fd;

	xasprintf(&p, "%s/%s", dir, name);
	fd = open(p, O_WRONLY|O_CREAT|O_TRUNC, 0644);
	CHECK(fd != -1 && write(fd, content, strlen(content)) ==
	    (ssize_t)strlen(content));
	close(fd);
	free(p);
}

static void
mkdirs(const char *dir, const char *name)
{
	char	*p;

	xasprintf(&p, "%s/%s", dir, name);
	CHECK(mkdir_p(p, 0755) == 0);
	free(p);
}

/* Matches path against rules, and checks the fast paths agree with the NFA. */
static int
ig(const char *rules, const char *path, int isdir)
{
	struct ignore	*i = ignore_create();
	int		 r, slow;

	ignore_parse(i, "", rules, strlen(rules));
	r = ignore_match(i, path, isdir);
	ignore_set_fast(0);
	slow = ignore_match(i, path, isdir);
	ignore_set_fast(1);
	CHECK(r == slow);
	ignore_free(i);
	return (r);
}

static void
test_ignore(void)
{
	struct ignore	*i;
	char		 evil[200], *hostile, *path;
	time_t		 t0;
	int		 k;

	CHECK(ig("*.pyc", "a/b/c.pyc", 0));
	CHECK(!ig("*.pyc", "a/b/c.py", 0));
	CHECK(ig("foo", "foo", 0) && ig("foo", "x/y/foo", 1));
	CHECK(ig("/foo", "foo", 0) && !ig("/foo", "x/foo", 0));
	CHECK(ig("foo/", "x/foo", 1) && !ig("foo/", "x/foo", 0));
	CHECK(ig("doc/*.txt", "doc/a.txt", 0));
	CHECK(!ig("doc/*.txt", "doc/x/a.txt", 0) && !ig("doc/*.txt",
	    "x/doc/a.txt", 0));
	CHECK(ig("**/foo", "foo", 0) && ig("**/foo", "a/b/foo", 0));
	CHECK(ig("a/**/b", "a/b", 0) && ig("a/**/b", "a/x/y/b", 0));
	CHECK(!ig("a/**/b", "a/xb", 0));
	CHECK(ig("abc/**", "abc/x/y", 0) && !ig("abc/**", "abc", 1));
	CHECK(!ig("*.log\n!keep.log\n", "d/keep.log", 0));
	CHECK(ig("*.log\n!keep.log\n", "d/other.log", 0));
	CHECK(ig("\\#x", "#x", 0) && !ig("#x", "#x", 0));
	CHECK(ig("\\!x", "!x", 0));
	CHECK(ig("x  ", "x", 0) && ig("x\\ ", "x ", 0));
	CHECK(ig("[a-c]x", "bx", 0) && !ig("[!a-c]x", "bx", 0));
	CHECK(ig("[!a]x", "zx", 0));
	CHECK(ig("?", "a", 0) && !ig("a?b", "a/b", 0));
	CHECK(!ig("a*b", "a/b", 0) && ig("a*b", "axxb", 0));
	CHECK(ig("x\r\n", "x", 0));
	CHECK(ig("a/**/b", "a/x/y/b", 0) && !ig("a/**/b", "a/x/yb", 0));
	CHECK(ig("a/**/**/b", "a/b", 0) && ig("**/b", "b", 0));
	CHECK(!ig("**/b", "xb", 0) && ig("**", "any/thing/at/all", 0));
	CHECK(ig("a**b", "axxb", 0) && !ig("a**b", "ax/b", 0));
	CHECK(!ig("[ab", "[ab", 0) && !ig("a\\", "a\\", 0));
	CHECK(ig("a[]]b", "a]b", 0) && ig("[a-]x", "-x", 0));
	/* The plain and the star-suffix rules (compared, not run). */
	CHECK(ig("/*.txt", "a.txt", 0) && !ig("/*.txt", "d/a.txt", 0));
	CHECK(!ig("d/*.txt", "d/e/a.txt", 0) && ig("*.txt", ".txt", 0));
	CHECK(!ig("*.txt", "txt", 0) && !ig("ab", "abc", 0));
	CHECK(ig("*\\*", "a*", 0) && !ig("*\\*", "ab", 0));

	/* Rules of a .gmuxignore in sub/ apply under sub/ only. */
	i = ignore_create();
	ignore_defaults(i);
	ignore_parse(i, "sub", "*.tmp\n/only\n", 12);
	CHECK(ignore_match(i, "sub/a.tmp", 0) && ignore_match(i,
	    "sub/x/a.tmp", 0));
	CHECK(!ignore_match(i, "a.tmp", 0));
	CHECK(ignore_match(i, "sub/only", 0) && !ignore_match(i,
	    "sub/x/only", 0));
	CHECK(ignore_match(i, ".git", 1) && !ignore_match(i, ".git", 0));
	CHECK(ignore_match(i, "x/__pycache__", 1));
	CHECK(ignore_match(i, "node_modules", 1));
	ignore_parse(i, "", "!node_modules/\n", 15);
	CHECK(!ignore_match(i, "node_modules", 1));
	ignore_free(i);

	/*
	 * Hostile patterns do not take exponential time.  (Chains of "**",
	 * as below, took seconds with a backtracking matcher.)
	 */
	t0 = time(NULL);
	hostile = xcalloc(1, 4096);
	path = xcalloc(1, 4096);
	for (k = 0; k < 60; k++)
		strcat(hostile, "**/*/");
	strcat(hostile, "x");
	for (k = 0; k < 300; k++)
		strcat(path, "a/");
	strcat(path, "y");
	CHECK(!ignore_wildmatch(hostile, path));
	free(hostile);
	free(path);
	memset(evil, 'a', sizeof evil - 1);
	evil[sizeof evil - 1] = '\0';
	CHECK(!ignore_wildmatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
	    evil));
	CHECK(!ignore_wildmatch("**/*a**/*a**/*a**/*a**/*a**/*a**/*a**/*b",
	    "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"));
	CHECK(time(NULL) - t0 < 2);
}

#define D1 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static int
mparse(const char *body)
{
	struct manifest	 m;
	char		*cause = NULL, *text;
	int		 rc;

	xasprintf(&text, "gmux-manifest 1\n%s", body);
	rc = manifest_parse(text, strlen(text), 100, &m, &cause);
	if (rc == 0)
		manifest_clear(&m);
	else
		CHECK(cause != NULL && strchr(cause, '\n') == NULL);
	free(cause);
	free(text);
	return (rc);
}

static void
test_manifest(void)
{
	struct manifest		 m, back;
	const struct mentry	*e;
	char			*text, *text2, *cause = NULL;
	size_t			 len, len2;

	manifest_init(&m);
	manifest_add(&m, MENTRY_FILE, "b c/na\nme%", 0100755, 3, D1, NULL);
	manifest_add(&m, MENTRY_DIR, "b c", 040755, 0, NULL, NULL);
	manifest_add(&m, MENTRY_LINK, "b c/l", 0777, 10, NULL, "na\nme%/../");
	manifest_add(&m, MENTRY_FILE, "\xc3\xa9t\xc3\xa9", 0644, 3, D1, NULL);
	manifest_add(&m, MENTRY_DIR, "empty", 0700, 0, NULL, NULL);
	manifest_add(&m, MENTRY_FILE, "z", 0, 1234567890123, D1, NULL);
	manifest_sort(&m);
	text = manifest_format(&m, &len);
	CHECK(strlen(text) == len);
	CHECK(strstr(text, "f 755 3 " D1 " b%20c/na%0Ame%25\n") != NULL);
	CHECK(strstr(text, "\nf 0 1234567890123 " D1 " z\n") != NULL);
	CHECK(strncmp(text, "gmux-manifest 1\nd 755 0 - b%20c\n", 32) == 0);
	CHECK(manifest_parse(text, len, 100, &back, &cause) == 0);
	CHECK(back.n == 6 && back.bytes == 6 + 1234567890123);
	text2 = manifest_format(&back, &len2);
	CHECK(len == len2 && memcmp(text, text2, len) == 0);
	e = manifest_find(&back, "b c/l");
	CHECK(e != NULL && e->type == MENTRY_LINK &&
	    strcmp(e->target, "na\nme%/../") == 0);
	CHECK(manifest_find(&back, "nope") == NULL);
	manifest_clear(&back);
	CHECK(manifest_parse(text, len, 4, &back, &cause) == -1);
	free(cause);
	cause = NULL;
	free(text);
	free(text2);
	manifest_clear(&m);
	manifest_clear(&back);

	CHECK(mparse("") == 0);
	CHECK(mparse("f 644 3 " D1 " a\n") == 0);
	CHECK(mparse("d 755 0 - a\nl 777 1 - a/l .\n") == 0);
	CHECK(mparse("d 755 0 - a\nl 777 4 - a/l ../x\n") == 0);
	/* Refused. */
	CHECK(mparse("f 644 3 " D1 " ../a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a/../../b\n") == -1);
	CHECK(mparse("f 644 3 " D1 " /etc/passwd\n") == -1);
	CHECK(mparse("f 644 3 " D1 " %2Fetc\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a//b\n") == -1);
	CHECK(mparse("f 644 3 " D1 " ./a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a/\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a%00b\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a%2\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a b\n") == -1);
	CHECK(mparse("f 644 3 " D1 " b\nf 644 3 " D1 " a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a\nf 644 3 " D1 " a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a\nf 644 3 " D1 " a/b\n") == -1);
	CHECK(mparse("l 777 4 - a /etc\nf 644 3 " D1 " a/b\n") == -1);
	CHECK(mparse("l 777 3 - a ..\n") == -1);
	CHECK(mparse("d 755 0 - a\nl 777 5 - a/l ../..\n") == -1);
	CHECK(mparse("l 777 4 - l /etc\n") == -1);
	CHECK(mparse("l 777 9 - l x/../../\n") == -1);
	CHECK(mparse("f 644 3 ABC a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a") == -1);
	CHECK(mparse("d 755 5 - a\n") == -1);
	CHECK(mparse("f 1644 3 " D1 " a\n") == -1);
	CHECK(mparse("f 644 03 " D1 " a\n") == -1);
	CHECK(mparse("x 644 3 " D1 " a\n") == -1);
	CHECK(mparse("f 644 3 " D1 " a\n\n") == -1);
	CHECK(manifest_parse("gmux-manifest 2\n", 16, 10, &m, &cause) == -1);
	free(cause);

	CHECK(manifest_link_ok("a/b/l", "../../x"));
	CHECK(!manifest_link_ok("a/b/l", "../../../x"));
	CHECK(!manifest_link_ok("l", "x/../.."));
	CHECK(manifest_link_ok("l", "x/./y/.."));
	CHECK(!manifest_link_ok("l", ""));
}

/* Sets a file's times an hour back, so it is not racy. */
static void
age(const char *dir, const char *name)
{
	struct timespec	 ts[2];
	char		*p;

	xasprintf(&p, "%s/%s", dir, name);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 3600;
	ts[1] = ts[0];
	CHECK(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0);
	free(p);
}

static void
test_statcache(void)
{
	struct statcache	*sc;
	struct stat		 st;
	struct timespec		 ts[2];
	char			*dir, *cache, *f, *cause = NULL, *text;
	char			 sum[DIGEST_HEX];
	const char		*body;
	size_t			 hits, misses;

	xasprintf(&dir, "%s/sc", tmpdir);
	xasprintf(&cache, "%s/state/x.cache", tmpdir);
	xasprintf(&f, "%s/f", dir);
	mkdirs(tmpdir, "sc");
	mkfile(dir, "f", "abc");
	age(dir, "f");
	usleep(50000);	/* the ctime just set is older than the stamp */
	CHECK(stat(f, &st) == 0);

	sc = statcache_load(cache);
	CHECK(statcache_get(sc, "f", &st) == NULL);
	statcache_hashing(sc);
	statcache_put(sc, "f", &st, D1);
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	CHECK(stat(cache, &st) == 0 && (st.st_mode & 0777) == 0600);

	CHECK(stat(f, &st) == 0);
	sc = statcache_load(cache);
	CHECK(statcache_get(sc, "f", &st) != NULL);
	CHECK_STR(statcache_get(sc, "f", &st), D1);
	st.st_size++;
	CHECK(statcache_get(sc, "f", &st) == NULL);
	statcache_counts(sc, &hits, &misses);
	CHECK(hits == 2 && misses == 1);
	statcache_free(sc);

	/* Changed as late as the stamp: racy, so hashed again. */
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec += 3600;
	ts[1] = ts[0];
	utimensat(AT_FDCWD, f, ts, 0);
	CHECK(stat(f, &st) == 0);
	sc = statcache_load(cache);
	statcache_hashing(sc);
	statcache_put(sc, "f", &st, D1);
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	sc = statcache_load(cache);
	CHECK(statcache_get(sc, "f", &st) == NULL);

	/* A broken cache is an empty one. */
	CHECK(statcache_parse(sc, "gmux-statcache 1 5\n1 2 3\n", 25, &cause)
	    == -1);
	free(cause);
	cause = NULL;
	CHECK(statcache_get(sc, "f", &st) == NULL);
	body = "gmux-statcache 1 5\n1 2 3 4 5 6 " D1 " a%20b\n";
	digest_buf(body, strlen(body), sum);
	xasprintf(&text, "%send %s\n", body, sum);
	CHECK(statcache_parse(sc, text, strlen(text), &cause) == 0);
	text[20] = '7';		/* torn or tampered: the sum no longer holds */
	CHECK(statcache_parse(sc, text, strlen(text), &cause) == -1);
	free(cause);
	cause = NULL;
	free(text);
	statcache_free(sc);
	free(dir);
	free(cache);
	free(f);
}

/* The paths of a cache file, in the order they are written. */
static char *
cache_order(const char *cache)
{
	char	*text, *p, *nl, *out = xstrdup(""), *t, *cause = NULL;
	size_t	 len;

	if ((text = read_file(cache, 1 << 20, &len, &cause)) == NULL) {
		free(cause);
		return (out);
	}
	for (p = strchr(text, '\n'); p != NULL && (nl = strchr(p + 1, '\n'))
	    != NULL; p = nl) {
		*nl = '\0';
		if (strncmp(p + 1, "end ", 4) != 0 &&
		    strrchr(p + 1, ' ') != NULL) {
			xasprintf(&t, "%s%s,", out, strrchr(p + 1, ' ') + 1);
			free(out);
			out = t;
		}
	}
	free(text);
	return (out);
}

/*
 * Looks up n paths (each must hit) in the cache and saves it: its paths
 * must then be want.  Returns 1 if the file was written again.
 */
static int
rescan(const char *cache, const char **paths, int n, const struct stat *st,
    const char *want)
{
	struct statcache	*sc;
	struct stat		 before, after;
	char			*cause = NULL, *order;
	int			 i;

	CHECK(stat(cache, &before) == 0);
	sc = statcache_load(cache);
	for (i = 0; i < n; i++)
		CHECK_STR(statcache_get(sc, paths[i], st), D1);
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	order = cache_order(cache);
	CHECK_STR(order, want);
	free(order);
	CHECK(stat(cache, &after) == 0);
	return (before.st_ino != after.st_ino);
}

/*
 * The cache is written in the order the scan met its entries, and looked
 * up at a cursor in that order: entries met in another order, added or
 * gone are still found, and the next save follows the new order.
 */
static void
test_statcache_order(void)
{
	struct statcache	*sc;
	struct stat		 st;
	char			*dir, *cache, *f, *cause = NULL, *order;
	const char		*names[] = { "a", "b", "c" }, *again[] = {
				    "c", "x", "a" };
	size_t			 hits, misses;
	int			 i;

	xasprintf(&dir, "%s/sco", tmpdir);
	xasprintf(&cache, "%s/state/o.cache", tmpdir);
	mkdirs(tmpdir, "sco");
	for (i = 0; i < 3; i++)
		mkfile(dir, names[i], names[i]);
	mkfile(dir, "x", "x");
	xasprintf(&f, "%s/a", dir);
	CHECK(stat(f, &st) == 0);
	usleep(50000);
	sc = statcache_load(cache);
	for (i = 0; i < 3; i++) {
		CHECK(statcache_get(sc, names[i], &st) == NULL);
		statcache_hashing(sc);
		statcache_put(sc, names[i], &st, D1);
	}
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	order = cache_order(cache);
	CHECK_STR(order, "a,b,c,");
	free(order);

	/* Met again as c, x (new), a; b is gone. */
	sc = statcache_load(cache);
	CHECK_STR(statcache_get(sc, "c", &st), D1);
	CHECK(statcache_get(sc, "x", &st) == NULL);
	statcache_hashing(sc);
	statcache_put(sc, "x", &st, D1);
	CHECK_STR(statcache_get(sc, "a", &st), D1);
	statcache_counts(sc, &hits, &misses);
	CHECK(hits == 2 && misses == 1);
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	order = cache_order(cache);
	CHECK_STR(order, "c,x,a,");
	free(order);

	/* The same order again: every lookup a hit, nothing written. */
	CHECK(!rescan(cache, again, 3, &st, "c,x,a,"));
	/* The last one gone, the rest met in order: it is forgotten. */
	CHECK(rescan(cache, again, 2, &st, "c,x,"));
	free(f);
	free(dir);
	free(cache);
}

static void
make_tree(const char *root)
{
	char	*p, *q;

	mkdirs(root, "src/pkg/__pycache__");
	mkdirs(root, ".git/objects");
	mkdirs(root, "empty");
	mkdirs(root, "data/big");
	mkdirs(root, "sub");
	mkfile(root, "README", "hello\n");
	mkfile(root, "src/main.py", "print(1)\n");
	mkfile(root, "src/pkg/mod.py", "x = 2\n");
	mkfile(root, "src/pkg/mod.pyc", "junk");
	mkfile(root, "src/pkg/__pycache__/mod.cpython.pyc", "junk");
	mkfile(root, ".git/HEAD", "ref\n");
	mkfile(root, "data/big/huge.bin", "pretend this is big");
	mkfile(root, "data/keep.bin", "keep");
	mkfile(root, ".gmuxignore", "# data is big\ndata/big/\n*.log\n");
	mkfile(root, "run.log", "log");
	mkfile(root, "sub/.gmuxignore", "/local.txt\n!important.log\n");
	mkfile(root, "sub/local.txt", "x");
	mkfile(root, "sub/important.log", "y");
	mkfile(root, "sub/deeper.txt", "z");
	xasprintf(&p, "%s/src/link", root);
	CHECK(symlink("main.py", p) == 0);
	free(p);
	xasprintf(&p, "%s/escape", root);
	CHECK(symlink("/etc/passwd", p) == 0);
	free(p);
	xasprintf(&p, "%s/fifo", root);
	CHECK(mkfifo(p, 0600) == 0);
	free(p);
	xasprintf(&q, "%s/src/main.py", root);
	chmod(q, 0755);
	free(q);
}

static void
test_scan(void)
{
	struct statcache	*sc;
	struct manifest		 m;
	struct sync_stats	 st;
	const struct mentry	*e;
	char			*root, *cache, *cause = NULL, *joined;

	xasprintf(&root, "%s/tree", tmpdir);
	xasprintf(&cache, "%s/state/tree.cache", tmpdir);
	mkdirs(tmpdir, "tree");
	make_tree(root);
	usleep(50000);

	memset(&st, 0, sizeof st);
	sc = statcache_load(cache);
	CHECK(sync_scan(root, sc, &m, &st, &cause) == 0);
	CHECK(statcache_save(sc, &cause) == 0);
	statcache_free(sc);
	CHECK(manifest_find(&m, "README") != NULL);
	CHECK(manifest_find(&m, "empty") != NULL);
	CHECK(manifest_find(&m, "src/pkg/mod.py") != NULL);
	CHECK(manifest_find(&m, "src/pkg/mod.pyc") == NULL);
	CHECK(manifest_find(&m, "src/pkg/__pycache__") == NULL);
	CHECK(manifest_find(&m, ".git") == NULL);
	CHECK(manifest_find(&m, "data/big") == NULL);
	CHECK(manifest_find(&m, "data/keep.bin") != NULL);
	CHECK(manifest_find(&m, "run.log") == NULL);
	CHECK(manifest_find(&m, "sub/local.txt") == NULL);
	CHECK(manifest_find(&m, "sub/important.log") != NULL);
	CHECK(manifest_find(&m, "sub/deeper.txt") != NULL);
	CHECK(manifest_find(&m, ".gmuxignore") != NULL);
	CHECK(manifest_find(&m, "escape") == NULL);
	CHECK(manifest_find(&m, "fifo") == NULL);
	e = manifest_find(&m, "src/link");
	CHECK(e != NULL && e->type == MENTRY_LINK &&
	    strcmp(e->target, "main.py") == 0);
	e = manifest_find(&m, "src/main.py");
	CHECK(e != NULL && e->mode == 0755 && e->size == 9);
	CHECK(st.skipped == 2 && st.nwarnings == 2);
	joined = strv_join(st.warnings, "|");
	CHECK(strstr(joined, "escape -> /etc/passwd: skipped") != NULL);
	CHECK(strstr(joined, "fifo: skipped") != NULL);
	free(joined);
	CHECK(st.hashed == st.files && st.files == 8);
	manifest_clear(&m);
	sync_stats_clear(&st);

	/* Unchanged: nothing is read again. */
	sc = statcache_load(cache);
	CHECK(sync_scan(root, sc, &m, &st, &cause) == 0);
	CHECK(st.hashed == 0 && st.files == 8);
	statcache_free(sc);
	manifest_clear(&m);
	sync_stats_clear(&st);

	/* One file changed: only it is read. */
	mkfile(root, "src/pkg/mod.py", "x = 3\n");
	sc = statcache_load(cache);
	CHECK(sync_scan(root, sc, &m, &st, &cause) == 0);
	CHECK(st.hashed == 1);
	statcache_free(sc);
	manifest_clear(&m);
	sync_stats_clear(&st);

	CHECK(sync_scan("/nonexistent/x", NULL, &m, &st, &cause) == -1);
	free(cause);
	free(root);
	free(cache);
}

/* The manifest text of root: with the cache at cache (or none), and with
 * the ignore rules' fast paths on or off. */
static char *
scan_text(const char *root, const char *cache, int fast, size_t *hashed)
{
	struct statcache	*sc = NULL;
	struct manifest		 m;
	struct sync_stats	 st;
	char			*cause = NULL, *text;
	size_t			 len;

	memset(&st, 0, sizeof st);
	if (cache != NULL)
		sc = statcache_load(cache);
	ignore_set_fast(fast);
	CHECK(sync_scan(root, sc, &m, &st, &cause) == 0);
	ignore_set_fast(1);
	if (sc != NULL) {
		CHECK(statcache_save(sc, &cause) == 0);
		statcache_free(sc);
	}
	text = manifest_format(&m, &len);
	*hashed = st.hashed;
	manifest_clear(&m);
	sync_stats_clear(&st);
	return (text);
}

/*
 * Scans root twice through the cache: both make the manifest text slow
 * (freed here), the first hashes first files (SIZE_MAX: any), the second
 * none.
 */
static void
same_twice(const char *root, const char *cache, char *slow, size_t first)
{
	char	*fast;
	size_t	 hashed;
	int	 i;

	for (i = 0; i < 2; i++) {
		fast = scan_text(root, cache, 1, &hashed);
		CHECK_STR(fast, slow);
		CHECK(i == 0 ? first == SIZE_MAX || hashed == first :
		    hashed == 0);
		free(fast);
	}
	free(slow);
}

/*
 * A scan through the stat cache (cold, warm, and warm with its order
 * broken by files added, gone and changed) makes the same manifest as one
 * that hashes everything with every ignore rule run through the NFA.
 */
static void
test_scan_same(void)
{
	char		*root, *cache, *slow, *p;
	const char	*names[] = { "b.c", "a.o", "x.tmp", "abc", "zz",
			    "gen/k.o", "gen/k.c" };
	size_t		 i, hashed;
	int		 d;

	xasprintf(&root, "%s/same", tmpdir);
	xasprintf(&cache, "%s/state/same.cache", tmpdir);
	mkdirs(tmpdir, "same");
	make_tree(root);
	mkfile(root, ".gmuxignore", "*.log\n*.tmp\nbuild\na?c\n**/gen/*.o\n"
	    "data/big/\n!keep.log\n");
	for (d = 0; d < 12; d++) {
		xasprintf(&p, "d%02d/gen", d);
		mkdirs(root, p);
		free(p);
		for (i = 0; i < nitems(names); i++) {
			xasprintf(&p, "d%02d/%s", d, names[i]);
			mkfile(root, p, p);
			free(p);
		}
	}
	mkdirs(root, "build");
	mkfile(root, "build/out", "o");
	mkfile(root, "keep.log", "k");
	usleep(50000);

	slow = scan_text(root, NULL, 0, &hashed);
	CHECK(strstr(slow, " keep.log\n") != NULL);
	CHECK(strstr(slow, "d03/b.c\n") != NULL);
	CHECK(strstr(slow, "x.tmp") == NULL && strstr(slow, "/abc\n") == NULL);
	CHECK(strstr(slow, "gen/k.o") == NULL && strstr(slow, "build") ==
	    NULL);
	same_twice(root, cache, slow, SIZE_MAX);

	/* Added, gone and changed: the order breaks, the result does not. */
	mkfile(root, "d05/new.c", "new");
	mkfile(root, "d00/zz", "changed");
	xasprintf(&p, "%s/d07/b.c", root);
	CHECK(unlink(p) == 0);
	free(p);
	usleep(50000);
	slow = scan_text(root, NULL, 0, &hashed);
	same_twice(root, cache, slow, 2);
	free(root);
	free(cache);
}

struct got {
	char	 digests[4][DIGEST_HEX];
	size_t	 lens[4];
	int	 n;
};

static int
batch_got(const char *digest, const void *data, size_t len, void *arg,
    char **cause)
{
	struct got	*g = arg;

	if (g->n == 4)
		return (-1);
	memcpy(g->digests[g->n], digest, DIGEST_HEX);
	g->lens[g->n++] = len;
	return (0);
}

static int
bparse(const char *body, size_t len)
{
	struct got	 g;
	char		*cause = NULL;
	int		 rc;

	memset(&g, 0, sizeof g);
	rc = batch_parse(body, len, 100, batch_got, &g, &cause);
	free(cause);
	return (rc == 0 ? g.n : -1);
}

/* A pipe that holds s and is closed behind it; the fd is closed at exit. */
static int
fd_of(const char *s)
{
	int	 p[2];

	CHECK(pipe(p) == 0);
	CHECK(write(p[1], s, strlen(s)) == (ssize_t)strlen(s));
	close(p[1]);
	return (p[0]);
}

static void
test_batch(void)
{
	struct batch	 b;
	struct got	 g;
	const char	*p;
	char		*cause = NULL;
	size_t		 len;

	batch_init(&b);
	CHECK(batch_add_fd(&b, D1, fd_of("abc"), 3) == 0);
	CHECK(batch_add_fd(&b, D1, fd_of(""), 0) == 0);
	CHECK(batch_add_fd(&b, D1, fd_of("\n\n"), 2) == 0);
	memset(&g, 0, sizeof g);
	p = batch_data(&b, &len);
	CHECK(len == batch_len(&b) && b.n == 3);
	CHECK(batch_parse(p, len, 100, batch_got, &g, &cause) == 0);
	CHECK(g.n == 3 && g.lens[0] == 3 && g.lens[1] == 0 && g.lens[2] == 2);
	CHECK(strcmp(g.digests[0], D1) == 0);
	CHECK(bparse(p, len - 1) == -1);		/* cut short */
	CHECK(batch_parse(p, len, 2, batch_got, &g, &cause) == -1);
	free(cause);
	/* A file shorter than it was scanned: the record is refused. */
	CHECK(batch_add_fd(&b, D1, fd_of("ab"), 3) == -1);
	batch_clear(&b);

	CHECK(bparse("gmux-batch 1\n", 13) == 0);
	CHECK(bparse("gmux-batch 2\n", 13) == -1);
	CHECK(bparse("gmux-batch 1\n" D1 " 03\nabc", 13 + 64 + 4 + 3) == -1);
	CHECK(bparse("gmux-batch 1\n" D1 " 3 \nabc", 13 + 64 + 4 + 3) == -1);
	CHECK(bparse("gmux-batch 1\n" D1 "3\nabc", 13 + 64 + 2 + 3) == -1);
	CHECK(bparse("gmux-batch 1\n" D1 " \nabc", 13 + 64 + 2 + 3) == -1);
	CHECK(bparse("gmux-batch 1\nXX", 15) == -1);
	CHECK(bparse("gmux-batch 1\n" D1 " 99999999999999999999\n",
	    13 + 64 + 22) == -1);
}

static void
test_progress(void)
{
	struct progress	 pg;
	char		*line, buf[256];
	int		 p[2];
	ssize_t		 n;

	CHECK(pipe(p) == 0);
	set_nonblock(p[0]);
	progress_start(&pg, p[1], "upload", 10, 20 << 20, 1000);
	progress_add(&pg, 2, 1 << 20, 1500);
	CHECK(read(p[0], buf, sizeof buf) == -1);	/* under a second */
	progress_add(&pg, 3, 4 << 20, 2000);
	n = read(p[0], buf, sizeof buf - 1);
	CHECK(n > 0);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "upload 5/10 files, 5M/20M, 5M/s") != NULL);
	progress_add(&pg, 1, 0, 2050);			/* too soon to redraw */
	CHECK(read(p[0], buf, sizeof buf) == -1);
	progress_end(&pg, 2100);
	n = read(p[0], buf, sizeof buf - 1);
	CHECK(n == 4 && memcmp(buf, "\r\033[K", 4) == 0);
	line = progress_line(&pg, 3000);
	CHECK_STR(line, "gmux: upload 6/10 files, 5M/20M, 2.5M/s");
	free(line);
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	if (tmpdir_init("sync") != 0)
		return (1);
	RUN(test_ignore);
	RUN(test_manifest);
	RUN(test_statcache);
	RUN(test_statcache_order);
	RUN(test_scan);
	RUN(test_scan_same);
	RUN(test_batch);
	RUN(test_progress);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
