/*
 * tenant-retention.c: the tenants' share of the daemon's tick, and
 * TENANT_RETENTION_DAYS: an account with no job for that long is
 * archived and removed (tenant_archive); its record, its UID and the
 * ledger's rows stay.  Looked at once an hour, as retention.c does for
 * jobs.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "tenant-int.h"

#define TRET_EVERY_MS	(3600 * 1000)

static int64_t	tret_last;

/* Has owner a job not ended?  Then it is active, whatever its date. */
int
tenant_busy(const char *owner)
{
	struct job	*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (!job_ended(j) && strcmp(j->owner, owner) == 0)
			return (1);
	}
	return (0);
}

/* The last time owner had a job running: its jobs' ends, or its record's. */
static int64_t
tret_active(const struct tenant *t)
{
	struct job	*j;
	int64_t		 last = t->active > t->created ? t->active : t->created;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (strcmp(j->owner, t->name) == 0 && j->ended > last)
			last = j->ended;
	}
	return (last);
}

static void
tret_prune(int64_t now, int64_t days)
{
	struct tenant	*t;
	int		 changed = 0;

	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (t->state != TENANT_ACTIVE || t->user != NULL ||
		    tenant_busy(t->name))
			continue;
		t->active = tret_active(t);
		if (now - t->active < days * 86400 * 1000)
			continue;
		tenant_archive(t);	/* off the loop: told if it fails */
		changed = 1;
	}
	if (changed)
		tenants_save();
}

/* Once a second, from the daemon's tick. */
void
tenant_tick(void)
{
	int64_t	 now = clock_ms(), days;

	tenant_quota_tick();
	tenant_remove_tick();
	tenant_idle_tick();
	tenant_disk_tick();
	if (tret_last != 0 && now - tret_last < TRET_EVERY_MS &&
	    now >= tret_last)
		return;
	tret_last = now;
	days = config_uint("TENANT_RETENTION_DAYS", 0, 0, 36500);
	if (days != 0)
		tret_prune(now, days);
}
