/* cmd-ps.c: gmux ps, the jobs. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define PS_RECENT_MS	(10 * 60 * 1000)	/* a failure said below ps */

static int	cmd_ps_exec(int, char **);

const struct cmd_entry cmd_ps_entry = {
	.name = "ps",
	.args = "[-a] [-l] [--json]",
	.help = "list jobs: queued and running, or all",
	.options =
	    "  -a, --all            ended jobs too\n"
	    "  -l, --long           also priority, flags (burst, preemptible, "
	    "requeue,\n"
	    "                       confined: a remote job in its jail), "
	    "ceilings, fence and\n"
	    "                       refused connects\n"
	    "  --json               a JSON array of job objects\n"
	    "\nAsked of a cluster's member (or of a client whose remote is "
	    "one), the\ncluster's live jobs follow, wherever they run, as "
	    "gmux cluster ps shows\nthem (with -a, ended ones too); --json "
	    "is the host's jobs alone.\n",
	.exec = cmd_ps_exec,
};

enum { OPT_JSON = 256 };

static const struct option ps_opts[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "long", no_argument, NULL, 'l' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* The command; a submitted job file's copy by the job's name. */
static char *
ps_cmd(json_t *j)
{
	json_t		*cmd = json_object_get(j, "cmd");
	const char	*name = json_string_value(json_object_get(j, "name"));
	char		**v, *s, *scripts;
	size_t		  i, n = json_array_size(cmd);

	xasprintf(&scripts, "%s/scripts/", path_home());
	v = xcalloc(n + 1, sizeof *v);
	for (i = 0; i < n; i++)
		v[i] = (char *)json_string_value(json_array_get(cmd, i));
	if (n > 0 && name != NULL && v[0] != NULL &&
	    strncmp(v[0], scripts, strlen(scripts)) == 0)
		v[0] = (char *)name;
	s = strv_join(v, " ");
	free(v);
	free(scripts);
	return (s);
}

/* The id; an array's with what of it is still to start: j12_[4-15%4]. */
static const char *
ps_id(json_t *j, char *buf, size_t len)
{
	const char	*id = json_string_value(json_object_get(j, "id"));
	const char	*pending = json_string_value(json_object_get(j,
			    "pending"));

	if (pending == NULL || *pending == '\0')
		return (id);
	snprintf(buf, len, "%s_[%s]", id, pending);
	return (buf);
}

static void
ps_row(struct table *t, json_t *j, int64_t now, int hosts)
{
	json_t		*card = json_object_get(j, "card");
	char		*share, *mem, *age, *cmd, cardbuf[16], state[64];
	char		 idbuf[128];
	const char	*st = json_string_value(json_object_get(j, "state"));
	json_t		*code = json_object_get(j, "exit_code");

	share = format_share((u_int)(json_number_value(json_object_get(j,
	    "share")) * 100 + 0.5));
	mem = format_size((uint64_t)json_integer_value(json_object_get(j,
	    "mem")));
	age = format_age(now - json_integer_value(json_object_get(j,
	    "created")));
	cmd = ps_cmd(j);
	if (json_is_integer(card))
		snprintf(cardbuf, sizeof cardbuf, "%lld",
		    (long long)json_integer_value(card));
	else
		snprintf(cardbuf, sizeof cardbuf, "-");
	if (json_is_integer(code))
		snprintf(state, sizeof state, "%s (%lld)", st ? st : "?",
		    (long long)json_integer_value(code));
	else if (json_is_integer(json_object_get(j, "position")))
		snprintf(state, sizeof state, "%s #%lld", st ? st : "?",
		    (long long)json_integer_value(json_object_get(j,
		    "position")));
	else
		snprintf(state, sizeof state, "%s", st ? st : "?");
	if (hosts)
		table_add(t, json_string_value(json_object_get(j, "host")),
		    ps_id(j, idbuf, sizeof idbuf),
		    json_string_value(json_object_get(j, "owner")), cardbuf,
		    share, json_integer_value(json_object_get(j, "mem")) ? mem :
		    "-", state, age, cmd);
	else
		table_add(t, ps_id(j, idbuf, sizeof idbuf),
		    json_string_value(json_object_get(j, "owner")), cardbuf,
		    share, json_integer_value(json_object_get(j, "mem")) ? mem :
		    "-", state, age, cmd);
	free(share);
	free(mem);
	free(age);
	free(cmd);
}

/*
 * Moves each array (listed last) to just before the first of its elements,
 * so that an array reads as a heading over them.
 */
static void
ps_group(json_t *a)
{
	json_t		*arr, *j;
	const char	*id, *of, *host, *ohost;
	size_t		 i, k, n = json_array_size(a);

	for (i = 0; i < n; i++) {
		arr = json_array_get(a, i);
		if (json_object_get(arr, "pending") == NULL)
			continue;
		id = json_string_value(json_object_get(arr, "id"));
		host = json_string_value(json_object_get(arr, "host"));
		for (k = 0; k < i; k++) {
			j = json_array_get(a, k);
			of = json_string_value(json_object_get(j, "array_job"));
			ohost = json_string_value(json_object_get(j, "host"));
			if (of != NULL && id != NULL && strcmp(of, id) == 0 &&
			    (host == NULL) == (ohost == NULL) && (host ==
			    NULL || strcmp(host, ohost) == 0))
				break;
		}
		if (k == i)
			continue;
		json_incref(arr);
		json_array_remove(a, i);
		json_array_insert_new(a, k, arr);
	}
}

/* ps -l: one more line of detail a job, under the usual table. */
static void
ps_long(json_t *a)
{
	static const char *const hdr[] = { "ID", "STATE", "PRIO", "FLAGS",
	    "CEILING", "FENCE", "REFUSED", "COMMAND" };
	struct table	*t;
	json_t		*j, *ceil, *v;
	const char	*k;
	char		 flags[16], prio[8], refused[24], *cmd, *c, *cs = NULL;
	size_t		 i;

	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, j) {
		snprintf(flags, sizeof flags, "%s%s%s%s",
		    json_is_true(json_object_get(j, "burst")) ? "b" : "",
		    json_is_true(json_object_get(j, "preemptible")) ? "p" : "",
		    json_is_true(json_object_get(j, "requeue")) ? "r" : "",
		    json_is_true(json_object_get(j, "confined")) ? "c" : "");
		snprintf(prio, sizeof prio, "%lld", (long long)
		    json_integer_value(json_object_get(j, "priority")));
		snprintf(refused, sizeof refused, "%lld", (long long)
		    json_integer_value(json_object_get(j, "refused")));
		ceil = json_object_get(j, "ceilings");
		json_object_foreach(ceil, k, v) {
			c = format_share((u_int)(json_number_value(v) * 100 +
			    0.5));
			xasprintf(&cmd, "%s%s%s:%s", cs ? cs : "",
			    cs ? "," : "", k, c);
			free(cs);
			free(c);
			cs = cmd;
		}
		cmd = ps_cmd(j);
		table_add(t, json_string_value(json_object_get(j, "id")),
		    json_string_value(json_object_get(j, "state")), prio,
		    *flags ? flags : "-", cs, json_string_value(
		    json_object_get(j, "fence")), refused, cmd);
		free(cmd);
		free(cs);
		cs = NULL;
	}
	table_print(t, stdout);
	table_free(t);
}

/*
 * Below the table: what queued jobs wait for, and why recent failures
 * failed.  An old failure is not said again at every ps -a: it is counted.
 */
static void
ps_reasons(json_t *a, int64_t now)
{
	json_t		*j;
	const char	*st, *why, *host;
	size_t		 i;
	u_int		 old = 0;

	json_array_foreach(a, i, j) {
		st = json_string_value(json_object_get(j, "state"));
		why = json_string_value(json_object_get(j, "reason"));
		host = json_string_value(json_object_get(j, "host"));
		if (why == NULL || st == NULL || (strcmp(st, "queued") != 0 &&
		    strcmp(st, "failed") != 0))
			continue;
		if (strcmp(st, "failed") == 0 && now - json_integer_value(
		    json_object_get(j, "ended")) > PS_RECENT_MS) {
			old++;
			continue;
		}
		printf("%s%s%s: %s\n", host ? host : "", host ? ":" : "",
		    json_string_value(json_object_get(j, "id")), why);
	}
	if (old > 0)
		printf("(%u earlier failure%s: why in gmux ps -a --json)\n",
		    old, old == 1 ? "" : "s");
}

static int
cmd_ps_exec(int argc, char **argv)
{
	static const char *const hdr[] = { "HOST", "ID", "OWNER", "CARD",
	    "SHARE", "MEM", "STATE", "AGE", "COMMAND" };
	struct table	*t;
	json_t		*a, *j;
	size_t		 i;
	int		 ch, all = 0, json = 0, lng = 0, hosts;

	while ((ch = cmd_getopt(&cmd_ps_entry, argc, argv, "alh",
	    ps_opts)) != -1) {
		if (ch == 'a')
			all = 1;
		else if (ch == 'l')
			lng = 1;
		else if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_ps_entry, "unexpected argument '%s'",
		    argv[optind]);
	a = cmd_call(&cmd_ps_entry, "GET", all ? "/v1/jobs?all=1&arrays=1" :
	    "/v1/jobs?arrays=1", NULL);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	ps_group(a);
	if (lng) {
		ps_long(a);
		json_decref(a);
		return (0);
	}
	/* From several hosts (hosts.c merged them), each row says which. */
	hosts = json_is_string(json_object_get(json_array_get(a, 0), "host"));
	t = table_create(hdr + !hosts, nitems(hdr) - !hosts);
	json_array_foreach(a, i, j)
		ps_row(t, j, clock_ms(), hosts);
	table_print(t, stdout);
	table_free(t);
	ps_reasons(a, clock_ms());
	json_decref(a);
	/* asked of a member (or a client's remote that is one): the
	 * cluster's jobs too, as gmux cluster ps from here reads them */
	cmd_cluster_ps_below(all);
	return (0);
}
