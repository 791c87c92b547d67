/* test-util.c: sizes, shares, durations, frames, fake card specs, requests. */

#include "gmux.h"
#include "unit.h"

static void
test_parse_size(void)
{
	uint64_t	 v;
	char		*cause = NULL;

	CHECK(parse_size("20G", &v, &cause) == 0 && v == 20ULL << 30);
	CHECK(parse_size("20GiB", &v, &cause) == 0 && v == 20ULL << 30);
	CHECK(parse_size("512M", &v, &cause) == 0 && v == 512ULL << 20);
	CHECK(parse_size("1.5G", &v, &cause) == 0 && v == 3ULL << 29);
	CHECK(parse_size("4096", &v, &cause) == 0 && v == 4096);
	CHECK(parse_size("1t", &v, &cause) == 0 && v == 1ULL << 40);
	CHECK(parse_size("", &v, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_size("G", &v, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_size("20X", &v, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_size("99999999999999999999", &v, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_size("17179869184T", &v, &cause) == -1);
	free(cause);
}

static void
test_parse_share(void)
{
	u_int	 s;
	char	*cause = NULL;

	CHECK(parse_share("0.25", &s, &cause) == 0 && s == 25);
	CHECK(parse_share("1", &s, &cause) == 0 && s == 100);
	CHECK(parse_share("0.5", &s, &cause) == 0 && s == 50);
	CHECK(parse_share(".75", &s, &cause) == 0 && s == 75);
	CHECK(parse_share("0", &s, &cause) == 0 && s == 0);
	CHECK(parse_share("0.250", &s, &cause) == 0 && s == 25);
	CHECK(parse_share("1.00", &s, &cause) == 0 && s == 100);
	CHECK(parse_share("0.255", &s, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_share("1.01", &s, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_share("2", &s, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_share("-0.5", &s, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_share("half", &s, &cause) == -1);
	free(cause);
}

static void
test_parse_duration(void)
{
	int64_t	 ms;
	char	*cause = NULL;

	CHECK(parse_duration("10s", &ms, &cause) == 0 && ms == 10000);
	CHECK(parse_duration("10", &ms, &cause) == 0 && ms == 10000);
	CHECK(parse_duration("500ms", &ms, &cause) == 0 && ms == 500);
	CHECK(parse_duration("2m", &ms, &cause) == 0 && ms == 120000);
	CHECK(parse_duration("1.5s", &ms, &cause) == 0 && ms == 1500);
	CHECK(parse_duration("1h", &ms, &cause) == 0 && ms == 3600000);
	CHECK(parse_duration("x", &ms, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_duration("5y", &ms, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(parse_duration("-1s", &ms, &cause) == -1);
	free(cause);
}

static void
test_format(void)
{
	char	*s;

	s = format_size(20ULL << 30);
	CHECK_STR(s, "20G");
	free(s);
	s = format_size(3ULL << 29);
	CHECK_STR(s, "1.5G");
	free(s);
	s = format_size(100);
	CHECK_STR(s, "100B");
	free(s);
	s = format_share(25);
	CHECK_STR(s, "0.25");
	free(s);
	s = format_share(50);
	CHECK_STR(s, "0.5");
	free(s);
	s = format_share(100);
	CHECK_STR(s, "1");
	free(s);
	s = format_share(7);
	CHECK_STR(s, "0.07");
	free(s);
	s = format_duration(90 * 1000);
	CHECK_STR(s, "90s");
	free(s);
	s = format_duration(1500);
	CHECK_STR(s, "1500ms");
	free(s);
	s = format_duration(2 * 3600 * 1000);
	CHECK_STR(s, "2h");
	free(s);
	s = format_duration(0);
	CHECK_STR(s, "0ms");
	free(s);
}

static void
test_frames(void)
{
	u_char		 buf[64];
	struct frame	 f;
	char		*cause = NULL;
	size_t		 n;

	n = frame_header(buf, FRAME_STDERR, 3);
	memcpy(buf + n, "abc", 3);
	CHECK(frame_parse(buf, 4, &f, &cause) == 0);
	CHECK(frame_parse(buf, n + 2, &f, &cause) == 0);
	CHECK(frame_parse(buf, n + 3, &f, &cause) == (ssize_t)n + 3);
	CHECK(f.type == FRAME_STDERR && f.len == 3 &&
	    memcmp(f.data, "abc", 3) == 0);
	frame_header(buf, 9, 0);
	CHECK(frame_parse(buf, 5, &f, &cause) == -1);
	free(cause);
	cause = NULL;
	frame_header(buf, FRAME_STDOUT, FRAME_MAX + 1);
	CHECK(frame_parse(buf, 5, &f, &cause) == -1);
	free(cause);
	CHECK(frame_counts(FRAME_STDOUT) && !frame_counts(FRAME_EXIT));
}

static void
test_fake_cards(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	CHECK(card_fake_parse("2xH100:80G,1xMI300X:192G,1xMax1550:128G", &cs,
	    &cause) == 0);
	CHECK(cs.n == 4);
	if (cs.n == 4) {
		CHECK(cs.v[0].vendor == VENDOR_NVIDIA);
		CHECK(cs.v[1].vendor == VENDOR_NVIDIA && cs.v[1].index == 1);
		CHECK(cs.v[2].vendor == VENDOR_AMD);
		CHECK(cs.v[2].memory == 192ULL << 30);
		CHECK(cs.v[3].vendor == VENDOR_INTEL);
		CHECK_STR(cs.v[3].model, "Max1550");
		CHECK(strcmp(cs.v[0].uuid, cs.v[1].uuid) != 0);
	}
	CHECK(card_fake_parse("nvidia/T4:16G", &cs, &cause) == 0 && cs.n == 5);
	cards_free(&cs);
	CHECK(card_fake_parse("1xH100", &cs, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(card_fake_parse("1xFoo:8G", &cs, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(card_fake_parse("0xH100:8G", &cs, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(card_fake_parse("H100:80G,,", &cs, &cause) == -1);
	free(cause);
	cards_free(&cs);
}

static void
test_jobreq(void)
{
	struct jobreq	 r;
	json_t		*o, *back;
	char		*cause = NULL;

	jobreq_init(&r);
	o = json_loads("{\"argv\":[\"sleep\",\"1\"],\"share\":0.25,"
	    "\"mem\":\"20G\",\"cwd\":\"/tmp\",\"env\":[\"A=1\"]}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == 0);
	CHECK(r.seats == 25 && r.mem == 20ULL << 30 && r.ncards == 1);
	CHECK_STR(r.argv[1], "1");
	back = jobreq_to_json(&r);
	jobreq_clear(&r);
	CHECK(jobreq_from_json(back, &r, &cause) == 0 && r.seats == 25);
	json_decref(back);
	json_decref(o);
	jobreq_clear(&r);

	o = json_loads("{\"argv\":[\"x\"],\"share\":0.255}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "share") != NULL);
	free(cause);
	cause = NULL;
	json_decref(o);
	jobreq_clear(&r);

	o = json_loads("{\"argv\":[\"x\"],\"bogus\":1}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "bogus") != NULL);
	free(cause);
	cause = NULL;
	json_decref(o);
	jobreq_clear(&r);

	o = json_loads("{\"argv\":[]}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	free(cause);
	cause = NULL;
	json_decref(o);
	jobreq_clear(&r);

	o = json_loads("{\"argv\":[\"x\"],\"env\":[\"NOEQUALS\"]}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	free(cause);
	json_decref(o);
	jobreq_clear(&r);
}

/* "confined" is the daemon's to set: never read from a request. */
static void
test_jobreq_confined(void)
{
	struct jobreq	 r;
	json_t		*o;
	char		*cause = NULL;

	jobreq_init(&r);
	o = json_loads("{\"argv\":[\"x\"],\"confined\":false}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "confined") != NULL);
	free(cause);
	cause = NULL;
	json_decref(o);
	jobreq_clear(&r);

	/* Saved by the daemon, it comes back as it was. */
	jobreq_init(&r);
	o = json_loads("{\"argv\":[\"x\"]}", 0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == 0 && !r.confined);
	json_decref(o);
	r.confined = 1;
	o = jobreq_to_json(&r);
	jobreq_clear(&r);
	CHECK(jobreq_from_saved(o, &r, &cause) == 0 && r.confined);
	json_decref(o);
	jobreq_clear(&r);
}

static void
test_path_under(void)
{
	CHECK(path_under("/a/b", "/a"));
	CHECK(path_under("/a/b/c", "/a"));
	CHECK(!path_under("/a", "/a"));
	CHECK(!path_under("/ab", "/a"));
	CHECK(!path_under("/a", NULL));
	CHECK(path_under("/usr", "/"));
	CHECK(!path_under("/", "/"));
}

static void
test_strv_add(void)
{
	char	**v = NULL;

	strv_add(&v, "a");
	strv_add(&v, "b");
	strv_add(&v, "a");
	CHECK(strv_len(v) == 2);
	CHECK_STR(v[0], "a");
	CHECK_STR(v[1], "b");
	CHECK(v[2] == NULL);
	strv_free(v);
}

/* Joined and formatted text grows as it needs (no size reckoned first). */
static void
test_strv_join(void)
{
	char	**v = NULL, *s, big[5000];
	size_t	  len;

	s = strv_join(NULL, ",");
	CHECK_STR(s, "");
	free(s);
	strv_add(&v, "a");
	s = strv_join(v, ", ");
	CHECK_STR(s, "a");
	free(s);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	strv_add(&v, big);
	strv_add(&v, "");
	s = strv_join(v, " -- ");
	CHECK(strlen(s) == 1 + 4 + strlen(big) + 4);
	CHECK(strncmp(s, "a -- xx", 7) == 0);
	CHECK(strcmp(s + strlen(s) - 5, "x -- ") == 0);
	free(s);
	strv_free(v);
	s = buf_finish(buf_new(), &len);
	CHECK(len == 0 && *s == '\0');
	free(s);
}

int
main(void)
{
	RUN(test_parse_size);
	RUN(test_parse_share);
	RUN(test_parse_duration);
	RUN(test_format);
	RUN(test_frames);
	RUN(test_fake_cards);
	RUN(test_jobreq);
	RUN(test_jobreq_confined);
	RUN(test_strv_add);
	RUN(test_strv_join);
	RUN(test_path_under);
	UNIT_EXIT();
}
