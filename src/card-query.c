/*
 * card-query.c: asking the drivers, while the daemon runs, which processes
 * hold each real card (the audit behind enforcement) and how busy each
 * card is (gmux top).  cards_procs and cards_usage wait for the tools;
 * cards_procs_start and cards_usage_start run them on the daemon's loop
 * and call back once all have answered, so the loop never waits for a
 * driver.  Both read the answers with the same vendor parsers.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

/* The vendors whose tools report processes and use (not Intel's). */
#define CQ_VENDORS	2
static const enum vendor cq_vendors[CQ_VENDORS] = {
	VENDOR_NVIDIA, VENDOR_AMD
};

struct cards_query {
	enum card_query		 q;
	const struct cards	*cs;
	struct card_procs	 ps;
	struct card_usages	 us;
	char			*cause;		/* the first tool's failure */
	char			*out[CQ_VENDORS];	/* each one's answer */
	char			*why[CQ_VENDORS];	/* or why it has none */
	u_int			 pending;	/* tools still running */
	cards_procs_cb		 procs_cb;
	cards_usage_cb		 usage_cb;
	void			*arg;
};

/* One tool's run within a query. */
struct cards_query_tool {
	struct cards_query	*cq;
	u_int			 i;		/* in cq_vendors */
};

/* Finds the real card a tool names by its index or UUID; -1 if none. */
static int
cards_match(const struct cards *cs, enum vendor v, int vendor_index,
    const char *uuid)
{
	const struct card	*c;
	u_int			 i;

	for (i = 0; i < cs->n; i++) {
		c = &cs->v[i];
		if (c->fake || c->vendor != v)
			continue;
		if (uuid != NULL && c->uuid != NULL &&
		    strcasecmp(c->uuid, uuid) == 0)
			return ((int)i);
		if (uuid == NULL && vendor_index >= 0 &&
		    c->vendor_index == vendor_index)
			return ((int)i);
	}
	return (-1);
}

static int
cards_have(const struct cards *cs, enum vendor v)
{
	u_int	 i;

	for (i = 0; i < cs->n; i++) {
		if (!cs->v[i].fake && cs->v[i].vendor == v)
			return (1);
	}
	return (0);
}

/* Keeps the first failure (the query owns why from here). */
static void
cq_fail(struct cards_query *cq, char *why)
{
	if (cq->cause == NULL)
		cq->cause = why;
	else
		free(why);
}

static char *const *
cq_argv(enum vendor v, enum card_query q)
{
	return (v == VENDOR_NVIDIA ? card_nvidia_argv(q) : card_amd_argv(q));
}

/* Reads one tool's answer into the query's list. */
static void
cq_parse(struct cards_query *cq, enum vendor v, const char *out)
{
	char	*why = NULL;
	int	 rc;

	if (v == VENDOR_NVIDIA && cq->q == CARD_QUERY_PROCS)
		rc = card_nvidia_parse_apps(out, &cq->ps, &why);
	else if (v == VENDOR_NVIDIA)
		rc = card_nvidia_parse_usage(out, &cq->us, &why);
	else if (cq->q == CARD_QUERY_PROCS)
		rc = card_amd_parse_procs(out, &cq->ps, &why);
	else
		rc = card_amd_parse_usage(out, &cq->us, &why);
	if (rc != 0)
		cq_fail(cq, why);
}

/* Gives each process or figure the gmux index of the card it is on. */
static void
cq_match(struct cards_query *cq)
{
	struct card_proc	*p;
	struct card_usage	*u;
	u_int			 i;

	for (i = 0; i < cq->ps.n; i++) {
		p = &cq->ps.v[i];
		p->card = cards_match(cq->cs, p->vendor, p->vendor_index,
		    p->uuid);
	}
	for (i = 0; i < cq->us.n; i++) {
		u = &cq->us.v[i];
		u->card = cards_match(cq->cs, u->vendor, u->vendor_index, NULL);
	}
}

/*
 * Reads the answers in the order of cq_vendors, whichever came first, so
 * the lists come out the same waiting or not; then matches them to cards.
 */
static void
cq_read(struct cards_query *cq)
{
	u_int	 i;

	for (i = 0; i < nitems(cq_vendors); i++) {
		if (cq->why[i] != NULL)
			cq_fail(cq, cq->why[i]);
		else if (cq->out[i] != NULL)
			cq_parse(cq, cq_vendors[i], cq->out[i]);
		free(cq->out[i]);
		cq->out[i] = cq->why[i] = NULL;
	}
	cq_match(cq);
}

/*
 * Runs the tools for q one after the other, waiting for each, and adds
 * what they report to ps or us (the one q fills).
 */
static int
cq_wait(const struct cards *cs, enum card_query q, struct card_procs *ps,
    struct card_usages *us, char **cause)
{
	struct cards_query	 cq;
	u_int			 i;

	memset(&cq, 0, sizeof cq);
	cq.q = q;
	cq.cs = cs;
	if (ps != NULL)
		cq.ps = *ps;
	if (us != NULL)
		cq.us = *us;
	for (i = 0; i < nitems(cq_vendors); i++) {
		if (cards_have(cs, cq_vendors[i]))
			card_tool_output(cq_argv(cq_vendors[i], q), &cq.out[i],
			    &cq.why[i]);
	}
	cq_read(&cq);
	if (ps != NULL)
		*ps = cq.ps;
	if (us != NULL)
		*us = cq.us;
	*cause = cq.cause;
	return (cq.cause == NULL ? 0 : -1);
}

/*
 * Fills ps with the processes the drivers report on the real cards of cs,
 * each matched to its card (fake cards have none).  Returns -1 with *cause
 * if a vendor's tool failed; ps still holds what the others reported.
 * Waits for the tools: not for the daemon's loop (cards_procs_start).
 */
int
cards_procs(const struct cards *cs, struct card_procs *ps, char **cause)
{
	return (cq_wait(cs, CARD_QUERY_PROCS, ps, NULL, cause));
}

/*
 * Fills us with the measured use of the real cards of cs, as cards_procs
 * does for processes.
 */
int
cards_usage(const struct cards *cs, struct card_usages *us, char **cause)
{
	return (cq_wait(cs, CARD_QUERY_USAGE, NULL, us, cause));
}

static void
cq_finish(struct cards_query *cq)
{
	cq_read(cq);
	if (cq->q == CARD_QUERY_PROCS)
		cq->procs_cb(&cq->ps, cq->cause, cq->arg);
	else
		cq->usage_cb(&cq->us, cq->cause, cq->arg);
	card_procs_free(&cq->ps);
	card_usages_free(&cq->us);
	free(cq->cause);
	free(cq);
}

static void
cq_tool_done(char *out, char *cause, void *arg)
{
	struct cards_query_tool	*t = arg;
	struct cards_query	*cq = t->cq;

	cq->out[t->i] = out;
	cq->why[t->i] = cause;
	free(t);
	if (--cq->pending == 0)
		cq_finish(cq);
}

/* Starts the query's tools together; see cards_procs_start. */
static int
cq_start(struct cards_query *cq, char **cause)
{
	struct cards_query_tool	*t;
	char			*why;
	u_int			 i;
	int			 rc;

	for (i = 0; i < nitems(cq_vendors); i++) {
		if (!cards_have(cq->cs, cq_vendors[i]))
			continue;
		t = xmalloc(sizeof *t);
		t->cq = cq;
		t->i = i;
		why = NULL;
		rc = card_tool_start(cq_argv(cq_vendors[i], cq->q),
		    cq_tool_done, t, &why);
		if (rc == 0) {
			cq->pending++;
			continue;
		}
		free(t);
		if (rc == -1)
			cq->why[i] = why;
	}
	if (cq->pending != 0)
		return (0);
	cq_read(cq);
	rc = cq->cause != NULL ? -1 : 1;
	*cause = cq->cause;
	free(cq);
	return (rc);
}

static struct cards_query *
cq_new(const struct cards *cs, enum card_query q, void *arg)
{
	struct cards_query	*cq = xcalloc(1, sizeof *cq);

	cq->q = q;
	cq->cs = cs;
	cq->arg = arg;
	return (cq);
}

/*
 * Asks the drivers which processes hold the real cards of cs, on the loop
 * (proc_async_start), and returns at once: 0 if it asked, and then
 * cb(ps, cause, arg) is called once all the tools have answered, with the
 * processes matched to their cards as cards_procs gives them and cause the
 * first tool's failure or NULL (both are freed when cb returns); 1 if
 * there was no one to ask (no real NVIDIA or AMD card, or no tool); -1
 * with *cause if no tool could be started.  cs must outlive the query.
 */
int
cards_procs_start(const struct cards *cs, cards_procs_cb cb, void *arg,
    char **cause)
{
	struct cards_query	*cq = cq_new(cs, CARD_QUERY_PROCS, arg);

	cq->procs_cb = cb;
	return (cq_start(cq, cause));
}

/*
 * The same for the cards' measured use (what cards_usage gives), for
 * gmux top: cb(us, cause, arg).
 */
int
cards_usage_start(const struct cards *cs, cards_usage_cb cb, void *arg,
    char **cause)
{
	struct cards_query	*cq = cq_new(cs, CARD_QUERY_USAGE, arg);

	cq->usage_cb = cb;
	return (cq_start(cq, cause));
}
