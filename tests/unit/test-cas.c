/*
 * test-cas.c: the blob store: verified puts, streaming and batched writes,
 * least-recently-used eviction within the limit, pins, restart.
 */

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static void
put_str(struct cas *c, const char *s, char *digest)
{
	char	*cause = NULL;

	digest_buf(s, strlen(s), digest);
	CHECK(cas_put(c, digest, s, strlen(s), &cause) == 0);
	free(cause);
}

static void
test_digest(void)
{
	char		 hex[DIGEST_HEX], long_[DIGEST_HEX + 1], c;
	const char	 bad[] = "/:`gAF ";
	u_char		 raw[5] = { 0xfb, 0xff, 0x00, 0x10, 0x7e };
	char		 b64[16];
	size_t		 i;

	digest_buf("", 0, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	digest_buf("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	CHECK(digest_valid(hex));
	/* The bytes either side of "0-9" and "a-f", and the length. */
	for (i = 0; i < sizeof bad - 1; i++) {
		c = hex[63];
		hex[63] = bad[i];
		CHECK(!digest_valid(hex));
		hex[63] = c;
	}
	CHECK(digest_valid(hex));
	CHECK(!digest_valid("abc") && !digest_valid(""));
	memcpy(long_, hex, DIGEST_HEX - 1);
	memcpy(long_ + DIGEST_HEX - 1, "0", 2);
	CHECK(!digest_valid(long_));
	base64url_encode(raw, 5, b64);
	CHECK_STR(b64, "-_8AEH4");
}

/* The raw digest, its hex form and back: one module, one set of names. */
static void
test_digest_raw(void)
{
	u_char	 md[DIGEST_LEN], back[DIGEST_LEN];
	char	 hex[DIGEST_HEX], want[DIGEST_HEX];

	digest_bytes("abc", 3, md);
	hex_encode(md, sizeof md, hex);
	digest_buf("abc", 3, want);
	CHECK_STR(hex, want);
	CHECK(digest_from_hex(hex, back) == 0);
	CHECK(memcmp(md, back, DIGEST_LEN) == 0);
	hex[0] = 'B';	/* upper case parses too */
	CHECK(digest_from_hex(hex, back) == 0 && back[0] == md[0]);
	hex[0] = 'g';
	CHECK(digest_from_hex(hex, back) == -1);
	CHECK(digest_from_hex("abc", back) == -1);
	CHECK(digest_from_hex(NULL, back) == -1);
}

static void
test_put_get(void)
{
	struct cas	*c;
	char		*dir = tpath("b1"), *cause = NULL, *path;
	char		 d[DIGEST_HEX], wrong[DIGEST_HEX], buf[32];
	uint64_t	 size;
	struct stat	 st;
	int		 fd;

	c = cas_open(dir, 1 << 20, &cause);
	CHECK(c != NULL);
	put_str(c, "hello", d);
	CHECK(cas_has(c, d, &size) && size == 5);
	xasprintf(&path, "%s/%.2s/%s", dir, d, d);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	free(path);
	fd = cas_open_blob(c, d, &size);
	CHECK(fd != -1 && read(fd, buf, sizeof buf) == 5);
	close(fd);
	CHECK(memcmp(buf, "hello", 5) == 0);

	/* Content that is not what the digest names is refused. */
	digest_buf("other", 5, wrong);
	CHECK(cas_put(c, wrong, "hello", 5, &cause) == -2);
	CHECK(cause != NULL && strstr(cause, "hashes") != NULL);
	free(cause);
	cause = NULL;
	CHECK(!cas_has(c, wrong, NULL));
	CHECK(cas_count(c) == 1 && cas_total(c) == 5);

	/* A bad digest string never names a file. */
	CHECK(cas_open_blob(c, "../../etc/passwd", NULL) == -1);
	cas_close(c);
	free(dir);
}

static void
test_writer(void)
{
	struct cas		*c;
	struct cas_writer	*w;
	char			*dir = tpath("b2"), *cause = NULL;
	char			 d[DIGEST_HEX], got[DIGEST_HEX];
	int			 fd;
	uint64_t		 size;

	c = cas_open(dir, 1 << 20, &cause);
	digest_buf("abcdef", 6, d);

	/* Streamed in pieces. */
	w = cas_writer_create(c, d, 6, &cause);
	CHECK(w != NULL);
	CHECK(cas_writer_write(w, "abc", 3, &cause) == 0);
	CHECK(cas_writer_write(w, "def", 3, &cause) == 0);
	CHECK(cas_writer_finish(w, 1, got, &cause) == 0);
	CHECK(!cas_has(c, d, NULL));		/* not before commit */
	CHECK(cas_writer_commit(w, &cause) == 0);
	CHECK(cas_has(c, d, NULL) && strcmp(got, d) == 0);

	/* Longer or shorter than announced. */
	w = cas_writer_create(c, d, 6, &cause);
	CHECK(cas_writer_write(w, "abcdefg", 7, &cause) == -2);
	free(cause);
	cause = NULL;
	cas_writer_abort(w);
	w = cas_writer_create(c, d, 6, &cause);
	CHECK(cas_writer_write(w, "abc", 3, &cause) == 0);
	CHECK(cas_writer_finish(w, 0, NULL, &cause) == -2);
	free(cause);
	cause = NULL;

	/* Larger than the whole store. */
	CHECK(cas_writer_create(c, d, 2 << 20, &cause) == NULL);
	free(cause);
	cause = NULL;

	/* Ingest computes the digest. */
	fd = open("/dev/null", O_RDONLY);
	CHECK(cas_ingest_fd(c, fd, got, &size, &cause) == 0 && size == 0);
	CHECK_STR(got, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	close(fd);
	cas_close(c);

	/* Nothing left in tmp/. */
	free(cause);
	free(dir);
}

static void
test_evict(void)
{
	struct cas	*c;
	char		*dir = tpath("b3"), *cause = NULL, big[400];
	char		 d1[DIGEST_HEX], d2[DIGEST_HEX], d3[DIGEST_HEX];
	char		 d4[DIGEST_HEX];
	int64_t		 t = 1700000000000LL;

	clock_set_test(t);
	c = cas_open(dir, 1000, &cause);
	memset(big, 'a', sizeof big);
	big[sizeof big - 1] = '\0';
	put_str(c, big, d1);			/* 399 bytes each */
	clock_set_test(t += 1000);
	big[0] = 'b';
	put_str(c, big, d2);
	clock_set_test(t += 1000);
	cas_touch(c, d1);			/* d1 is now the newer */
	clock_set_test(t += 1000);
	big[0] = 'c';
	put_str(c, big, d3);			/* over: d2 goes */
	CHECK(cas_has(c, d1, NULL) && !cas_has(c, d2, NULL) &&
	    cas_has(c, d3, NULL));
	CHECK(cas_total(c) <= 1000);

	/* Pinned blobs stay even when they are the oldest. */
	CHECK(cas_pin(c, d1) == 0);
	clock_set_test(t += 1000);
	big[0] = 'd';
	put_str(c, big, d4);
	CHECK(cas_has(c, d1, NULL) && !cas_has(c, d3, NULL));
	cas_unpin(c, d1);
	CHECK(cas_pin(c, d2) == -1);

	/* A restart keeps the blobs and their order of use. */
	cas_close(c);
	c = cas_open(dir, 1000, &cause);
	CHECK(cas_count(c) == 2 && cas_has(c, d1, NULL) &&
	    cas_has(c, d4, NULL));
	cas_close(c);
	c = cas_open(dir, 500, &cause);		/* a smaller limit */
	CHECK(cas_count(c) == 1 && cas_has(c, d4, NULL));
	cas_close(c);
	clock_set_test(-1);
	free(dir);
}

static void
test_crash_leftovers(void)
{
	struct cas	*c;
	char		*dir = tpath("b4"), *cause = NULL, *p;
	char		 d[DIGEST_HEX];
	int		 fd;

	c = cas_open(dir, 1 << 20, &cause);
	cas_close(c);
	/* An interrupted write and an empty blob left by a power loss. */
	xasprintf(&p, "%s/tmp/123.4", dir);
	fd = open(p, O_WRONLY|O_CREAT, 0600);
	close(fd);
	free(p);
	digest_buf("x", 1, d);
	xasprintf(&p, "%s/%.2s", dir, d);
	mkdir(p, 0700);
	free(p);
	xasprintf(&p, "%s/%.2s/%s", dir, d, d);
	fd = open(p, O_WRONLY|O_CREAT, 0600);
	close(fd);
	c = cas_open(dir, 1 << 20, &cause);
	CHECK(cas_count(c) == 0 && access(p, F_OK) != 0);
	free(p);
	xasprintf(&p, "%s/tmp/123.4", dir);
	CHECK(access(p, F_OK) != 0);
	free(p);
	cas_close(c);
	free(dir);
}

/* After a crash, a blob whose content no longer matches is dropped. */
static void
test_unclean(void)
{
	struct cas	*c;
	char		*dir = tpath("b5"), *cause = NULL, *p;
	char		 good[DIGEST_HEX], bad[DIGEST_HEX];
	uint64_t	 size;
	int		 fd;

	c = cas_open(dir, 1 << 20, &cause);
	put_str(c, "intact", good);
	put_str(c, "ripped", bad);
	cas_close(c);
	CHECK(access(T("b5/clean"), F_OK) == 0);

	/* A torn write under its name, and no clean marker: a power loss. */
	xasprintf(&p, "%s/%.2s/%s", dir, bad, bad);
	fd = open(p, O_WRONLY);
	CHECK(fd != -1 && write(fd, "\0\0\0", 3) == 3);
	close(fd);
	unlink(T("b5/clean"));
	c = cas_open(dir, 1 << 20, &cause);
	CHECK(access(T("b5/clean"), F_OK) != 0);	/* open: not clean */
	CHECK(cas_has(c, bad, NULL));			/* not hashed yet */
	CHECK(!cas_check(c, bad, NULL));		/* now it is: gone */
	CHECK(!cas_has(c, bad, NULL) && access(p, F_OK) != 0);
	CHECK(cas_check(c, good, &size) && size == 6);
	fd = cas_open_blob(c, good, NULL);
	CHECK(fd != -1);
	close(fd);
	cas_close(c);
	free(p);
	free(dir);
}

/*
 * Uploads in progress (a remote's partial blobs wait between requests)
 * count against the store's bound: together they never hold more than
 * its limit, whatever each one announces, and their room comes back when
 * they end.
 */
static void
test_writers_bounded(void)
{
	struct cas		*c;
	struct cas_writer	*w1, *w2, *w3;
	char			*dir = tpath("b6"), *cause = NULL, buf[600];
	char			 d1[DIGEST_HEX], d2[DIGEST_HEX];

	c = cas_open(dir, 1000, &cause);
	memset(buf, 'a', sizeof buf);
	digest_buf(buf, 600, d1);
	digest_buf(buf, 300, d2);
	w1 = cas_writer_create(c, d1, 600, &cause);
	CHECK(w1 != NULL && cas_writer_write(w1, buf, 100, &cause) == 0);
	/* 600 + 600 > 1000, though each fits alone. */
	CHECK(cas_writer_create(c, d1, 600, &cause) == NULL);
	free(cause);
	cause = NULL;
	/* A writer of unknown size counts what it has written. */
	w3 = cas_writer_create(c, NULL, CAS_SIZE_UNKNOWN, &cause);
	CHECK(w3 != NULL && cas_writer_write(w3, buf, 300, &cause) == 0);
	CHECK(cas_writer_write(w3, buf, 200, &cause) == -2);
	free(cause);
	cause = NULL;
	cas_writer_abort(w3);
	w2 = cas_writer_create(c, d2, 300, &cause);
	CHECK(w2 != NULL);
	cas_writer_abort(w2);
	cas_writer_abort(w1);
	/* Their room is back. */
	w1 = cas_writer_create(c, d1, 600, &cause);
	w2 = cas_writer_create(c, d2, 300, &cause);
	CHECK(w1 != NULL && w2 != NULL);
	CHECK(cas_writer_write(w2, buf, 300, &cause) == 0);
	CHECK(cas_writer_finish(w2, 0, NULL, &cause) == 0);
	CHECK(cas_writer_commit(w2, &cause) == 0);
	/* Stored blobs give way to an upload's room: 600 + 300 fit. */
	CHECK(cas_has(c, d2, NULL) && cas_total(c) == 300);
	cas_writer_abort(w1);
	cas_close(c);
	free(cause);
	free(dir);
}

int
main(void)
{
	if (tmpdir_init("cas") != 0)
		return (1);
	RUN(test_digest);
	RUN(test_digest_raw);
	RUN(test_put_get);
	RUN(test_writer);
	RUN(test_evict);
	RUN(test_crash_leftovers);
	RUN(test_unclean);
	RUN(test_writers_bounded);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
