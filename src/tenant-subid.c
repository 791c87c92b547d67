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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#define SUBID_COUNT	65536ULL	/* a whole 16-bit range: nobody too */
#define SUBID_MAX	4294967294ULL	/* (uid_t)-1 is no UID */
#define SUBID_MS	30000

static pthread_mutex_t	subid_lock = PTHREAD_MUTEX_INITIALIZER;

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

/*
 * Gives t's account its range of subordinate UIDs and GIDs (the same
 * numbers) if it has none yet.  0, or -1 with *cause.
 */
int
tenant_subids(const struct tenant *t, char **cause)
{
	uint64_t	 end = 0;
	uid_t		 lo, hi;
	char		 range[64];
	char		*argv[] = { "usermod", "--add-subuids", range,
			    "--add-subgids", range, t->account, NULL };
	char		*out;
	int		 has, status, rc = -1;

	pthread_mutex_lock(&subid_lock);
	has = subid_scan("/etc/subuid", t->account, &end);
	has &= subid_scan("/etc/subgid", t->account, &end);
	if (has) {
		rc = 0;
		goto out;
	}
	tenant_uid_range(&lo, &hi);
	if (end <= (uint64_t)hi)
		end = (uint64_t)hi + 1;
	end = (end + SUBID_COUNT - 1) / SUBID_COUNT * SUBID_COUNT;
	if (end + SUBID_COUNT - 1 > SUBID_MAX) {
		xasprintf(cause, "tenant: no subordinate UIDs are left for "
		    "%s (/etc/subuid)", t->account);
		goto out;
	}
	snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)end,
	    (unsigned long long)(end + SUBID_COUNT - 1));
	out = proc_output(argv, SUBID_MS, &status);
	free(out);
	if (status != 0) {
		xasprintf(cause, "tenant: usermod --add-subuids %s %s failed "
		    "(exit %d)", range, t->account, status);
		goto out;
	}
	log_info("tenant %s: subordinate ids %s", t->name, range);
	rc = 0;
out:
	pthread_mutex_unlock(&subid_lock);
	return (rc);
}
