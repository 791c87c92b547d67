/*
 * retention.c: finished jobs' records and logs are kept JOB_RETENTION_DAYS
 * days (default 30), then removed.  The ledger is never pruned here: its
 * rows are the books, removed only by `gmux usage --prune-before`, which
 * exports them first.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define RETENTION_EVERY_MS	(3600 * 1000)	/* look once an hour */

static int64_t	retention_last;

/*
 * Removes a job's directory: its files (log, status, ...) and the tree a
 * remote run worked in (worktree.c: it holds what the job made, links
 * included).
 */
static void
retention_remove_dir(u_int id)
{
	struct dirent	*de;
	char		*dir;
	DIR		*d;

	worktree_remove(id);
	dir = path_job(id);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	if (rmdir(dir) == -1)
		log_warn("%s: rmdir %s", __func__, dir);
	free(dir);
}

/* Removes what ended before cutoff; returns how many jobs went. */
static u_int
retention_prune(int64_t cutoff)
{
	struct job	*j, *next;
	u_int		 n = 0;

	TAILQ_FOREACH_SAFE(j, &all_jobs, entry, next) {
		if (!job_ended(j) || j->ended >= cutoff ||
		    !TAILQ_EMPTY(&j->followers))
			continue;
		log_debug("%s: %s ended %lld", __func__, j->name,
		    (long long)j->ended);
		state_delete_job(j->id);
		retention_remove_dir(j->id);
		job_free(j);
		n++;
	}
	return (n);
}

void
retention_tick(void)
{
	int64_t	 now = clock_ms(), days;

	if (retention_last != 0 && now - retention_last < RETENTION_EVERY_MS &&
	    now >= retention_last)
		return;
	retention_last = now;
	days = config_uint("JOB_RETENTION_DAYS", 30, 0, 36500);
	if (days == 0)
		return;		/* 0: keep everything */
	retention_prune(now - days * 86400 * 1000);
}
