/*
 * audit.c: the check behind the trust model.  libgmux.so counts only in
 * processes that load it; a job that clears LD_PRELOAD before starting a
 * child escapes it.  So the daemon asks the driver which processes hold
 * each real card (nvidia-smi, amd-smi, through cards_procs_start: on the
 * loop, never waiting for the tool) and compares with the processes
 * registered in the shared region: a GPU process of a job that never
 * registered is an offender, to be reported and stopped (or reported only,
 * by policy).  A job whose processes hold more than its cap by the
 * driver's own count is reported too: on each of its cards, and in all.
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "../shim/region.h"

#define AUDIT_DEPTH	64		/* parents walked to find the keeper */
#define AUDIT_CONTEXT	(1ULL << 30)	/* a CUDA context's memory, roughly */

static int	 audit_running;		/* a scan is in flight */
static audit_cb	 audit_done_cb;
static void	*audit_done_arg;

static void	audit_enforce(const struct audit_offender *, u_int, int);

/* Which running job owns pid: a keeper among its ancestors, else -1. */
static int
audit_owner(pid_t pid, const struct audit_job *jobs, u_int njobs,
    pid_t (*parent)(pid_t))
{
	u_int	 d, k;

	for (d = 0; d < AUDIT_DEPTH && pid > 1; d++) {
		for (k = 0; k < njobs; k++) {
			if (jobs[k].keeper == pid)
				return ((int)k);
		}
		pid = parent(pid);
	}
	return (-1);
}

static struct audit_offender *
audit_offend(struct audit_offender **o, u_int *n, u_int job, pid_t pid,
    int stop, const char *why)
{
	*o = xreallocarray(*o, *n + 1, sizeof **o);
	(*o)[*n].job = job;
	(*o)[*n].pid = pid;
	(*o)[*n].card = -1;
	(*o)[*n].stop = stop;
	(*o)[*n].why = why;
	return (&(*o)[(*n)++]);
}

/*
 * Says whether ps lists entry i's process before i (some amd-smi versions
 * list a process under every GPU it has opened, with its whole VRAM on
 * each).
 */
static int
audit_seen(const struct card_procs *ps, u_int i)
{
	u_int	 k;

	for (k = 0; k < i; k++) {
		if (ps->v[k].pid == ps->v[i].pid)
			return (1);
	}
	return (0);
}

/* The largest memory the driver gives for entry i's process; 0 if none. */
static uint64_t
audit_mem(const struct card_procs *ps, u_int i)
{
	uint64_t	 most = 0;
	u_int		 k;

	for (k = i; k < ps->n; k++) {
		if (ps->v[k].pid == ps->v[i].pid &&
		    ps->v[k].mem != CARD_UNKNOWN && ps->v[k].mem > most)
			most = ps->v[k].mem;
	}
	return (most);
}

/* Whether ps lists entry i's process on entry i's card before i. */
static int
audit_seen_on_card(const struct card_procs *ps, u_int i)
{
	u_int	 k;

	for (k = 0; k < i; k++) {
		if (ps->v[k].pid == ps->v[i].pid &&
		    ps->v[k].card == ps->v[i].card)
			return (1);
	}
	return (0);
}

/*
 * Reports job (jobs[k]; owner[i] is the job of ps entry i) over its cap on
 * any one of its cards, by what the driver gives for its processes on that
 * card, each once.  (The amd-smi versions that give a process's whole VRAM
 * on every card it opened make this an overcount: the report is only
 * indicative.)  Returns how many cards it reported.
 */
static u_int
audit_cards(const struct card_procs *ps, const struct audit_job *job, int k,
    const int *owner, struct audit_offender **out, u_int *n)
{
	struct audit_offender	*o;
	uint64_t		 held, m;
	u_int			 i, count, c, over = 0;

	for (m = job->cards; job->cmem != NULL && m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		if (job->cmem[c] == 0)
			continue;
		held = count = 0;
		for (i = 0; i < ps->n; i++) {
			if (owner[i] != k || ps->v[i].card != (int)c ||
			    audit_seen_on_card(ps, i))
				continue;
			if (ps->v[i].mem != CARD_UNKNOWN)
				held += ps->v[i].mem;
			count++;
		}
		if (held > job->cmem[c] + count * AUDIT_CONTEXT) {
			o = audit_offend(out, n, job->id, 0, 0, "holds more "
			    "than its memory cap by the driver's count");
			o->card = (int)c;
			over++;
		}
	}
	return (over);
}

/*
 * Compares the driver's GPU processes (from cards_procs or the parsers)
 * with the region.  parent gives a process's parent (audit_parent in the
 * daemon); registered says whether a pid counts in the region.  Returns
 * the offenders (the caller frees *out): each unregistered GPU process of
 * a job (stop = 1), and a job whose processes hold more than its cap plus
 * a context's worth each (stop = 0: the driver's per-process figures are
 * only indicative), on one of its cards (each card's cap) or else in all
 * (the sum of its caps).  In all, a process listed on several cards counts
 * once, with its largest figure; one whose memory is not reported counts
 * none.
 */
u_int
audit_check(const struct card_procs *ps, const struct audit_job *jobs,
    u_int njobs, pid_t (*parent)(pid_t), int (*registered)(pid_t, u_int *),
    struct audit_offender **out)
{
	uint64_t	*held;
	u_int		*count, i, n = 0;
	int		 k, *owner;

	*out = NULL;
	held = xcalloc(njobs + 1, sizeof *held);
	count = xcalloc(njobs + 1, sizeof *count);
	owner = xcalloc(ps->n + 1, sizeof *owner);
	for (i = 0; i < ps->n; i++) {
		owner[i] = audit_owner(ps->v[i].pid, jobs, njobs, parent);
		if (audit_seen(ps, i) || (k = owner[i]) == -1)
			continue;	/* -1: another user's, MPS */
		held[k] += audit_mem(ps, i);
		count[k]++;
		if (!registered(ps->v[i].pid, NULL))
			audit_offend(out, &n, jobs[k].id, ps->v[i].pid, 1,
			    "GPU process not registered with libgmux");
	}
	for (k = 0; k < (int)njobs; k++) {
		if (audit_cards(ps, &jobs[k], k, owner, out, &n) == 0 &&
		    jobs[k].cap != 0 &&
		    held[k] > jobs[k].cap + count[k] * AUDIT_CONTEXT)
			audit_offend(out, &n, jobs[k].id, 0, 0,
			    "holds more than its memory cap by the driver's "
			    "count");
	}
	free(owner);
	free(held);
	free(count);
	return (n);
}

/* The parent of pid, from /proc; 0 if it is gone. */
pid_t
audit_parent(pid_t pid)
{
	return ((pid_t)gmux_region_stat(pid, 4));
}

static void
audit_done(struct card_procs *ps, const char *cause, void *arg)
{
	audit_running = 0;
	if (cause != NULL)
		log_debug("%s: %s", __func__, cause);
	log_debug("%s: %u GPU processes", __func__, ps->n);
	audit_done_cb(ps, audit_done_arg);
}

/*
 * Starts a scan: asks the vendors' tools which processes hold the real
 * cards of cs, without waiting.  When they have answered, done(ps, arg) is
 * called from the loop with what they reported (what a failed tool could
 * not say is missing; the cause is logged).  Returns 0 if it started, 1 if
 * a scan is still in flight (one at a time) or there is nothing to ask,
 * -1 if the tools could not be started (logged).
 */
int
audit_start(const struct cards *cs, audit_cb done, void *arg)
{
	char	*cause = NULL;
	int	 rc;

	if (audit_running) {
		log_debug("%s: the last scan has not finished", __func__);
		return (1);
	}
	audit_done_cb = done;
	audit_done_arg = arg;
	if ((rc = cards_procs_start(cs, audit_done, NULL, &cause)) == 0)
		audit_running = 1;
	else if (rc == -1) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
	}
	return (rc);
}

/*
 * Acts on a scan: checks ps against the running jobs and the region, and
 * stops the offenders unless report_only.  Returns the offenders (the
 * caller frees *out).
 */
u_int
audit_act(const struct card_procs *ps, const struct audit_job *jobs,
    u_int njobs, int report_only, struct audit_offender **out)
{
	u_int	 n;

	n = audit_check(ps, jobs, njobs, audit_parent, region_pid_job, out);
	if (n != 0)
		audit_enforce(*out, n, report_only);
	return (n);
}

/* Stops the offenders that warrant it, unless the policy is to report. */
static void
audit_enforce(const struct audit_offender *o, u_int n, int report_only)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		log_warnx("j%u: pid %ld: %s%s", o[i].job, (long)o[i].pid,
		    o[i].why, o[i].stop && !report_only ? "; stopped" : "");
		if (o[i].stop && !report_only && o[i].pid > 1)
			kill(o[i].pid, SIGKILL);
	}
}
