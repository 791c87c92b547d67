/*
 * ui-events.c: GET /v1/events, the dashboard's live feed, as server-sent
 * events (text/event-stream).  A stream opens with the cards' recent
 * history and the state now, then gets a "state" event whenever what its
 * owner may see changes (the cards as GET /v1/cards shows them, its jobs
 * as GET /v1/jobs does), and a "sample" of every card every two seconds,
 * which the page draws as sparklines.  The daemon looks for changes twice
 * a second (less often when a look costs more than a twentieth of that
 * time: many jobs) and sends only those: no client polls.  The history is kept
 * here, in memory, while the dashboard is on.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "gmux.h"
#include "ui-int.h"

#define UI_TICK_MS		500	/* how often changes are looked for */
#define UI_SAMPLE_MS		2000	/* a sample of the cards */
#define UI_SAMPLES		180	/* kept: six minutes */
#define UI_HEARTBEAT_MS		15000	/* a quiet stream says it lives */
#define UI_SUBS_MAX		64
#define UI_WRITE_TIMEOUT	60	/* seconds a client may not read */
#define UI_CHECK_SHARE		20	/* checks wait 20 times what one took */

struct ui_sub {
	struct evhttp_request	*req;
	char			*owner;		/* whose jobs; NULL: all */
	int			 tcp;		/* over TCP: token rechecked */
	int			 ungranted;	/* its token lacks this
						   member's cluster */
	char			*last;		/* the state last sent */
	int64_t			 sent;		/* when (monotonic ms) */
	TAILQ_ENTRY(ui_sub)	 entry;
};

static TAILQ_HEAD(, ui_sub) ui_subs = TAILQ_HEAD_INITIALIZER(ui_subs);
static u_int		 ui_nsubs;
static struct event	*ui_timer;
static json_t		*ui_ring[UI_SAMPLES];
static u_int		 ui_ring_next;
static int64_t		 ui_sampled;
static int64_t		 ui_check_at;	/* the next look for changes */

/* One sample of every card: what the bars show, for the sparklines. */
static json_t *
ui_sample(int64_t now)
{
	json_t	*cards = api_cards_json(), *a, *c, *o;
	size_t	 i;

	a = json_array();
	json_array_foreach(cards, i, c) {
		o = json_pack("{s:O,s:O,s:O,s:O}",
		    "guaranteed", json_object_get(c, "guaranteed"),
		    "burst", json_object_get(c, "burst"),
		    "mem_used", json_object_get(c, "mem_used"),
		    "util", json_object_get(c, "util"));
		json_array_append_new(a, o);
	}
	json_decref(cards);
	return (json_pack("{s:I,s:o}", "time", (json_int_t)now, "cards", a));
}

/*
 * The state owner may see now (NULL: every owner's), as JSON text: what
 * GET /v1/cards and GET /v1/jobs answer.  A token without this member's
 * cluster (ungranted) sees neither the cluster nor the local jobs that
 * run its jobs, as on those routes (cluster-grant.c).  Allocated.
 */
static char *
ui_state(const char *owner, int ungranted)
{
	struct job	*j;
	json_t		*jobs, *o;
	char		*text;

	jobs = json_array();
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (job_ended(j) || (owner != NULL &&
		    strcmp(owner, j->owner) != 0))
			continue;
		if (!ungranted || !cluster_grant_runs_cluster_job(j))
			json_array_append_new(jobs, job_to_json(j));
	}
	o = json_pack("{s:o,s:o,s:o}", "cards", api_cards_json(), "jobs", jobs,
	    "cluster", ungranted ? json_null() : ui_cluster());
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return (text);
}

/*
 * The states of one tick, each made once however many streams show it:
 * the cost of a tick is the jobs times the owners watching, not times the
 * streams.
 */
static struct ui_view {
	char	*owner;		/* NULL: every owner's */
	int	 ungranted;
	char	*text;
} ui_views[UI_SUBS_MAX];
static u_int	ui_nviews;

static const char *
ui_view(const char *owner, int ungranted)
{
	struct ui_view	*v;
	u_int		 i;

	for (i = 0; i < ui_nviews; i++) {
		v = &ui_views[i];
		if (v->ungranted == ungranted && (owner == NULL ?
		    v->owner == NULL : v->owner != NULL &&
		    strcmp(v->owner, owner) == 0))
			return (v->text);
	}
	v = &ui_views[ui_nviews++];
	v->owner = owner != NULL ? xstrdup(owner) : NULL;
	v->ungranted = ungranted;
	v->text = ui_state(owner, ungranted);
	return (v->text);
}

static void
ui_views_clear(void)
{
	u_int	 i;

	for (i = 0; i < ui_nviews; i++) {
		free(ui_views[i].owner);
		free(ui_views[i].text);
	}
	ui_nviews = 0;
}

static void
ui_send(struct ui_sub *sub, const char *event, const char *data)
{
	struct evbuffer	*b = evbuffer_new();

	evbuffer_add_printf(b, "event: %s\ndata: %s\n\n", event, data);
	evhttp_send_reply_chunk(sub->req, b);
	evbuffer_free(b);
	sub->sent = clock_mono_ms();
}

/* Sends sub its state if it changed since the last one it got. */
static void
ui_push_state(struct ui_sub *sub)
{
	const char	*text = ui_view(sub->owner, sub->ungranted);
	char		*msg;

	if (sub->last != NULL && strcmp(sub->last, text) == 0)
		return;
	free(sub->last);
	sub->last = xstrdup(text);
	/* The time it was seen goes first: {"time":MS,"cards":...}. */
	xasprintf(&msg, "{\"time\":%lld,%s", (long long)clock_ms(), text + 1);
	ui_send(sub, "state", msg);
	free(msg);
}

static void
ui_sub_free(struct ui_sub *sub)
{
	TAILQ_REMOVE(&ui_subs, sub, entry);
	ui_nsubs--;
	free(sub->owner);
	free(sub->last);
	free(sub);
}

static void
ui_closed(struct evhttp_connection *evcon, void *arg)
{
	struct ui_sub		*sub = arg;
	struct evhttp_request	*req = sub->req;

	ui_sub_free(sub);
	/* A reply not finished is left detached, and ours to end (follow.c). */
	if (evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
}

/* Ends a stream from this side (its token was revoked). */
static void
ui_end(struct ui_sub *sub)
{
	evhttp_connection_set_closecb(evhttp_request_get_connection(sub->req),
	    NULL, NULL);
	evhttp_send_reply_end(sub->req);
	ui_sub_free(sub);
}

/*
 * Is the token a TCP stream came with still good?  Its grants are read
 * again with it: a cluster revoked meanwhile is hidden from the next
 * state on.
 */
static int
ui_sub_valid(struct ui_sub *sub)
{
	const char		*h;
	struct tokens		*tk;
	const struct token	*t = NULL;

	if (!sub->tcp)
		return (1);
	h = evhttp_find_header(evhttp_request_get_input_headers(sub->req),
	    "Authorization");
	tk = server_tls_tokens(NULL);
	if (h != NULL && tk != NULL && strncmp(h, "Bearer ", 7) == 0)
		t = tokens_check(tk, h + 7);
	if (t == NULL)
		return (0);
	sub->ungranted = !cluster_grant_ok(t);
	return (1);
}

static void
ui_tick(evutil_socket_t fd, short events, void *arg)
{
	struct ui_sub	*sub, *next;
	json_t		*s = NULL;
	char		*text = NULL;
	int64_t		 now = clock_ms(), mono = clock_mono_ms(), took;
	int		 check;

	if (now - ui_sampled >= UI_SAMPLE_MS) {
		ui_sampled = now;
		s = ui_sample(now);
		json_decref(ui_ring[ui_ring_next]);
		ui_ring[ui_ring_next] = json_incref(s);
		ui_ring_next = (ui_ring_next + 1) % UI_SAMPLES;
		text = json_dumps(s, JSON_COMPACT);
	}
	check = mono >= ui_check_at;
	TAILQ_FOREACH_SAFE(sub, &ui_subs, entry, next) {
		if (!ui_sub_valid(sub)) {
			ui_end(sub);
			continue;
		}
		if (check)
			ui_push_state(sub);
		if (text != NULL)
			ui_send(sub, "sample", text);
		else if (mono - sub->sent >= UI_HEARTBEAT_MS)
			ui_send(sub, "heartbeat", "{}");
	}
	ui_views_clear();
	free(text);
	json_decref(s);
	/* Looking for changes takes at most a share of the loop's time. */
	took = clock_mono_ms() - mono;
	if (check)
		ui_check_at = mono + (took * UI_CHECK_SHARE > UI_TICK_MS ?
		    took * UI_CHECK_SHARE : 0);
}

/* Starts the sampler; the daemon calls it once, when the dashboard is on. */
void
ui_events_start(void)
{
	struct timeval	 tv = { 0, UI_TICK_MS * 1000 };

	if (ui_timer != NULL)
		return;
	ui_timer = event_new(server_base, -1, EV_PERSIST, ui_tick, NULL);
	if (ui_timer == NULL)
		fatalx("%s: event_new", __func__);
	event_add(ui_timer, &tv);
}

/* The samples kept, oldest first, as the stream's first event. */
static char *
ui_history(void)
{
	json_t	*a = json_array(), *o;
	char	*text;
	u_int	 i, k;

	for (i = 0; i < UI_SAMPLES; i++) {
		k = (ui_ring_next + i) % UI_SAMPLES;
		if (ui_ring[k] != NULL)
			json_array_append(a, ui_ring[k]);
	}
	o = json_pack("{s:i,s:o}", "step_ms", UI_SAMPLE_MS, "samples", a);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return (text);
}

/* GET /v1/events: the dashboard's stream (docs/api.md, docs/ui.md). */
void
api_events(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evhttp_connection	*evcon;
	struct timeval			 wtv = { UI_WRITE_TIMEOUT, 0 };
	struct ui_sub			*sub;
	struct evkeyvalq		*h;
	char				*text;

	if (!ui_on) {
		api_error(req, 404, "the dashboard is off (gmux serve --ui, "
		    "or UI=1 in the config)");
		return;
	}
	if (ui_nsubs >= UI_SUBS_MAX) {
		api_error(req, 503, "too many event streams (%u)", UI_SUBS_MAX);
		return;
	}
	sub = xcalloc(1, sizeof *sub);
	sub->req = req;
	/* What the stream needs of who: who lasts only during this call. */
	sub->owner = who->admin ? NULL : xstrdup(who->owner);
	sub->tcp = who->transport == API_TCP;
	sub->ungranted = who->ungranted;
	TAILQ_INSERT_TAIL(&ui_subs, sub, entry);
	ui_nsubs++;
	evcon = evhttp_request_get_connection(req);
	evhttp_connection_set_closecb(evcon, ui_closed, sub);
	bufferevent_set_timeouts(evhttp_connection_get_bufferevent(evcon),
	    NULL, &wtv);
	h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply_start(req, 200, "OK");
	text = ui_history();
	ui_send(sub, "history", text);
	free(text);
	ui_push_state(sub);
	ui_views_clear();
}
