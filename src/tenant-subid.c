/*
 * tenant-subid.c: a tenant account's subordinate UIDs and GIDs, the range
 * its rootless containers map their users to (docs/containers.md).
 * Debian's useradd gives none to an account whose UID is above UID_MAX,
 * as gmux's are; one it gave from SUB_UID_MIN could hold another
 * tenant's UID.  So gmux adds one itself, above TENANT_UID_RANGE and
 * every range already in /etc/subuid and /etc/subgid: no UID of a tenant
 * ever lies in another's range.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#define SUBID_COUNT	65536ULL	/* a whole 16-bit range: nobody too */
#define SUBID_MAX	4294967294ULL	/* (uid_t)-1 is no UID */
#define SUBID_MS	30000

static int	subid_running;	/* a usermod runs (for any tenant) */

/*
 * Reads a subordinate ID file: whether account has a range there (1), and
 * in *end the end of the highest range of anyone's.
 */
static int
subid_scan(const char *path, const char *account, uint64_t *end)
{
	char			 line[512], name[256];
	unsigned long long	 start, count;
	FILE			*f;
	int			 has = 0;

	if ((f = fopen(path, "re")) == NULL)
		return (0);
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%255[^:]:%llu:%llu", name, &start,
		    &count) != 3)
			continue;
		if (strcmp(name, account) == 0)
			has = 1;
		if (start + count > *end)
			*end = start + count;
	}
	fclose(f);
	return (has);
}

/* In the loop: usermod is over; the owner's held jobs weighed again. */
static void
subid_done_cb(char *out, int status, void *arg)
{
	char		*name = arg;
	struct tenant	*t;

	subid_running = 0;
	if ((t = tenant_find(name)) != NULL) {
		t->subids_busy = 0;
		if (status != 0) {
			t->subid_error = tenant_tool_cause("usermod",
			    t->account, out, status);
			log_warnx("tenant %s: %s (its containers cannot run)",
			    t->name, t->subid_error);
		} else
			log_info("tenant %s: subordinate ids given", t->name);
	}
	free(out);
	free(name);
	tenant_quota_tick();
}

/* Starts usermod for range; -1 with *cause if it cannot be. */
static int
subid_start(struct tenant *t, const char *range, char **cause)
{
	char	*argv[] = { "sh", "-c", TENANT_MERGED, "usermod",
		    "--add-subuids", (char *)range, "--add-subgids",
		    (char *)range, t->account, NULL };
	char	*name = xstrdup(t->name);

	if (proc_async_start(argv, SUBID_MS, subid_done_cb, name,
	    cause) != 0) {
		free(name);
		return (-1);
	}
	t->subids_busy = subid_running = 1;
	log_debug("tenant %s: usermod --add-subuids %s", t->name, range);
	return (0);
}

/*
 * Gives t's account its range of subordinate UIDs and GIDs (the same
 * numbers) if it has none yet, with usermod off the loop: 0 once it has
 * one (or usermod failed: told once, and only its containers fail, with
 * podman's reason); 2 with *cause while usermod runs (one at a time for
 * every tenant: a range is picked above those the files hold); -1 with
 * *cause if it cannot be given.
 */
int
tenant_subids(struct tenant *t, char **cause)
{
	uint64_t	 end = 0;
	uid_t		 lo, hi;
	char		 range[64];
	int		 has;

	if (t->subid_error != NULL)
		return (0);
	if (t->subids_busy || subid_running)
		goto wait;
	has = subid_scan("/etc/subuid", t->account, &end);
	has &= subid_scan("/etc/subgid", t->account, &end);
	if (has)
		return (0);
	tenant_uid_range(&lo, &hi);
	if (end <= (uint64_t)hi)
		end = (uint64_t)hi + 1;
	end = (end + SUBID_COUNT - 1) / SUBID_COUNT * SUBID_COUNT;
	if (end + SUBID_COUNT - 1 > SUBID_MAX) {
		xasprintf(cause, "tenant: no subordinate UIDs are left for "
		    "%s (/etc/subuid)", t->account);
		return (-1);
	}
	snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)end,
	    (unsigned long long)(end + SUBID_COUNT - 1));
	if (subid_start(t, range, cause) != 0)
		return (-1);
wait:
	xasprintf(cause, "tenant: giving %s's account its subordinate IDs",
	    t->name);
	return (2);
}
