/*
 * track.c: what this process allocated, so a free returns exactly what
 * its allocation reserved.  An open-addressing table (linear probing,
 * deletion by backward shift, no tombstones) under one lock; it grows
 * with calloc and a failed growth is a failed allocation, never a crash.
 */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct track_ent {
	uint64_t	 key;
	uint64_t	 size;
	int32_t		 kind;		/* 0: empty */
	int32_t		 dev;
};

static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static struct track_ent	*tab;
static size_t		 cap, used;

static size_t
slot_of(enum track_kind kind, uint64_t key, size_t n)
{
	uint64_t	 h = (key ^ ((uint64_t)kind << 56)) *
	    0x9e3779b97f4a7c15ULL;

	return ((size_t)(h >> 17) & (n - 1));
}

static void
put(struct track_ent *t, size_t n, const struct track_ent *e)
{
	size_t	 i = slot_of(e->kind, e->key, n);

	while (t[i].kind != 0)
		i = (i + 1) & (n - 1);
	t[i] = *e;
}

static int
grow(void)
{
	struct track_ent	*nt;
	size_t			 ncap = cap ? cap * 2 : 1024, i;

	if ((nt = calloc(ncap, sizeof *nt)) == NULL)
		return (-1);
	for (i = 0; i < cap; i++) {
		if (tab[i].kind != 0)
			put(nt, ncap, &tab[i]);
	}
	free(tab);
	tab = nt;
	cap = ncap;
	return (0);
}

/* Records an allocation; -1 if the table cannot grow. */
int
track_add(enum track_kind kind, uint64_t key, uint64_t size, int dev)
{
	struct track_ent	 e = { key, size, (int32_t)kind, dev };
	int			 rc = 0;

	pthread_mutex_lock(&lock);
	if ((used + 1) * 2 > cap && grow() != 0)
		rc = -1;
	else {
		put(tab, cap, &e);
		used++;
	}
	pthread_mutex_unlock(&lock);
	return (rc);
}

/*
 * Forgets an allocation and says its size and device.  Returns -1 if it
 * was never recorded (allocated before the shim counted, or not ours).
 */
int
track_del(enum track_kind kind, uint64_t key, uint64_t *size, int *dev)
{
	size_t	 i, j, home;
	int	 rc = -1;

	pthread_mutex_lock(&lock);
	if (cap == 0)
		goto out;
	for (i = slot_of(kind, key, cap); tab[i].kind != 0;
	    i = (i + 1) & (cap - 1)) {
		if (tab[i].kind == (int32_t)kind && tab[i].key == key)
			break;
	}
	if (tab[i].kind == 0)
		goto out;
	*size = tab[i].size;
	*dev = tab[i].dev;
	tab[i].kind = 0;
	used--;
	/* Backward shift: pull later entries of the cluster into the hole. */
	for (j = (i + 1) & (cap - 1); tab[j].kind != 0;
	    j = (j + 1) & (cap - 1)) {
		home = slot_of(tab[j].kind, tab[j].key, cap);
		if (((j - home) & (cap - 1)) >= ((j - i) & (cap - 1))) {
			tab[i] = tab[j];
			tab[j].kind = 0;
			i = j;
		}
	}
	rc = 0;
out:
	pthread_mutex_unlock(&lock);
	return (rc);
}

/* After fork: the child owns none of its parent's allocations. */
void
track_reset(void)
{
	pthread_mutex_init(&lock, NULL);
	free(tab);
	tab = NULL;
	cap = used = 0;
}
