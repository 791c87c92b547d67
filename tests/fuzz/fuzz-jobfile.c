/*
 * fuzz-jobfile.c: job files as gmux submit reads them (jobfile_parse, then
 * jobfile_apply), and array index sets.  Every error names a line of the
 * input; a file without errors makes a request that the daemon's checks
 * either take (and it survives the trip through its records) or refuse
 * with a reason.  An array that parses formats back to the same set.
 * seeds: tests/fuzz/seeds/jobfile/
 */

#include "fuzz.h"
#include "jobspec-int.h"

static void
check_array(const char *text)
{
	struct array_spec	 a, b;
	char			*cause = NULL, *s;
	u_int			 i;

	if (array_parse(text, &a, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	FUZZ_ASSERT(a.count > 0 && a.n > 0);
	s = array_format(&a, 0);
	FUZZ_ASSERT(array_parse(s, &b, &cause) == 0);
	FUZZ_ASSERT(b.count == a.count && b.limit == a.limit);
	for (i = 0; i < a.count && i < 64; i++) {
		FUZZ_ASSERT(array_index(&a, i) == array_index(&b, i));
		FUZZ_ASSERT(array_position(&a, array_index(&a, i)) == i);
	}
	array_clear(&b);
	array_clear(&a);
	free(s);
}

static void
check_request(json_t *o)
{
	struct jobreq	 r, r2;
	json_t		*o2;
	char		*cause = NULL;

	json_object_set_new(o, "argv", json_pack("[s]", "true"));
	jobreq_init(&r);
	if (jobreq_from_json(o, &r, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		jobreq_clear(&r);
		return;
	}
	o2 = jobreq_to_json(&r);
	jobreq_init(&r2);
	FUZZ_ASSERT(jobreq_from_json(o2, &r2, &cause) == 0);
	FUZZ_ASSERT(r2.seats == r.seats && r2.ncards == r.ncards);
	FUZZ_ASSERT(r2.mem == r.mem && r2.spec.gpus == r.spec.gpus);
	json_decref(o2);
	jobreq_clear(&r2);
	jobreq_clear(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobfile	 f;
	json_t		*o = json_object();
	char		*text = fuzz_text(data, size);
	size_t		 lines = 1, i;
	long		 n;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	jobfile_init(&f);
	jobfile_parse((const char *)data, size, &f);
	for (i = 0; i < f.n; i++)
		FUZZ_ASSERT(f.v[i].line >= 1 && f.v[i].line <= lines);
	if (jobfile_apply(&f, o) == 0)
		check_request(o);
	for (i = 0; f.errors != NULL && f.errors[i] != NULL; i++) {
		FUZZ_ASSERT(strncmp(f.errors[i], "line ", 5) == 0);
		n = strtol(f.errors[i] + 5, NULL, 10);
		FUZZ_ASSERT(n >= 1 && (size_t)n <= lines);
	}
	jobfile_free(&f);
	json_decref(o);
	if (size < 256)
		check_array(text);
	free(text);
	return (0);
}
