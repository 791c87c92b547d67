/*
 * test-remote.c: the client's sync and pull against the host's handlers,
 * through an in-process transport (the daemon's routes call the same
 * remote_host_* functions; the CLI gives remote_sync remote-net.c's).
 */

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static void
mkfile(const char *name, const char *content, size_t len)
{
	CHECK(tmp_write(name, content, len, 0644) == 0);
}

/* Spoils what is sent: the host must refuse it. */
static void
flip(char *buf, size_t len)
{
	if (len > 0)
		buf[0] ^= 1;
}

static int
same_file(const char *a, const char *b)
{
	char	*x, *y, *cause = NULL;
	size_t	 xl = 0, yl = 0;
	int	 same;

	x = read_file(a, 1 << 24, &xl, &cause);
	free(cause);
	cause = NULL;
	y = read_file(b, 1 << 24, &yl, &cause);
	free(cause);
	same = x != NULL && y != NULL && xl == yl && memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	return (same);
}

static void
test_sync(void)
{
	struct remote_io	 io;
	struct remote_local	 f;
	struct statcache	*sc;
	struct sync_stats	 st;
	json_t			*reply = NULL;
	char			*root = tpath("work"), *cache, *cause = NULL;
	char			 m1[DIGEST_HEX], m2[DIGEST_HEX], *big, *a, *b;
	int			 i;

	memset(&f, 0, sizeof f);
	f.cas = cas_open(T("blobs"), 64 << 20, &cause);
	f.max_upload = 64 << 20;
	remote_local_io(&f, &io);
	mkdir_p(T("work/src"), 0755);
	for (i = 0; i < 50; i++) {
		xasprintf(&a, "work/src/f%02d.py", i);
		xasprintf(&b, "print(%d)\n", i);
		mkfile(a, b, strlen(b));
		free(a);
		free(b);
	}
	big = xmalloc(600 * 1024);
	memset(big, 'x', 600 * 1024);
	mkfile("work/model.bin", big, 600 * 1024);
	usleep(50000);
	cache = statcache_path(root);

	/* First run: everything goes up, small files batched. */
	memset(&st, 0, sizeof st);
	sc = statcache_load(cache);
	CHECK(remote_sync(&io, root, sc, -1, m1, &st, &cause) == 0);
	statcache_free(sc);
	CHECK(st.files == 51 && st.moved == 51 && f.puts == 1 &&
	    f.batches == 1);
	CHECK(f.requests == 3);		/* GET 404, POST manifest, a batch */
	sync_stats_clear(&st);

	/* Unchanged: one small request, nothing read, nothing sent. */
	f.requests = f.puts = f.batches = 0;
	sc = statcache_load(cache);
	CHECK(remote_sync(&io, root, sc, -1, m2, &st, &cause) == 0);
	statcache_free(sc);
	CHECK(strcmp(m1, m2) == 0);
	CHECK(f.requests == 1 && st.hashed == 0 && st.moved == 0);
	sync_stats_clear(&st);

	/* One file changed: one hashed, one sent. */
	mkfile("work/src/f07.py", "print('seven')\n", 15);
	f.requests = 0;
	sc = statcache_load(cache);
	CHECK(remote_sync(&io, root, sc, -1, m2, &st, &cause) == 0);
	statcache_free(sc);
	CHECK(strcmp(m1, m2) != 0 && st.hashed == 1 && st.moved == 1);
	CHECK(f.requests == 3);		/* GET 404, POST, a batch of one */
	sync_stats_clear(&st);

	/* The job's copy of the tree. */
	a = tpath("job1");
	CHECK(remote_host_prepare(f.cas, m2, a, &reply, &cause) == 0);
	free(a);
	a = tpath("job1/src/f07.py");
	b = tpath("work/src/f07.py");
	CHECK(same_file(a, b));
	free(a);
	free(b);
	a = tpath("job1/model.bin");
	b = tpath("work/model.bin");
	CHECK(same_file(a, b));
	free(a);
	free(b);

	/* An unknown manifest: 412, the client syncs again. */
	a = tpath("job2");
	memset(m1, 'a', DIGEST_HEX - 1);
	CHECK(remote_host_prepare(f.cas, m1, a, &reply, &cause) == 412);
	CHECK(json_array_size(json_object_get(reply, "missing")) == 1);
	json_decref(reply);
	free(cause);
	cause = NULL;
	CHECK(remote_host_prepare(f.cas, "../x", a, &reply, &cause) == 400);
	free(cause);
	cause = NULL;
	CHECK(access(a, F_OK) != 0);
	free(a);

	free(big);
	free(cache);
	free(root);
	cas_close(f.cas);
}

static void
test_sync_refusals(void)
{
	struct remote_io	 io;
	struct remote_local	 f;
	struct sync_stats	 st;
	json_t			*reply = NULL;
	char			*root = tpath("work2"), *cause = NULL, *big;
	char			 m[DIGEST_HEX], *job;

	memset(&f, 0, sizeof f);
	f.cas = cas_open(T("blobs2"), 1 << 20, &cause);
	f.max_upload = 100 * 1024;
	remote_local_io(&f, &io);
	mkdir_p(root, 0755);
	big = xcalloc(1, 300 * 1024);
	mkfile("work2/big.bin", big, 300 * 1024);
	free(big);

	/* Over the upload limit: 413, said plainly. */
	memset(&st, 0, sizeof st);
	CHECK(remote_sync(&io, root, NULL, -1, m, &st, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "upload limit") != NULL &&
	    strstr(cause, "413") != NULL);
	free(cause);
	cause = NULL;
	sync_stats_clear(&st);

	/* Over what the host keeps at all. */
	f.max_upload = 1 << 30;
	big = xcalloc(1, 800 * 1024);
	mkfile("work2/big2.bin", big, 800 * 1024);
	free(big);
	CHECK(remote_sync(&io, root, NULL, -1, m, &st, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, ".gmuxignore") != NULL);
	free(cause);
	cause = NULL;
	sync_stats_clear(&st);
	big = tpath("work2/big2.bin");
	unlink(big);
	free(big);

	/* Content changed on the way: the host refuses it. */
	f.tamper = flip;
	CHECK(remote_sync(&io, root, NULL, -1, m, &st, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "hashes to") != NULL);
	free(cause);
	cause = NULL;
	sync_stats_clear(&st);
	job = tpath("job3");
	CHECK(remote_host_prepare(f.cas, m, job, &reply, &cause) == 412);
	json_decref(reply);
	free(cause);
	cause = NULL;
	f.tamper = NULL;
	CHECK(remote_sync(&io, root, NULL, -1, m, &st, &cause) == 0);
	CHECK(remote_host_prepare(f.cas, m, job, &reply, &cause) == 0);
	sync_stats_clear(&st);
	free(job);

	/* Bad bodies. */
	CHECK(remote_host_manifest_post(f.cas, "u", 1 << 30, "junk", 4,
	    &reply, &cause) == 400);
	free(cause);
	cause = NULL;
	CHECK(remote_host_batch(f.cas, "u", "junk", 4, &reply, &cause) ==
	    400);
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_put(f.cas, "u", "nothex", "x", 1, &cause) ==
	    400);
	free(cause);
	free(root);
	cas_close(f.cas);
}

/* What the host remembers as complete is forgotten once a blob goes. */
static void
test_memo(void)
{
	struct remote_io	 io;
	struct remote_local	 f;
	struct sync_stats	 st;
	json_t			*reply = NULL;
	char			*a = tpath("ma"), *b = tpath("mb");
	char			*cause = NULL;
	char			 ma[DIGEST_HEX], mb[DIGEST_HEX], *fill;
	int			 rc;

	memset(&f, 0, sizeof f);
	f.max_upload = 1 << 20;
	f.cas = cas_open(T("blobs4"), 48 * 1024, &cause);
	remote_local_io(&f, &io);
	mkdir_p(a, 0755);
	mkdir_p(b, 0755);
	fill = xmalloc(30 * 1024);
	memset(fill, 'a', 30 * 1024);
	mkfile("ma/a.bin", fill, 30 * 1024);
	memset(fill, 'b', 30 * 1024);
	mkfile("mb/b.bin", fill, 30 * 1024);
	free(fill);
	memset(&st, 0, sizeof st);
	CHECK(remote_sync(&io, a, NULL, -1, ma, &st, &cause) == 0);
	CHECK(remote_host_manifest_get(f.cas, "u", f.max_upload, ma, &reply,
	    &cause) == 200);
	CHECK(json_array_size(json_object_get(reply, "missing")) == 0);
	json_decref(reply);

	/* B's upload pushes A's blob out of the 48K store. */
	CHECK(remote_sync(&io, b, NULL, -1, mb, &st, &cause) == 0);
	rc = remote_host_manifest_get(f.cas, "u", f.max_upload, ma, &reply,
	    &cause);
	CHECK(rc == 404 || (rc == 200 &&
	    json_array_size(json_object_get(reply, "missing")) == 1));
	json_decref(reply);
	free(cause);
	sync_stats_clear(&st);
	cas_close(f.cas);
	free(a);
	free(b);
}

static void
test_pull(void)
{
	struct remote_io	 io;
	struct remote_local	 f;
	struct sync_stats	 st;
	char			*globs[] = { (char *)"out/", (char *)"*.csv",
				    NULL };
	char			*cause = NULL, *a, *b, *jobdir;

	memset(&f, 0, sizeof f);
	f.max_upload = 1 << 30;
	f.cas = cas_open(T("blobs3"), 1 << 20, &cause);
	f.jobdir = jobdir = tpath("pjob");
	remote_local_io(&f, &io);
	mkdir_p(T("pjob/out"), 0755);
	mkdir_p(T("pcli"), 0755);
	mkfile("pjob/out/model.pt", "weights", 7);
	mkfile("pjob/results.csv", "a,b\n", 4);
	mkfile("pjob/other.txt", "no", 2);
	memset(&st, 0, sizeof st);
	b = tpath("pcli");
	CHECK(remote_pull(&io, "j12", globs, b, -1, &st, &cause) == 0);
	CHECK(st.files == 2 && st.moved == 2);
	a = tpath("pcli/out/model.pt");
	CHECK(access(a, F_OK) == 0);
	free(a);
	a = tpath("pcli/other.txt");
	CHECK(access(a, F_OK) != 0);
	free(a);
	memset(&st, 0, sizeof st);
	CHECK(remote_pull(&io, "j12", globs, b, -1, &st, &cause) == 0);
	CHECK(st.moved == 0);
	CHECK(remote_pull(&io, "../j", globs, b, -1, &st, &cause) == -1);
	free(cause);
	free(b);
	free(jobdir);
	cas_close(f.cas);
}

/*
 * Posts, for owner, a manifest of files a, b, ... (digest, size): the host
 * then asks owner for those of them it lacks.
 */
static void
want(struct cas *c, const char *owner, const char *da, uint64_t sa,
    const char *db, uint64_t sb)
{
	json_t	*reply = NULL;
	char	*m, *cause = NULL;

	xasprintf(&m, "gmux-manifest 1\nf 644 %llu %s a\nf 644 %llu %s b\n",
	    (unsigned long long)sa, da, (unsigned long long)sb, db);
	CHECK(remote_host_manifest_post(c, owner, 1 << 30, m, strlen(m),
	    &reply, &cause) == 200);
	json_decref(reply);
	free(cause);
	free(m);
}

/* A large blob in parts, over several requests, checked at the end. */
static void
test_parts(void)
{
	struct cas	*c;
	json_t		*reply = NULL;
	char		*cause = NULL, d[DIGEST_HEX], other[DIGEST_HEX];
	char		 data[1000];

	c = cas_open(T("parts"), 4096, &cause);
	CHECK(c != NULL);
	memset(data, 'p', sizeof data);
	digest_buf(data, sizeof data, d);
	digest_buf("q", 1, other);
	/* Asked for nothing yet: nothing is taken (issue 11). */
	CHECK(remote_host_blob_part(c, "u", d, 0, 1000, data, 400, &reply,
	    &cause) == 409);
	free(cause);
	cause = NULL;
	want(c, "u", d, 1000, other, 1000);
	CHECK(remote_host_blob_part(c, "u", d, 0, 1000, data, 400, &reply,
	    &cause) == 202);
	CHECK(json_integer_value(json_object_get(reply, "next")) == 400);
	json_decref(reply);
	/* Not the part expected: where to go on from. */
	CHECK(remote_host_blob_part(c, "u", d, 800, 1000, data, 200, &reply,
	    &cause) == 409);
	CHECK(json_integer_value(json_object_get(reply, "next")) == 400);
	json_decref(reply);
	CHECK(remote_host_blob_part(c, "u", d, 400, 1000, data, 700, &reply,
	    &cause) == 400);	/* past the end */
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_part(c, "u", d, 400, 1000, data, 600, &reply,
	    &cause) == 201);
	CHECK(cas_has(c, d, NULL));
	CHECK(remote_host_blob_part(c, "u", d, 0, 1000, data, 10, &reply,
	    &cause) == 200);	/* there already: send no more */
	/* Content that is not the digest, found at the last part. */
	CHECK(remote_host_blob_part(c, "u", other, 0, 1000, data, 500, &reply,
	    &cause) == 202);
	json_decref(reply);
	CHECK(remote_host_blob_part(c, "u", other, 500, 1000, data, 500, &reply,
	    &cause) == 400);
	free(cause);
	cause = NULL;
	CHECK(!cas_has(c, other, NULL));
	CHECK(remote_host_blob_part(c, "u", other, 0, 5000, data, 10, &reply,
	    &cause) == 413);	/* more than the store keeps */
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_part(c, "u", "nothex", 0, 10, data, 10, &reply,
	    &cause) == 400);
	free(cause);
	cas_close(c);
}

/*
 * What one owner's uploads may hold: only what its own manifests lack, at
 * their sizes, and never room another owner within its share needs.
 */
static void
test_parts_owners(void)
{
	struct cas	*c;
	json_t		*reply = NULL;
	char		*cause = NULL, big[DIGEST_HEX], mine[DIGEST_HEX];
	char		 small[DIGEST_HEX], data[2000];

	c = cas_open(T("owners"), 4096, &cause);
	CHECK(c != NULL);
	memset(data, 'm', sizeof data);
	digest_buf(data, sizeof data, mine);
	digest_buf("big", 3, big);
	digest_buf("s", 1, small);
	want(c, "eve", big, 3500, mine, 1);
	/* Not at another size, not for another owner. */
	CHECK(remote_host_blob_part(c, "eve", big, 0, 4000, "b", 1, &reply,
	    &cause) == 409 && strstr(cause, "3500 bytes") != NULL);
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_part(c, "bob", big, 0, 3500, "b", 1, &reply,
	    &cause) == 409 && strstr(cause, "no manifest") != NULL);
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_put(c, "bob", mine, data, 2000, &cause) == 409);
	free(cause);
	cause = NULL;
	/* One byte holds 3500 of the 4096 ... */
	CHECK(remote_host_blob_part(c, "eve", big, 0, 3500, "b", 1, &reply,
	    &cause) == 202);
	json_decref(reply);
	/* ... until bob, within his half, needs room: eve's goes. */
	want(c, "bob", mine, 2000, small, 1);
	CHECK(remote_host_blob_part(c, "bob", mine, 0, 2000, data, 1000,
	    &reply, &cause) == 202);
	json_decref(reply);
	CHECK(remote_host_blob_part(c, "eve", big, 1, 3500, "i", 1, &reply,
	    &cause) == 409);
	CHECK(json_integer_value(json_object_get(reply, "next")) == 0);
	json_decref(reply);
	/* And eve, past her half now that bob uploads, cannot take it back. */
	CHECK(remote_host_blob_part(c, "eve", big, 0, 3500, "b", 1, &reply,
	    &cause) == 413);
	free(cause);
	cause = NULL;
	CHECK(remote_host_blob_part(c, "bob", mine, 1000, 2000, data, 1000,
	    &reply, &cause) == 201);
	CHECK(cas_has(c, mine, NULL));
	cas_close(c);
}

int
main(void)
{
	if (tmpdir_init("remote") != 0)
		return (1);
	setenv("GMUX_HOME", tmpdir, 1);
	RUN(test_parts);
	RUN(test_parts_owners);
	RUN(test_sync);
	RUN(test_sync_refusals);
	RUN(test_memo);
	RUN(test_pull);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
