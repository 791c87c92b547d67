/*
 * ui-usage.c: GET /v1/usage/series, the books as a time series for the
 * dashboard's plots: the window cut into equal steps, each integrated as
 * GET /v1/usage integrates a window, so a plot and gmux usage agree.  A
 * tenant's token sees only its own owner's series, by owner or by card
 * (its own use of each card); every owner's use is the host's to see.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>

#include "gmux.h"
#include "ui-int.h"

#define UI_POINTS_DEFAULT	60
#define UI_POINTS_MAX		240
#define UI_WINDOW_MIN_MS	(10 * 1000)
#define UI_WINDOW_MAX_MS	(31LL * 24 * 3600 * 1000)
#define UI_DAILY_FROM_MS	(2 * LEDGER_DAY_MS)	/* longer: days */

struct ui_series_req {
	enum usage_by	 by;
	int64_t		 window;	/* ms */
	u_int		 points;
	char		*only;		/* an owner, or NULL: every one */
};

/*
 * The steps of a window ending now: equal parts of it, or for a window of
 * more than two days whole UTC days, from the first one's midnight (the
 * rollup answers those at once), the last one still going.
 */
static void
ui_series_steps(const struct ui_series_req *r, int64_t now,
    struct usage_series *s)
{
	if (r->window > UI_DAILY_FROM_MS) {
		s->step = LEDGER_DAY_MS;
		s->n = (u_int)((r->window + LEDGER_DAY_MS - 1) / LEDGER_DAY_MS);
		s->since = (ledger_day(now) - s->n + 1) * LEDGER_DAY_MS;
	} else {
		s->step = r->window / r->points;
		s->n = r->points;
		s->since = now - s->step * s->n;
	}
}

static json_t *
ui_series(const struct ui_series_req *r, int64_t now, char **cause)
{
	struct usage_series	 s;
	json_t			*series, *times, *a;
	u_int			 i, k;

	if (ledger_tick(server_ledger, now, cause) != 0)
		return (NULL);
	memset(&s, 0, sizeof s);
	s.by = r->by;
	s.only = r->only;
	ui_series_steps(r, now, &s);
	if (ledger_usage_series(server_ledger, &s, cause) != 0)
		return (NULL);
	times = json_array();
	for (i = 0; i < s.n; i++)
		json_array_append_new(times, json_integer(s.since +
		    s.step * i));
	series = json_object();
	for (k = 0; k < s.nkeys; k++) {
		a = json_array();
		for (i = 0; i < s.n; i++)
			json_array_append_new(a, json_real(
			    s.seat_ms[(size_t)k * s.n + i] / 100000.0));
		json_object_set_new(series, s.keys[k], a);
	}
	usage_series_free(&s);
	return (json_pack("{s:s,s:I,s:I,s:I,s:o,s:o}", "by",
	    usage_by_name(r->by), "since", (json_int_t)s.since, "until",
	    (json_int_t)now, "step_ms", (json_int_t)s.step, "times", times,
	    "share_seconds", series));
}

/* Reads ?window=&by=&points=; -1 with *cause (a 400). */
static int
ui_series_parse(struct evhttp_request *req, struct ui_series_req *r,
    char **cause)
{
	const char	*v;
	char		*end;
	unsigned long	 n;

	r->by = USAGE_OWNER;
	r->window = 3600 * 1000;
	r->points = UI_POINTS_DEFAULT;
	if ((v = api_query(req, "by")) != NULL && (usage_by_from_name(v,
	    &r->by, cause) != 0 || (r->by != USAGE_OWNER &&
	    r->by != USAGE_CARD))) {
		free(*cause);
		xasprintf(cause, "by: owner or card");
		return (-1);
	}
	if ((v = api_query(req, "window")) != NULL &&
	    (parse_duration(v, &r->window, cause) != 0 ||
	    r->window < UI_WINDOW_MIN_MS || r->window > UI_WINDOW_MAX_MS)) {
		free(*cause);
		xasprintf(cause, "window: a duration from 10s to 31d (like "
		    "1h)");
		return (-1);
	}
	if ((v = api_query(req, "points")) != NULL) {
		n = strtoul(v, &end, 10);
		if (*v < '1' || *v > '9' || *end != '\0' || n > UI_POINTS_MAX) {
			xasprintf(cause, "points: 1 to %d", UI_POINTS_MAX);
			return (-1);
		}
		r->points = (u_int)n;
	}
	return (0);
}

/* GET /v1/usage/series?window=1h&by=owner|card&points=60 */
void
api_usage_series(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ui_series_req	 r;
	json_t			*o;
	char			*cause = NULL;

	memset(&r, 0, sizeof r);
	if (ui_series_parse(req, &r, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if (!who->admin)
		r.only = xstrdup(who->owner);	/* by card too: its own use */
	if ((o = ui_series(&r, clock_ms(), &cause)) == NULL) {
		api_error(req, 500, "%s", cause);
		goto out;
	}
	api_reply(req, 200, o);
	json_decref(o);
out:
	free(r.only);
	free(cause);
}
