/*
 * test-jobfile.c: job files (#GMUX, #SBATCH and their errors), array index
 * sets, and the request's directives (jobspec.c).
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "jobspec-int.h"
#include "unit.h"

static void
test_array_parse(void)
{
	struct array_spec	 a;
	char			*cause = NULL, *s;

	CHECK(array_parse("0-15%4", &a, &cause) == 0);
	CHECK(a.count == 16 && a.limit == 4 && a.n == 1);
	CHECK(array_index(&a, 0) == 0 && array_index(&a, 15) == 15);
	s = array_format(&a, 4);
	CHECK_STR(s, "4-15%4");
	free(s);
	s = array_format(&a, 16);
	CHECK_STR(s, "");
	free(s);
	array_clear(&a);

	CHECK(array_parse("1-9:2,20,30-31", &a, &cause) == 0);
	CHECK(a.count == 5 + 1 + 2 && a.limit == 0);
	CHECK(array_index(&a, 4) == 9 && array_index(&a, 5) == 20);
	CHECK(array_index(&a, 7) == 31);
	CHECK(array_position(&a, 7) == 3 && array_position(&a, 8) == -1);
	CHECK(array_position(&a, 31) == 7 && array_position(&a, 32) == -1);
	s = array_format(&a, 2);
	CHECK_STR(s, "5-9:2,20,30-31");
	free(s);
	array_clear(&a);

	/* A step that overshoots ends at the last index it reaches. */
	CHECK(array_parse("0-10:4", &a, &cause) == 0);
	CHECK(a.count == 3 && array_index(&a, 2) == 8);
	array_clear(&a);
	CHECK(array_parse("0-9999", &a, &cause) == 0 && a.count == 10000);
	array_clear(&a);
}

static void
test_array_bad(void)
{
	static const char *const bad[] = { "", "-", "5-1", "1,1", "3,2",
	    "0-9%0", "0-9%", "a", "1-", "1-5:0", "1000000", "0-1x", "1,,2",
	    "0-4:", "%4", "99999999999", " 1" };
	struct array_spec	 a;
	char			*cause;
	u_int			 i;

	for (i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK(array_parse(bad[i], &a, &cause) == -1);
		CHECK(cause != NULL && strncmp(cause, "array: ", 7) == 0);
		free(cause);
	}
}

static void
test_gpus_and_time(void)
{
	char	*type, *cause = NULL;
	u_int	 n;
	int64_t	 ms;

	CHECK(jobspec_gpus("nvidia:1", &type, &n, &cause) == 0 && n == 1);
	CHECK_STR(type, "nvidia");
	free(type);
	CHECK(jobspec_gpus("RTX4090:2", &type, &n, &cause) == 0 && n == 2);
	CHECK_STR(type, "rtx4090");
	free(type);
	CHECK(jobspec_gpus("4", &type, &n, &cause) == 0 && n == 4 &&
	    type == NULL);
	CHECK(jobspec_gpus("h100", &type, &n, &cause) == 0 && n == 1);
	free(type);
	CHECK(jobspec_gpus("h100:0", &type, &n, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(jobspec_gpus(":1", &type, &n, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(jobspec_gpus("a b:1", &type, &n, &cause) == -1);
	free(cause);
	cause = NULL;

	CHECK(jobspec_time("30", &ms, &cause) == 0 && ms == 30 * 60000);
	CHECK(jobspec_time("02:00:00", &ms, &cause) == 0 && ms == 7200000);
	CHECK(jobspec_time("1:30", &ms, &cause) == 0 && ms == 90000);
	CHECK(jobspec_time("2-00:00:00", &ms, &cause) == 0 &&
	    ms == 2 * 86400000LL);
	CHECK(jobspec_time("1-2", &ms, &cause) == 0 && ms == 26 * 3600000LL);
	CHECK(jobspec_time("90s", &ms, &cause) == 0 && ms == 90000);
	CHECK(jobspec_time("2h", &ms, &cause) == 0 && ms == 7200000);
	CHECK(jobspec_time("0", &ms, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(jobspec_time("-5", &ms, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(jobspec_time("1:2:3:4", &ms, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(jobspec_time("400d", &ms, &cause) == -1);
	CHECK(cause != NULL && strncmp(cause, "time: ", 6) == 0);
	free(cause);
}

/* A request from JSON text; returns 0 or -1 with *cause. */
static int
req_of(const char *text, struct jobreq *r, char **cause)
{
	json_t	*o = json_loads(text, 0, NULL);
	int	 rc;

	jobreq_init(r);
	rc = jobreq_from_json(o, r, cause);
	json_decref(o);
	return (rc);
}

static void
test_jobspec_fields(void)
{
	struct jobreq	 r, r2;
	json_t		*o;
	char		*cause = NULL;

	CHECK(req_of("{\"argv\":[\"x\"],\"gpus\":\"h100:2\",\"cpus\":4,"
	    "\"ram\":\"8G\",\"vram\":\"40G\",\"name\":\"sweep\","
	    "\"time_limit_ms\":60000,\"array\":\"0-3%2\",\"server\":\"gpu2\","
	    "\"partition\":\"big\",\"output\":\"o-%j.txt\"}", &r,
	    &cause) == 0);
	CHECK(r.ncards == 2 && r.seats == 100);	/* whole cards by default */
	CHECK(r.mem == 40ULL << 30);		/* shared: vram is the cap */
	CHECK(r.spec.cpus == 4 && r.spec.ram == 8ULL << 30);
	CHECK_STR(r.spec.gpu_type, "h100");
	CHECK_STR(r.spec.array, "0-3%2");
	/* It survives the trip through the records. */
	o = jobreq_to_json(&r);
	jobreq_init(&r2);
	CHECK(jobreq_from_json(o, &r2, &cause) == 0);
	CHECK(r2.ncards == 2 && r2.seats == 100 && r2.mem == r.mem);
	CHECK(r2.spec.time_ms == 60000 && r2.spec.nodes == 1);
	CHECK_STR(r2.spec.name, "sweep");
	CHECK_STR(r2.spec.output, "o-%j.txt");
	json_decref(o);
	jobreq_clear(&r2);
	jobreq_clear(&r);

	CHECK(req_of("{\"argv\":[\"x\"],\"gpus\":\"1\",\"share\":0.5}", &r,
	    &cause) == 0 && r.seats == 50 && r.ncards == 1);
	jobreq_clear(&r);
	CHECK(req_of("{\"argv\":[\"x\"],\"mode\":\"exclusive\"}", &r,
	    &cause) == 0 && r.seats == 100 && r.ncards == 1);
	jobreq_clear(&r);
	CHECK(req_of("{\"argv\":[\"x\"],\"payloads\":[1,2,3]}", &r,
	    &cause) == 0);
	CHECK_STR(r.spec.array, "0-2");
	jobreq_clear(&r);
}

static void
test_jobspec_bad(void)
{
	static const struct {
		const char	*json;
		const char	*field;
	} bad[] = {
		{ "\"gpus\":\"x:0\"", "gpus: " },
		{ "\"gpus\":2", "gpus: " },
		{ "\"gpus\":\"2\",\"cards\":3", "cards: " },
		{ "\"gpus\":\"2\",\"share\":0", "share: " },
		{ "\"mode\":\"exclusive\",\"share\":0.5", "mode: " },
		{ "\"mode\":\"all\"", "mode: " },
		{ "\"vram\":\"1G\"", "vram: " },
		{ "\"share\":0.5,\"mem\":\"1G\",\"vram\":\"2G\"", "mem: " },
		{ "\"cpus\":0", "cpus: " },
		{ "\"nodes\":0", "nodes: " },
		{ "\"name\":\"a/b\"", "name: " },
		{ "\"name\":\"\"", "name: " },
		{ "\"server\":\"a b\"", "server: " },
		{ "\"array\":\"3-1\"", "array: " },
		{ "\"array\":\"0-1\",\"payloads\":[1,2,3]", "array: " },
		{ "\"payloads\":[]", "payloads: " },
		{ "\"time_limit_ms\":0", "time_limit_ms: " },
		{ "\"element\":{}", "element: " },
		{ "\"ram\":\"lots\"", "ram: " },
		{ "\"output\":\"o-%q\"", "output: " },
		{ "\"array\":\"0-3\",\"timeout_ms\":1000", "timeout_ms: " },
		{ "\"error\":\"e-%\"", "error: " },
	};
	struct jobreq	 r;
	char		*text, *cause;
	u_int		 i;

	for (i = 0; i < nitems(bad); i++) {
		cause = NULL;
		xasprintf(&text, "{\"argv\":[\"x\"],%s}", bad[i].json);
		CHECK(req_of(text, &r, &cause) == -1);
		if (cause == NULL || strncmp(cause, bad[i].field,
		    strlen(bad[i].field)) != 0)
			fprintf(stderr, "%s: %s\n", text, cause);
		CHECK(cause != NULL && strncmp(cause, bad[i].field,
		    strlen(bad[i].field)) == 0);
		free(cause);
		free(text);
		jobreq_clear(&r);
	}
}

/* Parses and applies text; returns the request (or NULL) and f's state. */
static json_t *
file_of(const char *text, struct jobfile *f)
{
	json_t	*o = json_object();

	jobfile_init(f);
	jobfile_parse(text, strlen(text), f);
	if (jobfile_apply(f, o) != 0) {
		json_decref(o);
		return (NULL);
	}
	return (o);
}

static void
test_jobfile_directives(void)
{
	struct jobfile	 f;
	json_t		*o;

	o = file_of("#!/bin/bash\n"
	    "#GMUX --gpus nvidia:1 --share 0.5 --vram 40G --cpus 8 --ram 32G\n"
	    "#GMUX --array 0-15%4 --priority 3 --server gpu2 --mode shared\n"
	    "#SBATCH --job-name=sweep --time=02:00:00      # a comment\n"
	    "\n# a comment\n"
	    "python train.py --seed $GMUX_ARRAY_INDEX\n"
	    "#GMUX-like text after the body is the script's own\n", &f);
	CHECK(o != NULL && f.n == 11);
	CHECK_STR(json_string_value(json_object_get(o, "gpus")), "nvidia:1");
	CHECK(json_real_value(json_object_get(o, "share")) == 0.5);
	CHECK(json_integer_value(json_object_get(o, "vram")) == 40LL << 30);
	CHECK(json_integer_value(json_object_get(o, "cpus")) == 8);
	CHECK_STR(json_string_value(json_object_get(o, "array")), "0-15%4");
	CHECK_STR(json_string_value(json_object_get(o, "name")), "sweep");
	CHECK(json_integer_value(json_object_get(o, "time_limit_ms")) ==
	    7200000);
	CHECK(json_integer_value(json_object_get(o, "priority")) == 3);
	json_decref(o);
	jobfile_free(&f);

	/* Slurm's forms: --gres, --mem in megabytes, short flags, quotes. */
	o = file_of("#SBATCH --gres=gpu:a100:2\n#SBATCH --mem=4000\n"
	    "#SBATCH -c 4 -N 1 -J 'my job' -t 30 -o out-%A_%a.txt\n"
	    "#SBATCH --cpus-per-task 2 --partition=big -a1-3\n"
	    "#GMUX --burst --allow \"example.com:443\"\n", &f);
	CHECK(o != NULL);
	CHECK_STR(json_string_value(json_object_get(o, "gpus")), "a100:2");
	CHECK(json_integer_value(json_object_get(o, "ram")) == 4000LL << 20);
	CHECK(json_integer_value(json_object_get(o, "cpus")) == 2);
	CHECK_STR(json_string_value(json_object_get(o, "name")), "my job");
	CHECK(json_integer_value(json_object_get(o, "time_limit_ms")) ==
	    30 * 60000);
	CHECK_STR(json_string_value(json_object_get(o, "array")), "1-3");
	CHECK_STR(json_string_value(json_object_get(o, "partition")), "big");
	CHECK(json_is_true(json_object_get(o, "burst")));
	CHECK(json_array_size(json_object_get(o, "allow")) == 1);
	json_decref(o);
	jobfile_free(&f);

	/* No directives at all: an ordinary script. */
	o = file_of("echo hi\n", &f);
	CHECK(o != NULL && json_object_size(o) == 0 && f.n == 0);
	json_decref(o);
	jobfile_free(&f);
}

/*
 * An #SBATCH flag's error names that flag, not gmux's it stands for, and
 * says a field once (it said "--ram: ..." for --mem, "--gpus: gpus: ...").
 */
static void
test_jobfile_sbatch_errors(void)
{
	struct jobfile	 f;

	CHECK(file_of("#!/bin/sh\n#SBATCH --mem=lots\n"
	    "#SBATCH --gres=gpu:rtx4090:x\n#GMUX --gpus rtx:x\n", &f) ==
	    NULL);
	CHECK(strv_len(f.errors) == 3);
	CHECK(strcmp(f.errors[0], "line 2: #SBATCH --mem: 'lots' is not a "
	    "size (like 20G, 512M or 1.5T)") == 0);
	CHECK(strncmp(f.errors[1], "line 3: #SBATCH --gres: 'rtx4090:x' is "
	    "not [VENDOR|MODEL:]N", 50) == 0);
	CHECK(strncmp(f.errors[2], "line 4: --gpus: 'rtx:x' is not", 30) ==
	    0);
	jobfile_free(&f);
}

/* Each bad line is its own error, naming the line; in line order. */
static void
test_jobfile_errors(void)
{
	static const char *const want[] = {
		"line 2: --gpus: needs a value",
		"line 3: --share: ",
		"line 3: --bogus: not a flag of gmux run",
		"line 4: #SBATCH --account: not one gmux reads",
		"line 5: --gres=disk:2: only gpu",
		"line 6: #GMUX must be followed by a space",
		"line 7: --array: ",
		"line 8: a quote is not closed",
		"line 9: 'gpus' is not a flag",
		"line 10: #SBATCH -x: not one gmux reads",
		"line 11: --burst: takes no value",
		"line 12: #GMUX without a flag",
		"line 13: --time: ",
		"line 14: --mode: ",
		"line 15: #SBATCH --nodes: '2-4' is not",
		"line 17: #GMUX after the script's first command (line 16)",
	};
	struct jobfile	 f;
	json_t		*o;
	u_int		 i, j, found;

	CHECK(file_of("#!/bin/sh\n"
	    "#GMUX --gpus\n"
	    "#GMUX --share 2 --bogus\n"
	    "#SBATCH --account=foo\n"
	    "#SBATCH --gres=disk:2\n"
	    "#GMUXX\n"
	    "#GMUX --array 5-1\n"
	    "#GMUX --job-name \"unclosed\n"
	    "#GMUX gpus 1\n"
	    "#SBATCH -x node3\n"
	    "#GMUX --burst=yes\n"
	    "#GMUX\n"
	    "#GMUX --time forever\n"
	    "#GMUX --mode all\n"
	    "#SBATCH --nodes=2-4\n"
	    "echo hi\n"
	    "#GMUX --cpus 2\n", &f) == NULL);
	CHECK(strv_len(f.errors) == nitems(want));
	for (i = 0; i < nitems(want); i++) {
		for (found = 0, j = 0; f.errors[j] != NULL; j++) {
			if (strncmp(f.errors[j], want[i],
			    strlen(want[i])) == 0)
				found = 1;
		}
		if (!found)
			fprintf(stderr, "missing: %s\n", want[i]);
		CHECK(found);
	}
	for (j = 1; f.errors[j] != NULL; j++)
		CHECK(strtol(f.errors[j - 1] + 5, NULL, 10) <=
		    strtol(f.errors[j] + 5, NULL, 10));
	jobfile_free(&f);

	/* (a C string: what follows the NUL is not in it) */
	o = file_of("#GMUX --cpus 1\n\0#GMUX --cpus 2\n", &f);
	CHECK(o != NULL && f.n == 1);
	json_decref(o);
	jobfile_free(&f);
	jobfile_init(&f);
	CHECK(jobfile_parse("#GMUX --cpus 1\n\0x", 17, &f) == -1);
	CHECK(f.errors != NULL && strncmp(f.errors[0], "line 2: a NUL",
	    13) == 0);
	jobfile_free(&f);
}

int
main(void)
{
	RUN(test_array_parse);
	RUN(test_array_bad);
	RUN(test_gpus_and_time);
	RUN(test_jobspec_fields);
	RUN(test_jobspec_bad);
	RUN(test_jobfile_directives);
	RUN(test_jobfile_errors);
	RUN(test_jobfile_sbatch_errors);
	UNIT_EXIT();
}
