/*
 * tenant-quota.c: a tenant's quotas at a job's submission
 * (docs/tenants.md).  A job no quota of its owner could ever hold is
 * refused; one that does not fit beside its owner's jobs now is held
 * here, queued with the reason, out of the scheduler's reach, and handed
 * to it once they leave room (checked each second, in submission order).
 * The scheduler itself stays pure and knows nothing of owners.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "tenant-int.h"

static u_int	*tq_held;		/* job ids, in submission order */
static u_int	 tq_nheld;

struct tq_use {
	u_int		 jobs;
	u_int		 seats;		/* guarantees, over all its cards */
	uint64_t	 mem;
};

static int
tq_is_held(u_int id)
{
	u_int	 i;

	for (i = 0; i < tq_nheld; i++) {
		if (tq_held[i] == id)
			return (1);
	}
	return (0);
}

static u_int
tq_seats(const struct jobreq *r)
{
	return (r->seats * (r->seats == 0 ? 0 : r->ncards));
}

/*
 * What j's memory counts toward its owner's --mem: its caps once placed;
 * while it waits, what it asks of each card, or without --mem its default
 * cap (its share of a card's memory) on the largest card (its card is not
 * known yet: the most it may get), times its cards.
 */
static uint64_t
tq_mem(const struct job *j)
{
	const struct jobreq	*r = &j->req;
	uint64_t		 per = r->mem, most = 0;
	u_int			 i;

	if (j->state == JOB_RUNNING)
		return (j->mem * (uint64_t)__builtin_popcountll(j->cards));
	if (per == 0 && r->seats != 0) {
		for (i = 0; i < server_cards.n; i++) {
			if (server_cards.v[i].memory > most)
				most = server_cards.v[i].memory;
		}
		per = most * r->seats / 100;
	}
	return (per * (r->ncards == 0 ? 1 : r->ncards));
}

/* What owner's jobs past this gate (running or in the scheduler) hold. */
static void
tq_use(const char *owner, const struct job *self, struct tq_use *u)
{
	struct job	*j;

	memset(u, 0, sizeof *u);
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j == self || job_ended(j) || strcmp(j->owner, owner) != 0 ||
		    (j->state == JOB_QUEUED && tq_is_held(j->id)))
			continue;
		u->jobs++;
		u->seats += tq_seats(&j->req);
		u->mem += tq_mem(j);
	}
}

/* Could t's quotas ever hold j?  -1 with *cause if not. */
static int
tq_never(const struct tenant *t, const struct job *j, char **cause)
{
	char	*a, *b;

	if (t->q_share != 0 && tq_seats(&j->req) > t->q_share) {
		a = format_share(t->q_share);
		b = format_share(tq_seats(&j->req));
		xasprintf(cause, "quota: %s's share is %s cards; the job asks "
		    "%s", t->name, a, b);
	} else if (t->q_mem != 0 && tq_mem(j) > t->q_mem) {
		a = format_size(t->q_mem);
		b = format_size(tq_mem(j));
		xasprintf(cause, "quota: %s's memory is %s; the job asks %s",
		    t->name, a, b);
	} else
		return (0);
	free(a);
	free(b);
	return (-1);
}

/* Is t's home over its limit?  -1 with *cause if it is. */
static int
tq_disk(const struct tenant *t, char **cause)
{
	uint64_t	 limit = tenant_disk_limit(t);
	char		*a, *b;

	if (limit == 0 || t->disk_at == 0 || t->disk_used <= limit)
		return (0);
	a = format_size(t->disk_used);
	b = format_size(limit);
	xasprintf(cause, "quota: %s's home holds %s, its limit is %s (--disk)",
	    t->name, a, b);
	free(a);
	free(b);
	return (-1);
}

/* Does j fit beside its owner's jobs now?  0, or 1 with *cause. */
static int
tq_now(const struct tenant *t, const struct job *j, char **cause)
{
	struct tq_use	 u;
	char		*a;

	tq_use(t->name, j, &u);
	if (t->q_jobs != 0 && u.jobs + 1 > t->q_jobs) {
		xasprintf(cause, "quota: %s runs %u jobs, its limit (--jobs "
		    "%u)", t->name, u.jobs, t->q_jobs);
		return (1);
	}
	if (t->q_share != 0 && u.seats + tq_seats(&j->req) > t->q_share) {
		a = format_share(t->q_share);
		xasprintf(cause, "quota: %s's jobs hold its share (--share "
		    "%s)", t->name, a);
		free(a);
		return (1);
	}
	if (t->q_mem != 0 && u.mem + tq_mem(j) > t->q_mem) {
		a = format_size(t->q_mem);
		xasprintf(cause, "quota: %s's jobs hold its memory (--mem %s)",
		    t->name, a);
		free(a);
		return (1);
	}
	return (0);
}

/*
 * Refusals only, before a remote job's files are sent: 0, or -1 with
 * *code and *cause.
 */
int
tenant_check(const struct job *j, int *code, char **cause)
{
	struct tenant	*t;
	char		*python;

	if (tenant_owner_ok(j->owner, cause) != 0) {
		*code = 422;
		return (-1);
	}
	if (j->req.spec.python != NULL) {
		if (tenant_python(j->req.spec.python, &python, cause) != 0) {
			*code = 422;
			return (-1);
		}
		free(python);
	}
	if ((t = tenant_find(j->owner)) == NULL)
		return (0);
	if (tq_never(t, j, cause) != 0) {
		*code = 422;
		return (-1);
	}
	if (tq_disk(t, cause) != 0) {
		*code = 409;
		return (-1);
	}
	return (0);
}

/*
 * A new job at the gate: 0 if it goes to the scheduler; 1 if it is held
 * (queued, *cause its reason); -1 if refused (*code, *cause).  Its
 * owner's account is made from here on its first job: held meanwhile,
 * even with --nowait (it is no question of fitting).
 */
int
tenant_admit(struct job *j, int *code, char **cause)
{
	struct tenant	*t;
	uid_t		 uid;
	gid_t		 gid;
	char		*home;
	int		 rc;

	if (tenant_check(j, code, cause) != 0)
		return (-1);
	rc = tenant_account(j->owner, &uid, &gid, &home, cause);
	free(home);
	if (rc == -1) {
		*code = 422;
		return (-1);
	}
	if (rc == 2)
		return (1);	/* its UID or account on the way: not a fit */
	if ((t = tenant_find(j->owner)) == NULL)
		return (0);
	if (tq_now(t, j, cause) == 0) {
		t->active = clock_ms();
		return (0);
	}
	if (j->req.flags & JOB_NOWAIT) {
		*code = 409;
		return (-1);
	}
	return (1);
}

/* j waits at the gate (server_sched_submit made it queued). */
void
tenant_hold(struct job *j)
{
	tq_held = xreallocarray(tq_held, tq_nheld + 1, sizeof *tq_held);
	tq_held[tq_nheld++] = j->id;
}

/*
 * After a restart: was queued j held at the gate (its reason is the
 * gate's)?  Then it is held again, and 1.
 */
int
tenant_held(struct job *j)
{
	if (j->reason == NULL || (strncmp(j->reason, "quota: ", 7) != 0 &&
	    strncmp(j->reason, "tenant: ", 8) != 0))
		return (0);
	tenant_hold(j);
	return (1);
}

/*
 * Once a second, and when an owner's account or UID is there: held jobs
 * that fit now go to the scheduler.  Never within itself.
 */
void
tenant_quota_tick(void)
{
	static int	 busy;
	struct job	*j;
	char		*cause = NULL;
	u_int		 i, n = 0, id;
	int		 code, rc;

	if (busy)
		return;
	busy = 1;
	for (i = 0; i < tq_nheld; i++) {
		id = tq_held[i];
		if ((j = job_find_id(id)) == NULL || j->state != JOB_QUEUED)
			continue;	/* stopped meanwhile: dropped */
		tq_held[i] = 0;		/* not held while it is weighed */
		rc = tenant_admit(j, &code, &cause);
		if (rc == 1) {
			tq_held[n++] = id;
			if (j->reason == NULL || strcmp(j->reason, cause) != 0)
				server_sched_hold(j, cause);
		} else if (rc == -1)
			server_sched_refused(j, cause);
		else if (server_sched_enter(j, &code, &cause) != 0)
			server_sched_refused(j, cause);
		free(cause);
		cause = NULL;
	}
	tq_nheld = n;
	busy = 0;
}
