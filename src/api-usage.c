/* api-usage.c: the books on the API: /v1/usage, its pruning, and /metrics. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"

/*
 * A tenant's view of the books: its own row alone, which is then the
 * total (DESIGN.md decision 14: an owner sees its own unless it is an
 * admin).
 */
static void
api_usage_own(json_t *o, const char *owner)
{
	json_t	*rows = json_object_get(o, "rows"), *mine = json_array(), *r;
	json_t	*total = NULL;
	size_t	 i;

	json_array_foreach(rows, i, r) {
		if (total == NULL && strcmp(owner, json_string_value(
		    json_object_get(r, "owner")) ?: "") == 0) {
			json_array_append(mine, r);
			total = json_deep_copy(r);
			json_object_del(total, "owner");
		}
	}
	if (total == NULL)
		total = json_pack("{s:i, s:i, s:f, s:f, s:f}", "jobs", 0,
		    "seat_ms", 0, "share_seconds", 0.0, "card_hours", 0.0,
		    "mem_gib_hours", 0.0);
	json_object_set_new(o, "rows", mine);
	json_object_set_new(o, "total", total);
}

/* GET /v1/usage?since=&until=&by=&here=1 */
void
api_usage(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*o;
	char	*cause = NULL;
	char	*since = NULL, *until = NULL, *by = NULL;
	const char *v;

	/* api_query's value lasts until its next call: copy each. */
	if ((v = api_query(req, "since")) != NULL)
		since = xstrdup(v);
	if ((v = api_query(req, "until")) != NULL)
		until = xstrdup(v);
	if ((v = api_query(req, "by")) != NULL)
		by = xstrdup(v);
	if (!who->admin && by != NULL && strcmp(by, "owner") != 0) {
		api_error(req, 403, "by=%.16s: only the host's own token sees "
		    "everyone's; a tenant's usage is by owner", by);
		goto out;
	}
	if (cluster_usage_merges(req, who)) {	/* every member's books */
		cluster_usage(req, who);
		goto out;
	}
	o = ledger_usage_json(server_ledger, since, until, by, clock_ms(),
	    &cause);
	if (o != NULL && !who->admin)
		api_usage_own(o, who->owner);
	if (o == NULL)
		api_error(req, 400, "%s", cause);
	else
		api_reply(req, 200, o);
	json_decref(o);
out:
	free(cause);
	free(since);
	free(until);
	free(by);
}

/*
 * Where a prune before day exports to: ledger-before-DAY.csv, or with -2,
 * -3 ... when a prune before the same time was made already (the export
 * never replaces a file).  The caller frees it.
 */
static char *
api_usage_export_path(const char *day)
{
	char	*dir, *path;
	u_int	 n;

	xasprintf(&dir, "%s/exports", path_home());
	mkdir_p(dir, 0700);
	xasprintf(&path, "%s/ledger-before-%s.csv", dir, day);
	for (n = 2; n < 1000 && access(path, F_OK) == 0; n++) {
		free(path);
		xasprintf(&path, "%s/ledger-before-%s-%u.csv", dir, day, n);
	}
	free(dir);
	return (path);
}

/*
 * POST /v1/usage/prune {"before": DATE}: exports the closed intervals that
 * ended by DATE to a CSV file under $GMUX_HOME/exports (never a path from
 * the client), then removes them from the books.
 */
void
api_usage_prune(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t		*body, *o;
	const char	*before;
	char		*cause = NULL, *path = NULL, day[32];
	int64_t		 t, n = 0;

	if ((body = api_body(req, &cause)) == NULL)
		goto bad;
	before = json_string_value(json_object_get(body, "before"));
	if (before == NULL) {
		xasprintf(&cause, "before: a date is needed");
		goto bad;
	}
	if (usage_parse_time(before, clock_ms(), &t, &cause) != 0)
		goto bad;
	usage_format_time(t, day);
	path = api_usage_export_path(day);
	if (ledger_prune(server_ledger, t, path, &n, &cause) != 0) {
		api_error(req, 409, "%s", cause);
		goto out;
	}
	o = json_pack("{s:I,s:s}", "pruned", (json_int_t)n, "export", path);
	api_reply(req, 200, o);
	json_decref(o);
	goto out;
bad:
	api_error(req, 400, "%s", cause);
out:
	json_decref(body);
	free(cause);
	free(path);
}

static void
metrics_fill(struct metrics_input *in, struct metrics_card *mc,
    struct metrics_state *ms)
{
	struct job	*j;
	struct card	*c;
	u_int		 i;

	for (i = 0; i < server_cards.n; i++) {
		c = &server_cards.v[i];
		mc[i].index = i;
		mc[i].vendor = vendor_name(c->vendor);
		mc[i].model = c->model;
		mc[i].uuid = c->uuid;
		mc[i].memory = c->memory;
	}
	for (i = 0; i <= JOB_FAILED; i++)
		ms[i].state = job_state_name((enum job_state)i);
	TAILQ_FOREACH(j, &all_jobs, entry) {
		ms[j->state].jobs++;
		if (j->state == JOB_QUEUED)
			in->queue_length++;
		for (i = 0; j->state == JOB_RUNNING && i < server_cards.n; i++)
			if (j->cards & (1ULL << i))
				mc[i].jobs++;
	}
	for (i = 0; i < server_cards.n; i++) {
		server_sched_card(i, &mc[i].seats, &mc[i].mem_allocated,
		    &mc[i].burst);
		mc[i].util = card_util(&server_cards.v[i],
		    mc[i].seats + mc[i].burst);
	}
}

/* GET /metrics: Prometheus text exposition (docs/metrics.md). */
void
api_metrics(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct metrics_input	 in;
	struct metrics_card	*mc;
	struct metrics_state	 ms[JOB_FAILED + 1];
	struct ledger_total	*owners = NULL;
	struct evbuffer		*b;
	u_int			 nowners = 0;
	char			*text;

	memset(&in, 0, sizeof in);
	memset(ms, 0, sizeof ms);
	mc = xcalloc(server_cards.n + 1, sizeof *mc);
	metrics_fill(&in, mc, ms);
	ledger_totals(server_ledger, &owners, &nowners);
	in.version = GMUX_VERSION;
	in.start_ms = server_started;
	in.cards = mc;
	in.ncards = server_cards.n;
	in.states = ms;
	in.nstates = nitems(ms);
	in.owners = owners;
	in.nowners = nowners;
	text = metrics_render(&in);
	b = evbuffer_new();
	evbuffer_add(b, text, strlen(text));
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4");
	api_send(req, 200, b);
	evbuffer_free(b);
	free(text);
	ledger_totals_free(owners, nowners);
	free(mc);
}
