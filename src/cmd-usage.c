/* cmd-usage.c: gmux usage, the books: who used what, over any window. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "gmux.h"

static int	cmd_usage_exec(int, char **);

const struct cmd_entry cmd_usage_entry = {
	.name = "usage",
	.args = "[--since WHEN] [--until WHEN] "
	    "[--by owner|job|card|vendor|day] [--json|--csv]",
	.help = "share-seconds, memory GB-hours and jobs over a window",
	.options =
	    "  --since WHEN         start: 24h, 30d, 2026-11-01, "
	    "2026-11-01T08:00 (default 24h)\n"
	    "  --until WHEN         end (default now)\n"
	    "  --by KEY             owner (default), job, card, vendor or day\n"
	    "  --json, --csv        machine-readable output\n"
	    "  --verify             check the books' hash chain; names the "
	    "first broken row\n"
	    "  --prune-before DATE  export the intervals that ended before "
	    "DATE to a CSV\n"
	    "                       under $GMUX_HOME/exports, then remove "
	    "them\n"
	    "\nShare-seconds are guaranteed fractions of a card times seconds "
	    "(3600 are one\ncard-hour); what a job bursts above its guarantee "
	    "is not billed.\nOn a cluster's member, every live member's rows, "
	    "each with its member as HOST;\nthe members that did not answer "
	    "are named on stderr.\n",
	.exec = cmd_usage_exec,
};

enum { OPT_SINCE = 256, OPT_UNTIL, OPT_BY, OPT_JSON, OPT_CSV, OPT_VERIFY,
    OPT_PRUNE };

static const struct option usage_opts[] = {
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "by", required_argument, NULL, OPT_BY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "prune-before", required_argument, NULL, OPT_PRUNE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* Appends &name=value to a query, percent-encoding the value. */
static void
usage_query_add(char **q, const char *name, const char *v)
{
	struct evbuffer	*b = buf_new();

	evbuffer_add_printf(b, "%s%c%s=", *q, strchr(*q, '?') ? '&' : '?',
	    name);
	for (; *v != '\0'; v++) {
		if (strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~", *v) != NULL)
			evbuffer_add(b, v, 1);
		else
			evbuffer_add_printf(b, "%%%02X", (u_char)*v);
	}
	free(*q);
	*q = buf_finish(b, NULL);
}

/*
 * The books of this machine with no daemon running, read directly (it
 * may take seconds).  Never made: a machine without books has none to
 * check.
 */
static int
usage_verify_here(void)
{
	struct ledger	*l;
	int64_t		 n = 0;
	char		*cause = NULL;
	int		 rc;

	if (access(path_db(), F_OK) != 0) {
		fprintf(stderr, "gmux usage: no books here: no daemon runs and "
		    "%s has none (gmux usage --verify --remote NAME checks a "
		    "host's)\n", path_home());
		return (1);
	}
	if ((l = ledger_open(path_db(), &cause)) == NULL) {
		fprintf(stderr, "gmux usage: %s\n", cause);
		free(cause);
		return (1);
	}
	rc = ledger_verify(l, &n, &cause);
	if (rc == 0)
		printf("the books are intact: %lld closed intervals\n",
		    (long long)n);
	else
		fprintf(stderr, "gmux usage: %s\n", cause);
	free(cause);
	ledger_close(l);
	return (rc == 0 ? 0 : 1);
}

/* One daemon's answer to GET /v1/usage/verify; host is NULL for ours. */
static int
usage_verify_said(const char *host, struct client_reply *r)
{
	const char	*why;

	if (r->status != 200 || r->error != NULL) {
		fprintf(stderr, "gmux usage: %s%s%s\n", host ? host : "",
		    host ? ": " : "", r->error ? r->error : "no answer");
		return (1);
	}
	if (json_is_true(json_object_get(r->body, "intact"))) {
		printf("%s%sthe books are intact: %lld closed intervals\n",
		    host ? host : "", host ? ": " : "", (long long)
		    json_integer_value(json_object_get(r->body, "intervals")));
		return (0);
	}
	why = json_string_value(json_object_get(r->body, "problem"));
	fprintf(stderr, "gmux usage: %s%sthe books are broken: %s\n",
	    host ? host : "", host ? ": " : "", why ? why : "?");
	return (1);
}

/*
 * usage --verify goes where every command goes: each host's books are
 * checked by that host (--remote NAME's, or every configured one), this
 * machine's by its daemon, or directly if none runs.
 */
static int
usage_verify(void)
{
	const struct remote	*rv[REMOTES_MAX];
	struct client_req	 q[REMOTES_MAX];
	struct client_reply	 r;
	u_int			 i, n;
	int			 bad = 0;

	if (!hosts_remote()) {
		if (!client_daemon_running())
			return (usage_verify_here());
		client_call("GET", "/v1/usage/verify", NULL, &r);
		bad = usage_verify_said(NULL, &r);
		client_reply_clear(&r);
		return (bad);
	}
	/* All at once: each host may take seconds over its books. */
	n = hosts_candidates(rv, REMOTES_MAX);
	for (i = 0; i < n; i++)
		client_req_init(&q[i], &rv[i]->target, "GET",
		    "/v1/usage/verify");
	client_multi(q, n, 0);
	for (i = 0; i < n; i++) {
		bad |= usage_verify_said(rv[i]->name, &q[i].reply);
		client_reply_clear(&q[i].reply);
	}
	return (bad);
}

static int
usage_prune(const char *before)
{
	json_t	*body, *o;

	body = json_pack("{s:s}", "before", before);
	o = cmd_call(&cmd_usage_entry, "POST", "/v1/usage/prune", body);
	printf("exported %lld intervals to %s, then removed them\n",
	    (long long)json_integer_value(json_object_get(o, "pruned")),
	    json_string_value(json_object_get(o, "export")));
	json_decref(o);
	json_decref(body);
	return (0);
}

/*
 * --since and --until are checked here, as every flag is (one line, exit
 * 2), though the host reads them again against its own clock.
 */
static void
usage_check_window(const char *since_s, const char *until_s)
{
	const struct cmd_entry	*c = &cmd_usage_entry;
	int64_t			 now = clock_ms(), since, until;
	char			*cause = NULL;

	if (since_s != NULL && usage_parse_time(since_s, now, &since,
	    &cause) != 0)
		cmd_usage_error(c, "--since: %s", cause);
	if (until_s != NULL && usage_parse_time(until_s, now, &until,
	    &cause) != 0)
		cmd_usage_error(c, "--until: %s", cause);
	if (usage_parse_window(since_s, until_s, now, &since, &until,
	    &cause) != 0)
		cmd_usage_error(c, "%s", cause);
}

/* A cluster's books: the members that did not answer, on stderr. */
static void
usage_missing(json_t *o)
{
	json_t	*m;
	size_t	 i;

	json_array_foreach(json_object_get(json_object_get(o, "members"),
	    "missing"), i, m) {
		fprintf(stderr, "gmux usage: member %s did not answer: %s\n",
		    json_string_value(json_object_get(m, "name")) ?: "?",
		    json_string_value(json_object_get(m, "error")) ?: "?");
	}
}

static int
cmd_usage_exec(int argc, char **argv)
{
	const struct cmd_entry	*c = &cmd_usage_entry;
	enum usage_format	 fmt = USAGE_TABLE;
	enum usage_by		 by;
	struct usage		 u;
	json_t			*o;
	char			*q, *cause = NULL;
	int			 ch, verify = 0;
	const char		*prune = NULL, *since = NULL, *until = NULL;

	q = xstrdup("/v1/usage");
	while ((ch = cmd_getopt(c, argc, argv, "h", usage_opts)) != -1) {
		switch (ch) {
		case OPT_SINCE:
			usage_query_add(&q, "since", optarg);
			since = optarg;
			break;
		case OPT_UNTIL:
			usage_query_add(&q, "until", optarg);
			until = optarg;
			break;
		case OPT_BY:
			if (usage_by_from_name(optarg, &by, &cause) != 0)
				cmd_usage_error(c, "--by: %s", cause);
			usage_query_add(&q, "by", optarg);
			break;
		case OPT_JSON:
			fmt = USAGE_JSON;
			break;
		case OPT_CSV:
			fmt = USAGE_CSV;
			break;
		case OPT_VERIFY:
			verify = 1;
			break;
		case OPT_PRUNE:
			prune = optarg;
			break;
		}
	}
	if (optind != argc)
		cmd_usage_error(c, "unexpected argument '%s'", argv[optind]);
	usage_check_window(since, until);
	if (verify) {
		free(q);
		return (usage_verify());
	}
	if (prune != NULL) {
		free(q);
		return (usage_prune(prune));
	}
	o = cmd_call(c, "GET", q, NULL);
	free(q);
	if (usage_from_json(o, &u, &cause) != 0) {
		fprintf(stderr, "gmux usage: %s\n", cause);
		free(cause);
		json_decref(o);
		return (1);
	}
	usage_print(&u, fmt, stdout);
	usage_free(&u);
	usage_missing(o);
	json_decref(o);
	return (0);
}
