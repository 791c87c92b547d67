/*
 * cmd-status.c: gmux status, a job's or an array's elements: state, exit
 * code, host and result (the last line each printed, as JSON); and the
 * wait of gmux submit --wait, with its progress bar.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"

#define STATUS_POLL_MS	200
#define STATUS_PATIENCE_MS (120 * 1000)	/* a wait, the cluster away */
#define STATUS_BAR	20

static int	cmd_status_exec(int, char **);

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.args = "[--json] ID",
	.help = "each element of a job or array: state, host and result",
	.options =
	    "  --json               the job or array as JSON, with its "
	    "elements\n"
	    "\nAn element's result is the last line it printed on stdout, "
	    "read as JSON\n(null if it is not JSON).  A cluster job's "
	    "(NAME.T) is its elements' or its\ngang's parts' states, exit "
	    "codes and members, without results.\n",
	.exec = cmd_status_exec,
};

enum { OPT_JSON = 256 };

static const struct option status_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static const char *
str(json_t *o, const char *k)
{
	const char	*s = json_string_value(json_object_get(o, k));

	return (s != NULL ? s : "-");
}

/* The status as a table, one element a row. */
static void
status_print(json_t *st)
{
	static const char *const hdr[] = { "ELEMENT", "STATE", "EXIT", "HOST",
	    "RESULT" };
	struct table	*t;
	json_t		*el, *code;
	char		 exit[16], *result;
	size_t		 i;

	printf("%s: %s, %lld element%s\n", str(st, "id"), str(st, "state"),
	    (long long)json_integer_value(json_object_get(st, "count")),
	    json_integer_value(json_object_get(st, "count")) == 1 ? "" : "s");
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(json_object_get(st, "elements"), i, el) {
		code = json_object_get(el, "exit_code");
		if (json_is_integer(code))
			snprintf(exit, sizeof exit, "%lld",
			    (long long)json_integer_value(code));
		else
			snprintf(exit, sizeof exit, "-");
		result = json_is_null(json_object_get(el, "result")) ? NULL :
		    json_dumps(json_object_get(el, "result"),
		    JSON_COMPACT|JSON_ENCODE_ANY|JSON_REAL_PRECISION(15));
		table_add(t, str(el, "id"), str(el, "state"), exit,
		    str(el, "host"), result);
		free(result);
	}
	table_print(t, stdout);
	table_free(t);
}

/* A cluster record's row: an element of the status. */
static json_t *
status_cluster_row(json_t *o)
{
	json_t	*code = json_object_get(o, "exit_code");

	return (json_pack("{s:O,s:O,s:O,s:O,s:n}", "id", json_object_get(o,
	    "id"), "state", json_object_get(o, "state"), "exit_code",
	    json_is_integer(code) && json_integer_value(code) >= 0 ? code :
	    json_null(), "host", json_object_get(o, "member") != NULL ?
	    json_object_get(o, "member") : json_null(), "result"));
}

/*
 * GET path of the cluster, its answer; patient (a wait), the cluster not
 * answering now (etcd away: 5xx, no reply) is asked again each second for
 * STATUS_PATIENCE_MS.  An error is said, and exits 1.
 */
static json_t *
status_cluster_get(const char *path, int patient)
{
	struct client_reply	 r;
	struct timespec		 ts = { 1, 0 };
	int64_t			 end = clock_mono_ms() + STATUS_PATIENCE_MS;
	json_t			*o;

	for (;;) {
		if (client_call("GET", path, NULL, &r) == 0 && r.status == 200)
			break;
		if (!patient || (r.status >= 400 && r.status < 500) ||
		    clock_mono_ms() > end)
			client_die(&r, cmd_status_entry.name);
		client_reply_clear(&r);
		nanosleep(&ts, NULL);
	}
	o = json_incref(r.body);
	client_reply_clear(&r);
	return (o);
}

/*
 * A cluster job's status (gmux status NAME.T), from its records: a job
 * alone, an array's elements made so far, or a gang's parts; no result
 * (the members keep the output: gmux logs ID).
 */
static json_t *
status_cluster(const char *id, int patient)
{
	json_t			*o, *all, *j, *els, *el;
	char			*path;
	size_t			 i;

	xasprintf(&path, "/v1/cluster/jobs/%s", id);
	o = status_cluster_get(path, patient);
	free(path);
	els = json_array();
	if (json_object_get(o, "parts") != NULL) {
		json_array_foreach(json_object_get(o, "parts"), i, j)
			json_array_append_new(els, status_cluster_row(j));
	} else if (json_object_get(o, "elements") != NULL) {
		all = status_cluster_get("/v1/cluster/jobs", patient);
		json_array_foreach(all, i, j) {
			el = json_object_get(j, "element");
			if (el != NULL && json_equal(json_object_get(el, "of"),
			    json_object_get(o, "id")))
				json_array_append_new(els,
				    status_cluster_row(j));
		}
		json_decref(all);
	} else
		json_array_append_new(els, status_cluster_row(o));
	j = json_pack("{s:O,s:O,s:I,s:o}", "id", json_object_get(o, "id"),
	    "state", json_object_get(o, "state"), "count", (json_int_t)
	    (json_object_get(o, "elements") != NULL ? json_integer_value(
	    json_object_get(json_object_get(o, "elements"), "count")) :
	    (json_int_t)json_array_size(els)), "elements", els);
	if (json_object_get(o, "exit_code") != NULL)
		json_object_set(j, "exit_code", json_object_get(o,
		    "exit_code"));
	json_decref(o);
	return (j);
}

/* How many of a cluster job's elements (its status st) are done. */
static void
status_cluster_count(json_t *st, json_int_t *done, json_int_t *all)
{
	json_t	*el;
	size_t	 i;

	*all = json_integer_value(json_object_get(st, "count"));
	*done = 0;
	json_array_foreach(json_object_get(st, "elements"), i, el)
		*done += cmd_cluster_ended(el);
	if (cmd_cluster_ended(st))	/* a stopped array: all it will */
		*done = *all;
}

/* How many of the array's (or the job's) elements are done. */
static void
status_count(json_t *o, json_int_t *done, json_int_t *all)
{
	json_t	*c = json_object_get(o, "counts");

	if (c == NULL) {
		*all = 1;
		*done = json_is_null(json_object_get(o, "ended")) ? 0 : 1;
		return;
	}
	*all = json_integer_value(json_object_get(o, "count"));
	*done = json_integer_value(json_object_get(c, "ended")) +
	    json_integer_value(json_object_get(c, "skipped"));
}

/* One progress report: a redrawn bar on a terminal, else a plain line. */
static void
status_progress(json_int_t done, json_int_t all, int64_t ms, int tty)
{
	char	 bar[STATUS_BAR + 1];
	int	 i, fill = all > 0 ? (int)(done * STATUS_BAR / all) : 0;

	for (i = 0; i < STATUS_BAR; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[STATUS_BAR] = '\0';
	if (tty)
		printf("\r  %s %3d%%  %lld/%lld done  (%llds)", bar, all > 0 ?
		    (int)(done * 100 / all) : 100, (long long)done,
		    (long long)all, (long long)(ms / 1000));
	else
		printf("%lld/%lld done (%llds)\n", (long long)done,
		    (long long)all, (long long)(ms / 1000));
	fflush(stdout);
}

/*
 * Waits until every element of id (a cluster job's too) has ended,
 * showing progress, then prints each one.  Returns 0 if all exited with
 * 0, 1 if not.
 */
int
status_wait(const char *id)
{
	const struct cmd_entry	*c = &cmd_status_entry;
	struct timespec		 ts = { 0, STATUS_POLL_MS * 1000000L };
	json_t			*o;
	json_int_t		 done, all, shown = -1;
	char			*path;
	int64_t			 t0 = clock_mono_ms();
	int			 tty = isatty(STDOUT_FILENO), rc;
	int			 cluster = cmd_cluster_id(id);

	xasprintf(&path, "/v1/jobs/%s", id);
	for (;;) {
		if (cluster) {
			o = status_cluster(id, 1);
			status_cluster_count(o, &done, &all);
		} else {
			o = cmd_call(c, "GET", path, NULL);
			status_count(o, &done, &all);
		}
		json_decref(o);
		if (done != shown || tty)
			status_progress(done, all, clock_mono_ms() - t0, tty);
		shown = done;
		if (done >= all)
			break;
		nanosleep(&ts, NULL);
	}
	if (tty)
		printf("\n");
	free(path);
	if (cluster)
		o = status_cluster(id, 1);
	else {
		xasprintf(&path, "/v1/jobs/%s/status", id);
		o = cmd_call(c, "GET", path, NULL);
		free(path);
	}
	status_print(o);
	rc = strcmp(str(o, "state"), "exited") == 0 &&
	    json_integer_value(json_object_get(o, "exit_code")) == 0 ? 0 : 1;
	json_decref(o);
	return (rc);
}

static int
cmd_status_exec(int argc, char **argv)
{
	const struct cmd_entry	*c = &cmd_status_entry;
	json_t			*o;
	char			*path;
	int			 ch, json = 0;

	while ((ch = cmd_getopt(c, argc, argv, "h", status_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc - 1)
		cmd_usage_error(c, "one job or array id is needed");
	if (cmd_cluster_id(argv[optind]))
		o = status_cluster(argv[optind], 0);
	else {
		xasprintf(&path, "/v1/jobs/%s/status", argv[optind]);
		o = cmd_call(c, "GET", path, NULL);
		free(path);
	}
	if (json)
		json_print(o, stdout);
	else
		status_print(o);
	json_decref(o);
	return (0);
}
