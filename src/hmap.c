/*
 * hmap.c: a string-keyed hash map (open addressing, linear probing,
 * backward-shift deletion).  Keys are not copied: each key must live as
 * long as its entry, which suits keys stored inside the value.  glibc has
 * no <sys/tree.h> and hsearch cannot delete, hence this small one.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

struct hslot {
	const char	*key;
	void		*val;
	uint32_t	 hash;
};

struct hmap {
	struct hslot	*v;
	size_t		 size;	/* a power of two */
	size_t		 n;
};

static uint32_t
hmap_hash(const char *s)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */

	while (*s != '\0') {
		h ^= (u_char)*s++;
		h *= 16777619u;
	}
	return (h);
}

/* Returns an empty map; free it with hmap_free. */
struct hmap *
hmap_create(void)
{
	struct hmap	*h;

	h = xcalloc(1, sizeof *h);
	h->size = 16;
	h->v = xcalloc(h->size, sizeof *h->v);
	return (h);
}

/* Frees the map only; keys and values belong to the caller. */
void
hmap_free(struct hmap *h)
{
	if (h == NULL)
		return;
	free(h->v);
	free(h);
}

size_t
hmap_count(const struct hmap *h)
{
	return (h->n);
}

static size_t
hmap_find(const struct hmap *h, const char *key, uint32_t hash)
{
	size_t	 i = hash & (h->size - 1);

	while (h->v[i].key != NULL) {
		if (h->v[i].hash == hash && strcmp(h->v[i].key, key) == 0)
			return (i);
		i = (i + 1) & (h->size - 1);
	}
	return (i);
}

static void
hmap_grow(struct hmap *h)
{
	struct hslot	*old = h->v;
	size_t		 oldsize = h->size, i, j;

	h->size *= 2;
	h->v = xcalloc(h->size, sizeof *h->v);
	for (i = 0; i < oldsize; i++) {
		if (old[i].key == NULL)
			continue;
		j = hmap_find(h, old[i].key, old[i].hash);
		h->v[j] = old[i];
	}
	free(old);
}

void *
hmap_get(const struct hmap *h, const char *key)
{
	size_t	 i = hmap_find(h, key, hmap_hash(key));

	return (h->v[i].key != NULL ? h->v[i].val : NULL);
}

/* Sets key to val; returns the value it replaces, or NULL. */
void *
hmap_put(struct hmap *h, const char *key, void *val)
{
	uint32_t	 hash = hmap_hash(key);
	size_t		 i;
	void		*old;

	if ((h->n + 1) * 4 > h->size * 3)
		hmap_grow(h);
	i = hmap_find(h, key, hash);
	if (h->v[i].key != NULL) {
		old = h->v[i].val;
		h->v[i].key = key;
		h->v[i].val = val;
		return (old);
	}
	h->v[i].key = key;
	h->v[i].val = val;
	h->v[i].hash = hash;
	h->n++;
	return (NULL);
}

/* Removes key; returns its value, or NULL if it was not there. */
void *
hmap_del(struct hmap *h, const char *key)
{
	size_t	 i, j, home, mask = h->size - 1;
	void	*val;

	i = hmap_find(h, key, hmap_hash(key));
	if (h->v[i].key == NULL)
		return (NULL);
	val = h->v[i].val;
	h->v[i].key = NULL;
	h->n--;
	/* Shift later members of the probe run back over the hole. */
	for (j = (i + 1) & mask; h->v[j].key != NULL; j = (j + 1) & mask) {
		home = h->v[j].hash & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			h->v[i] = h->v[j];
			h->v[j].key = NULL;
			i = j;
		}
	}
	return (val);
}

/*
 * Iterates: start with *it = 0; returns 0 when done.  The map must not be
 * changed while iterating.
 */
int
hmap_next(const struct hmap *h, size_t *it, const char **key, void **val)
{
	while (*it < h->size) {
		if (h->v[*it].key != NULL) {
			if (key != NULL)
				*key = h->v[*it].key;
			if (val != NULL)
				*val = h->v[*it].val;
			(*it)++;
			return (1);
		}
		(*it)++;
	}
	return (0);
}
