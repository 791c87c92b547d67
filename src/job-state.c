/*
 * job-state.c: the one place a job's state changes.  Every transition goes
 * through job_set_state(), which changes it, logs it at debug, saves the
 * job through the job store and tells the job's followers; every other
 * change of a job's record is saved through job_save().  tests/suites/
 * job-state fails on a transition written anywhere else.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static const char *job_states[] = {
	[JOB_QUEUED] = "queued",
	[JOB_RUNNING] = "running",
	[JOB_EXITED] = "exited",
	[JOB_STOPPED] = "stopped",
	[JOB_PREEMPTED] = "preempted",
	[JOB_FAILED] = "failed",
};

/* A job is born queued: job_create's calloc makes it so. */
_Static_assert(JOB_QUEUED == 0, "a zeroed job is a queued one");

/*
 * Where a job's record goes.  Today the daemon's own state.db; the
 * cluster store plugs in HERE: a store whose save writes the job to the
 * cluster (after, or instead of, state.db), set as job_store before the
 * first job is loaded.  Every save and every transition reaches it, in
 * the order they happen.
 */
struct job_store {
	const char	*name;
	void		(*save)(const struct job *);
};
static const struct job_store job_store_local = { "state.db", state_save_job };
static const struct job_store *job_store = &job_store_local;

/*
 * Told of every transition once it is saved and its followers told: the
 * cluster's member code, which writes a cluster job's end to etcd the
 * moment its local job ends (NULL: not a member).
 */
void	(*job_state_hook)(struct job *, enum job_state);

const char *
job_state_name(enum job_state s)
{
	return ((u_int)s < nitems(job_states) ? job_states[s] : "unknown");
}

int
job_state_from_name(const char *name, enum job_state *s)
{
	u_int	 i;

	for (i = 0; i < nitems(job_states); i++) {
		if (strcmp(name, job_states[i]) == 0) {
			*s = (enum job_state)i;
			return (0);
		}
	}
	return (-1);
}

int
job_ended(const struct job *j)
{
	return (j->state >= JOB_EXITED);
}

/* Saves what changed in a job other than its state. */
void
job_save(const struct job *j)
{
	job_store->save(j);
}

/*
 * Tells a job's followers what it is now: a queued one's say why it
 * waits, a running one's start streaming, an ended one's get the rest of
 * its log and close (waiters get the job).
 */
void
job_tell(struct job *j)
{
	if (TAILQ_EMPTY(&j->followers))
		return;		/* (a -d submission: no info to build) */
	if (job_ended(j))
		follow_job_ended(j);
	else {
		follow_job_info(j);
		if (j->state == JOB_RUNNING)
			follow_job_changed(j);
	}
}

/*
 * Moves a job to state s (or keeps it there with what else changed), logs
 * it, saves it, then tells its followers: what they are told is on disk,
 * so a daemon killed in between never contradicts it after a restart.
 * With JOB_QUIET the followers are told later by the caller's job_tell():
 * a job recorded as running before its keeper exists has nothing for them
 * to read yet.
 */
void
job_set_state(struct job *j, enum job_state s, int flags)
{
	enum job_state	 was = j->state;

	j->state = s;
	log_debug("%s: %s %s -> %s%s%s", __func__, j->name,
	    job_state_name(was), job_state_name(s), j->reason != NULL ?
	    ": " : "", j->reason != NULL ? j->reason : "");
	job_save(j);
	if (~flags & JOB_QUIET)
		job_tell(j);
	/* An array's element: its array counts its end (once). */
	if (j->req.spec.array_of != 0 && job_ended(j))
		job_array_ended(j);
	if (job_state_hook != NULL)
		job_state_hook(j, was);
}

/*
 * Sets the state a job's record says it had (a restart): nothing changes,
 * so nothing is saved or told.  An unknown name is a failed job.
 */
void
job_restore_state(struct job *j, const char *name)
{
	if (name == NULL || job_state_from_name(name, &j->state) != 0)
		j->state = JOB_FAILED;
}
