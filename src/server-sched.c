/*
 * server-sched.c: the daemon's side of the scheduler.  sched.c is pure: it
 * is told what happens (a job submitted, gone, resized; the clock) and
 * answers with decisions.  This file turns jobs into requests and carries
 * the decisions out, in order: start a job, keep it waiting, refuse it,
 * preempt a victim, change a ceiling or a guarantee, requeue a victim.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

struct sched	*server_sched;

static int	server_sched_admit(struct job *, const struct sched_decision *);

int
server_sched_init(char **cause)
{
	uint64_t	*mem;
	u_int		 i;

	mem = xcalloc(server_cards.n + 1, sizeof *mem);
	for (i = 0; i < server_cards.n; i++)
		mem[i] = server_cards.v[i].memory;
	server_sched = sched_create(mem, server_cards.n, cause);
	free(mem);
	return (server_sched == NULL ? -1 : 0);
}

/* The job as the scheduler sees it. */
static void
server_sched_req(const struct job *j, struct sched_req *r)
{
	memset(r, 0, sizeof *r);
	r->id = j->id;
	r->seats = j->seats;
	r->mem = j->req.mem;	/* 0: the default, a share of each card */
	r->ncards = j->seats == 0 ? 0 : j->req.ncards;
	if (server_over_is(j))	/* nothing held: server-over.c's */
		r->seats = r->ncards = r->mem = 0;
	r->pin = j->req.card;
	r->prio = j->req.priority;
	r->flags = j->req.flags;
	r->submit = j->submit;
	r->timeout = j->req.timeout_ms;
	r->only = jobspec_host_cards(&j->req.spec);
}

static void
server_sched_queued(struct job *j, u_int pos, const char *why)
{
	log_debug("%s: %s #%u: %s", __func__, j->name, pos, why != NULL ?
	    why : j->reason != NULL ? j->reason : "");
	if (j->state == JOB_QUEUED && why == NULL) {
		job_save(j);	/* nothing a follower has not heard */
		return;
	}
	if (why != NULL) {
		free(j->reason);
		j->reason = xstrdup(why);
	}
	job_set_state(j, JOB_QUEUED, 0);
}

/* It will not run: a request refused, or one that waited too long. */
void
server_sched_refused(struct job *j, const char *why)
{
	free(j->reason);
	j->reason = xstrdup(why);
	j->ended = clock_ms();
	job_set_state(j, JOB_FAILED, 0);
}

/* Starts an admitted job; -1 if it failed (recorded, still on its cards). */
static int
server_sched_start(struct job *j)
{
	char	*cause = NULL;

	if (job_start(j, &cause) == 0) {
		/* What it waited for is over. */
		free(j->reason);
		j->reason = NULL;
		job_save(j);
		job_tell(j);	/* an attached run says it started */
		if (j->req.spec.array_of != 0)
			job_array_started(j);
		return (0);
	}
	log_warnx("%s: %s: %s", __func__, j->name, cause);
	free(j->reason);
	j->reason = cause;
	j->ended = clock_ms();
	job_set_state(j, JOB_FAILED, JOB_QUIET);	/* told once it left */
	return (-1);
}

/* A job that failed to start leaves the scheduler; its room goes back. */
static void
server_sched_start_failed(u_int id)
{
	struct sched_out	 out;
	struct job		*j;

	memset(&out, 0, sizeof out);
	if ((j = job_find_id(id)) != NULL)
		server_over_release(j);
	sched_end(server_sched, id, clock_ms(), &out);
	server_sched_apply(&out);
	sched_out_free(&out);
	if ((j = job_find_id(id)) != NULL)
		job_tell(j);
}

static void
server_sched_terms(struct job *j, const struct sched_decision *d)
{
	const struct card	*c;

	if (d->card < 0 || (u_int)d->card >= server_cards.n)
		return;
	c = &server_cards.v[d->card];
	j->seats = d->seats;
	job_set_terms(j, (u_int)d->card, d->ceiling, d->mem);
	if (j->state != JOB_RUNNING)
		return;
	enforce_set(j->id, c, d->seats, d->ceiling, d->mem);
	job_account(j, clock_ms());
	job_save(j);
}

/*
 * Carries out the decisions in order, then empties out.  A job that fails
 * to start leaves the scheduler only after the last of them: they were
 * decided with it on its cards (a ceiling raised to what was idle beside
 * it), and what its end decides must come after them, not be overwritten
 * by them.
 */
void
server_sched_apply(struct sched_out *out)
{
	const struct sched_decision	*d;
	struct job			*j;
	u_int				 i, nfailed = 0, *failed = NULL;

	for (i = 0; i < out->n; i++) {
		d = &out->v[i];
		if ((j = job_find_id(d->job)) == NULL)
			continue;
		log_debug("%s: %s act %d card %d seats %u ceiling %u", __func__,
		    j->name, d->act, d->card, d->seats, d->ceiling);
		switch (d->act) {
		case SCHED_ADMIT:
			if (server_sched_admit(j, d) != 0 || ((i + 1 ==
			    out->n || out->v[i + 1].act != SCHED_ADMIT ||
			    out->v[i + 1].job != d->job) &&
			    server_sched_start(j) != 0)) {
				failed = xreallocarray(failed, nfailed + 1,
				    sizeof *failed);
				failed[nfailed++] = j->id;
			}
			break;
		case SCHED_QUEUE:
		case SCHED_REQUEUE:
			server_sched_queued(j, d->pos, d->reason);
			break;
		case SCHED_REFUSE:
			server_sched_refused(j, d->reason);
			break;
		case SCHED_PREEMPT:
			j->by = d->by;
			j->by_card = d->card;
			free(j->reason);
			j->reason = xstrdup(d->reason);
			job_save(j);
			job_stop(j, j->req.grace_ms, "preempted");
			break;
		case SCHED_CEILING:
		case SCHED_RESIZE:
			server_sched_terms(j, d);
			break;
		}
	}
	sched_out_clear(out);
	for (i = 0; i < nfailed; i++)
		server_sched_start_failed(failed[i]);
	free(failed);
}

/* Puts j on its cards; -1 if an overcommitted job's are not free now. */
static int
server_sched_admit(struct job *j, const struct sched_decision *d)
{
	char	*cause = NULL;

	j->cards = d->cards;
	j->seats = d->seats;
	if (d->card < 0) {
		j->card = -1;
		j->mem = 0;
		if (server_over_is(j) && server_over_admit(j, &cause) != 0) {
			server_sched_refused(j, cause);
			free(cause);
			return (-1);
		}
		return (0);
	}
	job_set_terms(j, (u_int)d->card, d->ceiling, d->mem);
	if (j->card < 0 || d->card < j->card)
		j->card = d->card;
	return (0);
}

/* The job as the scheduler sees it, its card named by uuid found. */
static int
server_sched_new(struct job *j, u_int id, struct sched_req *r, int *code,
    char **cause)
{
	struct card	*c;

	if (jobspec_host_check(j, code, cause) != 0 ||
	    server_over_check(j, code, cause) != 0)
		return (-1);
	if (j->req.card_uuid != NULL) {
		if ((c = cards_find(&server_cards, j->req.card_uuid)) == NULL) {
			xasprintf(cause, "card: no card '%s'",
			    j->req.card_uuid);
			*code = 422;
			return (-1);
		}
		j->req.card = (int)c->index;
	}
	server_sched_req(j, r);
	r->id = id;
	return (0);
}

/* A refusal's status: 422 if no card could ever hold r, else 409. */
static int
server_sched_code(const struct sched_req *r)
{
	char	*never = sched_explain_impossible(server_sched, r);
	int	 code = never != NULL ? 422 : 409;

	free(never);
	return (code);
}

/*
 * Would a new job be refused now?  0 if not; else -1 with *code and *cause
 * as server_sched_submit.  (A remote job asks before its files are copied,
 * and is submitted once they are.)
 */
int
server_sched_check(struct job *j, u_int id, int *code, char **cause)
{
	struct sched_req	 r;

	if (tenant_check(j, code, cause) != 0 ||
	    server_sched_new(j, id, &r, code, cause) != 0)
		return (-1);
	if ((*cause = sched_refusal(server_sched, &r)) == NULL)
		return (0);
	*code = server_sched_code(&r);
	return (-1);
}

/*
 * Hands a job the tenants' gate let through to the scheduler.  Returns 0
 * if it runs or waits; -1 if refused, with *cause and *code: 422 if no
 * card could ever hold it, 409 if it does not fit now and may not wait.
 */
int
server_sched_enter(struct job *j, int *code, char **cause)
{
	struct sched_out	 out;
	struct sched_req	 r;

	if (server_sched_new(j, j->id, &r, code, cause) != 0)
		return (-1);
	r.submit = j->submit;
	memset(&out, 0, sizeof out);
	if (sched_submit(server_sched, &r, j->submit, &out) != 0) {
		*code = server_sched_code(&r);
		xasprintf(cause, "%s", out.n > 0 && out.v[out.n - 1].reason !=
		    NULL ? out.v[out.n - 1].reason : "it does not fit now");
		sched_out_free(&out);
		return (-1);
	}
	job_set_id(j, j->id);
	server_sched_apply(&out);
	sched_out_free(&out);
	return (0);
}

/* A job waits at the tenants' gate, queued with why. */
void
server_sched_hold(struct job *j, const char *why)
{
	server_sched_queued(j, 0, why);
}

/*
 * Submits a new job (id 0 until it is kept): through its owner's quotas
 * (tenant-quota.c), then to the scheduler.  Returns 0 if it runs or
 * waits; -1 if refused, with *cause and *code as server_sched_enter.
 */
int
server_sched_submit(struct job *j, u_int id, int *code, char **cause)
{
	int	 rc;

	/* An array's element waits with its array's age, as one job. */
	j->submit = clock_ms();
	if (j->req.spec.array_submit != 0 &&
	    j->req.spec.array_submit < j->submit)
		j->submit = j->req.spec.array_submit;
	if ((rc = tenant_admit(j, code, cause)) == -1)
		return (-1);
	if (rc == 1) {
		job_set_id(j, id);
		tenant_hold(j);
		server_sched_hold(j, *cause);
		free(*cause);
		*cause = NULL;
		return (0);
	}
	/* Saved by what happens to it: queued, started (or failed). */
	j->id = id;
	if (server_sched_enter(j, code, cause) != 0) {
		j->id = 0;
		return (-1);
	}
	return (0);
}

/* Removes the decisions that would put job id back in the queue. */
static void
server_sched_drop(struct sched_out *out, u_int id)
{
	u_int	 i, n = 0;

	for (i = 0; i < out->n; i++) {
		if (out->v[i].job == id && (out->v[i].act == SCHED_REQUEUE ||
		    out->v[i].act == SCHED_QUEUE)) {
			free(out->v[i].reason);
			continue;
		}
		out->v[n++] = out->v[i];
	}
	out->n = n;
}

/*
 * Tells the scheduler the job is gone from the cards or the queue (ended,
 * stopped, cancelled); what that frees is decided into out, which the
 * caller carries out (server_sched_apply) once it has recorded the end.
 * Returns 1 if the job was a --requeue victim of preemption and waits
 * again; a job someone stopped meanwhile is not requeued: it is stopped.
 */
int
server_sched_release(struct job *j, enum job_state how,
    struct sched_out *out)
{
	int	 rc;

	server_over_release(j);
	rc = sched_end(server_sched, j->id, clock_ms(), out);
	if (rc == 1 && (j->stopping || how == JOB_STOPPED)) {
		/* Out of the queue again, and forget what requeued it. */
		sched_end(server_sched, j->id, clock_ms(), out);
		server_sched_drop(out, j->id);
		rc = 0;
	}
	return (rc);
}

/* The same, carried out at once (a cancel: nothing to record first). */
int
server_sched_gone(struct job *j)
{
	struct sched_out	 out;
	int			 rc;

	memset(&out, 0, sizeof out);
	if ((rc = server_sched_release(j, j->state, &out)) == 1)
		job_requeue(j);
	server_sched_apply(&out);
	sched_out_free(&out);
	return (rc);
}

/* Grows or shrinks a running job; -1 with *cause if growing cannot fit. */
int
server_sched_resize(struct job *j, u_int seats, uint64_t mem, char **cause)
{
	struct sched_out	 out;
	int			 rc;

	memset(&out, 0, sizeof out);
	rc = sched_resize(server_sched, j->id, seats, mem, clock_ms(), &out,
	    cause);
	if (rc == 0) {
		j->req.seats = seats;
		j->req.mem = mem;
		if (j->state == JOB_QUEUED) {
			j->seats = seats;
			j->mem = mem;
		}
		server_sched_apply(&out);
		job_save(j);
	}
	sched_out_free(&out);
	return (rc);
}

/* Once a second: queued jobs past their --timeout are refused. */
void
server_sched_tick(void)
{
	struct sched_out	 out;

	memset(&out, 0, sizeof out);
	sched_tick(server_sched, clock_ms(), &out);
	server_sched_apply(&out);
	sched_out_free(&out);
}

/*
 * After a restart: every job not ended goes back into the scheduler as it
 * was (running ones on their cards).  A queued job that can no longer be
 * is refused; a running one (its cards are gone, or smaller than it holds)
 * is marked to be stopped once its keeper is back (server_sched_resume).
 */
void
server_sched_restore(void)
{
	struct sched_req	 r;
	struct sched_run	 run;
	struct job		*j;
	char			*cause;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (job_ended(j))
			continue;
		/* Held at its owner's quota: weighed again at the next tick. */
		if (j->state == JOB_QUEUED && tenant_held(j))
			continue;
		server_sched_req(j, &r);
		memset(&run, 0, sizeof run);
		run.cards = j->cards;
		run.start = j->started;
		run.by = j->by;
		run.by_card = j->by_card;
		cause = NULL;
		if (sched_restore(server_sched, &r, j->state == JOB_RUNNING ?
		    &run : NULL, &cause) == 0) {
			server_over_restore(j);
			continue;
		}
		log_warnx("%s: %s: %s", __func__, j->name, cause);
		if (j->state == JOB_QUEUED)
			server_sched_refused(j, cause);
		else {
			j->unplaced = 1;
			free(j->reason);
			xasprintf(&j->reason, "stopped after a restart: %s",
			    cause);
		}
		free(cause);
	}
}

/*
 * Once the keepers are back: a running job the scheduler could not take
 * back holds room nobody accounts for, so it is stopped at once (it ends
 * failed, with its reason); then one pass admits what fits and tells every
 * running job its ceiling again.
 */
void
server_sched_resume(void)
{
	struct sched_out	 out;
	struct job		*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->unplaced && j->state == JOB_RUNNING)
			job_stop(j, 0, "stopped");
	}
	memset(&out, 0, sizeof out);
	sched_pass(server_sched, clock_ms(), &out);
	server_sched_apply(&out);
	sched_out_free(&out);
}

/*
 * Where a queued job is now: its place in the queue and what it waits for
 * (allocated).  Both change as other jobs come and go, so they are asked
 * of the scheduler, never kept.  -1 if the scheduler does not know it.
 */
int
server_sched_where(const struct job *j, u_int *pos, char **why)
{
	const struct sched_job	*sj;

	if (server_sched == NULL || j->state != JOB_QUEUED ||
	    (sj = sched_find(server_sched, j->id)) == NULL ||
	    sj->state != SCHED_QUEUED)
		return (-1);
	*pos = sched_queue_position(server_sched, sj);
	*why = sched_explain_reason(server_sched, sj);
	return (0);
}

/* A card's admitted seats and memory, and the seats bursting above. */
void
server_sched_card(u_int c, u_int *seats, uint64_t *mem, u_int *burst)
{
	const struct sched_card	*sc = &server_sched->card[c];
	struct job		*j;

	*seats = sc->used;
	*mem = sc->mem_used;
	*burst = 0;
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state == JOB_RUNNING && (j->cards & (1ULL << c)) &&
		    j->ceil != NULL && j->ceil[c] > j->seats)
			*burst += j->ceil[c] - j->seats;
	}
}
