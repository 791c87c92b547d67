/*
 * tenant-disk.c: the size of each active tenant's home, measured every
 * TENANT_DISK_EVERY seconds off the daemon's loop (DESIGN.md decision 1:
 * a helper thread for blocking work that returns a message to the loop).
 * A walk of a home of 100,000 files takes a fraction of a second to
 * seconds (bench/run-tenants); the loop only hands the thread a list of
 * paths and takes back a list of sizes through an eventfd.  One round at
 * a time; the thread shares nothing else.
 */

#include <sys/eventfd.h>
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"
#include "tenant-int.h"

struct tdisk_round {
	char		**names;
	char		**homes;
	uint64_t	 *used;
	u_int		  n;
	int64_t		  at;
};

static struct tdisk_round *tdisk_busy;	/* in the thread, or NULL */
static int64_t		 tdisk_last;
static int		 tdisk_efd = -1;
static struct event	*tdisk_ev;

/* The walk's own (one walk per thread at a time). */
static __thread uint64_t	  tdisk_sum;
static __thread uint64_t	  tdisk_files;
static __thread uint64_t	 *tdisk_seen;	/* dev^ino of linked files */
static __thread size_t		  tdisk_nseen, tdisk_size;

/* A file with several links is counted once. */
static int
tdisk_first(const struct stat *st)
{
	uint64_t	 key = ((uint64_t)st->st_dev << 40) ^ st->st_ino;
	size_t		 i, mask, k;

	if (tdisk_nseen * 2 >= tdisk_size) {
		uint64_t	*old = tdisk_seen;
		size_t		 osize = tdisk_size;

		tdisk_size = tdisk_size == 0 ? 1024 : tdisk_size * 2;
		tdisk_seen = xcalloc(tdisk_size, sizeof *tdisk_seen);
		tdisk_nseen = 0;
		for (i = 0; i < osize; i++) {
			if (old[i] == 0)
				continue;
			for (k = old[i] & (tdisk_size - 1); tdisk_seen[k] != 0;
			    k = (k + 1) & (tdisk_size - 1))
				;
			tdisk_seen[k] = old[i];
			tdisk_nseen++;
		}
		free(old);
	}
	if (key == 0)
		key = 1;
	mask = tdisk_size - 1;
	for (k = key & mask; tdisk_seen[k] != 0; k = (k + 1) & mask) {
		if (tdisk_seen[k] == key)
			return (0);
	}
	tdisk_seen[k] = key;
	tdisk_nseen++;
	return (1);
}

static int
tdisk_visit(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_NS)
		return (0);
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && !tdisk_first(st))
		return (0);
	tdisk_sum += (uint64_t)st->st_blocks * 512;
	tdisk_files++;
	return (0);
}

/*
 * The bytes path's tree takes on disk (st_blocks; hard links once; no
 * symlink followed, no other filesystem entered); its files' count in
 * *files if not NULL.  Blocking: never in the loop.
 */
uint64_t
tenant_disk_measure(const char *path, uint64_t *files)
{
	tdisk_sum = tdisk_files = 0;
	nftw(path, tdisk_visit, 64, FTW_PHYS|FTW_MOUNT);
	free(tdisk_seen);
	tdisk_seen = NULL;
	tdisk_nseen = tdisk_size = 0;
	if (files != NULL)
		*files = tdisk_files;
	return (tdisk_sum);
}

static void *
tdisk_main(void *arg)
{
	struct tdisk_round	*r = arg;
	uint64_t		 one = 1;
	u_int			 i;

	for (i = 0; i < r->n; i++)
		r->used[i] = tenant_disk_measure(r->homes[i], NULL);
	if (write(tdisk_efd, &one, sizeof one) == -1)
		log_warn("%s: eventfd", __func__);
	return (NULL);
}

static void
tdisk_round_free(struct tdisk_round *r)
{
	strv_free(r->names);
	strv_free(r->homes);
	free(r->used);
	free(r);
}

/* In the loop: the round is over; its sizes go to their records. */
static void
tdisk_done_cb(evutil_socket_t fd, short events, void *arg)
{
	struct tdisk_round	*r = tdisk_busy;
	struct tenant		*t;
	uint64_t		 n;
	u_int			 i;

	if (read(fd, &n, sizeof n) == -1 || r == NULL)
		return;
	tdisk_busy = NULL;
	for (i = 0; i < r->n; i++) {
		if ((t = tenant_find(r->names[i])) == NULL)
			continue;
		t->disk_used = r->used[i];
		t->disk_at = r->at;
	}
	tenants_save();
	tdisk_round_free(r);
}

static int
tdisk_init(void)
{
	if (tdisk_efd != -1)
		return (0);
	if ((tdisk_efd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC)) == -1)
		return (-1);
	tdisk_ev = event_new(server_base, tdisk_efd, EV_READ|EV_PERSIST,
	    tdisk_done_cb, NULL);
	if (tdisk_ev == NULL || event_add(tdisk_ev, NULL) != 0)
		fatalx("%s: event_new", __func__);
	return (0);
}

/* Starts a round's thread; -1 if it could not be. */
static int
tdisk_start(struct tdisk_round *r)
{
	return (thread_start_detached(tdisk_main, r) == 0 ? 0 : -1);
}

/*
 * With project quotas (tenant-pquota.c) the kernel says each home's
 * usage at once: asked on every tick, kept when it changed.
 */
static void
tdisk_quotas(void)
{
	struct tenant	*t;
	uint64_t	 used;
	int		 changed = 0;

	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (t->state != TENANT_ACTIVE || t->user != NULL ||
		    tenant_pquota_used(t, &used) != 0)
			continue;
		if (used != t->disk_used || t->disk_at == 0)
			changed = 1;
		t->disk_used = used;
		t->disk_at = clock_ms();
	}
	if (changed)
		tenants_save();
}

/*
 * On the tick: with project quotas, the kernel's figures; else a round
 * every TENANT_DISK_EVERY seconds, one at a time.
 */
void
tenant_disk_tick(void)
{
	struct tdisk_round	*r;
	struct tenant		*t;
	int64_t			 now = clock_mono_ms();
	u_int			 every;

	if (tenant_disk_quotas()) {
		tdisk_quotas();
		return;
	}
	every = config_uint("TENANT_DISK_EVERY", 300, 1, 86400);
	if (tdisk_busy != NULL || (tdisk_last != 0 &&
	    now - tdisk_last < (int64_t)every * 1000))
		return;
	tdisk_last = now;
	r = xcalloc(1, sizeof *r);
	r->names = xcalloc(1, sizeof *r->names);
	r->homes = xcalloc(1, sizeof *r->homes);
	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (t->state != TENANT_ACTIVE || t->user != NULL)
			continue;
		strv_add(&r->names, t->name);
		strv_add(&r->homes, t->home);
		r->n++;
	}
	r->used = xcalloc(r->n + 1, sizeof *r->used);
	r->at = clock_ms();
	if (r->n == 0 || tdisk_init() != 0 || tdisk_start(r) != 0) {
		tdisk_round_free(r);
		return;
	}
	tdisk_busy = r;
}
