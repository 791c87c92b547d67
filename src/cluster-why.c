/*
 * cluster-why.c: what each queued cluster job waits for (gmux queue on a
 * member, GET /v1/cluster/queue), read from one range of the cluster's
 * keys as the leader would see them: the live members, what is assigned
 * and running on each, and the queue in order, each job that fits taking
 * its room before the next is asked about (as the leader's pass does).
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

struct cw {
	struct cluster_room	*rooms;
	struct cluster_member	*members;	/* the rooms' m, for refusals */
	u_int			 n;
	char			**gangs;	/* gangs with parts placed */
	u_int			 ngangs;
};

/* Key past the cluster's prefix, or NULL if it is not under it. */
static const char *
cw_rest(const struct etcd_kv *kv)
{
	size_t	 plen = strlen(cluster->prefix);

	if (strncmp(kv->key, cluster->prefix, plen) != 0)
		return (NULL);
	return (kv->key + plen);
}

/* The member records of r (a range of the whole prefix) into w. */
static void
cw_members(struct cw *w, const struct etcd_reply *r)
{
	const char	*rest;
	json_t		*o;
	char		*cause = NULL;
	u_int		 i;

	w->rooms = xcalloc(r->nkvs + 1, sizeof *w->rooms);
	for (i = 0; i < r->nkvs; i++) {
		if ((rest = cw_rest(&r->kvs[i])) == NULL ||
		    strncmp(rest, "m/", 2) != 0)
			continue;
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		if (o != NULL && cluster_member_parse(o, &w->rooms[w->n].m,
		    &cause) == 0)
			w->n++;
		free(cause);
		cause = NULL;
		json_decref(o);
	}
	w->members = xcalloc(w->n + 1, sizeof *w->members);
	for (i = 0; i < w->n; i++)
		w->members[i] = w->rooms[i].m;
}

static struct cluster_room *
cw_room(struct cw *w, const char *name, size_t len)
{
	u_int	 i;

	for (i = 0; i < w->n; i++) {
		if (strlen(w->rooms[i].m.name) == len &&
		    strncmp(w->rooms[i].m.name, name, len) == 0)
			return (&w->rooms[i]);
	}
	return (NULL);
}

/* One a/NAME/ID or r/NAME/ID record: charged to NAME, its gang noted. */
static void
cw_placed(struct cw *w, const char *rest, json_t *o)
{
	struct cluster_shape	 s;
	struct cluster_room	*m;
	const char		*slash = strchr(rest, '/'), *gid;
	u_int			 cards[CLUSTER_CARDS], n = 0;
	size_t			 i;
	json_t			*x;
	char			*cause = NULL;

	gid = json_string_value(json_object_get(json_object_get(o, "gang"),
	    "id"));
	if (gid != NULL) {
		w->gangs = xreallocarray(w->gangs, w->ngangs + 1,
		    sizeof *w->gangs);
		w->gangs[w->ngangs++] = xstrdup(gid);
	}
	if (slash == NULL || (m = cw_room(w, rest, (size_t)(slash - rest))) ==
	    NULL || cluster_shape_parse(o, &s, &cause) != 0) {
		free(cause);
		return;
	}
	json_array_foreach(json_object_get(o, "cards"), i, x) {
		if (n < CLUSTER_CARDS && json_is_integer(x))
			cards[n++] = (u_int)json_integer_value(x);
	}
	cluster_room_charge(m, &s, cards, n, 1);
}

static void
cw_load(struct cw *w, const struct etcd_reply *r)
{
	const char	*rest;
	json_t		*o;
	u_int		 i;

	memset(w, 0, sizeof *w);
	cw_members(w, r);
	for (i = 0; i < r->nkvs; i++) {
		if ((rest = cw_rest(&r->kvs[i])) == NULL ||
		    (rest[0] != 'a' && rest[0] != 'r') || rest[1] != '/')
			continue;
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		if (o != NULL)
			cw_placed(w, rest + 2, o);
		json_decref(o);
	}
}

static void
cw_free(struct cw *w)
{
	u_int	 i;

	for (i = 0; i < w->n; i++)
		cluster_member_clear(&w->rooms[i].m);
	for (i = 0; i < w->ngangs; i++)
		free(w->gangs[i]);
	free(w->gangs);
	free(w->rooms);
	free(w->members);
}

/*
 * What m lacks for s now, appended to buf ("" if nothing); how many of
 * its asks it lacks (cards, CPUs, RAM), to find the nearest fit.
 */
static u_int
cw_lacks(const struct cluster_room *m, const struct cluster_shape *s,
    char *buf, size_t len)
{
	u_int	 cards[CLUSTER_CARDS], n, lack = 0;
	char	*a, *b;

	*buf = '\0';
	if (s->ncards > 0 && s->seats > 0 &&
	    (n = cluster_room_cards(m, s, cards)) < s->ncards) {
		lack += s->ncards - n;
		snprintf(buf, len, "room on %u card%s (%u %s it)", s->ncards,
		    s->ncards == 1 ? "" : "s", n, n == 1 ? "has" : "have");
	}
	if (m->cpus + s->cpus > m->m.cpus) {
		lack++;
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%u CPUs "
		    "(%u free)", *buf ? ", " : "", s->cpus, m->m.cpus -
		    (m->cpus < m->m.cpus ? m->cpus : m->m.cpus));
	}
	if (m->ram + s->ram > m->m.ram) {
		lack++;
		a = format_size(s->ram);
		b = format_size(m->ram < m->m.ram ? m->m.ram - m->ram : 0);
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s of RAM "
		    "(%s free)", *buf ? ", " : "", a, b);
		free(a);
		free(b);
	}
	return (lack);
}

/* The reason s waits when no member has room: the nearest fit's lack. */
static char *
cw_nearest(struct cw *w, const struct cluster_shape *s)
{
	char	 buf[256], best[256];
	u_int	 i, lack, blest = UINT32_MAX, bi = 0;
	char	*why;

	for (i = 0; i < w->n; i++) {
		if (!cluster_member_holds(&w->rooms[i].m, s))
			continue;
		if ((lack = cw_lacks(&w->rooms[i], s, buf, sizeof buf)) <
		    blest) {
			blest = lack;
			bi = i;
			memcpy(best, buf, sizeof best);
		}
	}
	if (blest == UINT32_MAX)
		return (xstrdup("no live member could hold it"));
	xasprintf(&why, "no member has room now; nearest: %s, which lacks %s",
	    w->rooms[bi].m.name, best);
	return (why);
}

/* The members with room for s now; the first in *first (may be NULL). */
static u_int
cw_with_room(struct cw *w, const struct cluster_shape *s, u_int *first,
    u_int *cards)
{
	u_int	 i, n = 0, left;

	for (i = 0; i < w->n; i++) {
		if (!cluster_room_has(&w->rooms[i], s))
			continue;
		if (s->ncards > 0 && s->seats > 0 && cluster_room_fit(
		    &w->rooms[i], s, cards, &left) == 0)
			continue;
		if (n++ == 0 && first != NULL)
			*first = i;
	}
	return (n);
}

static int
cw_gang_placed(const struct cw *w, const char *id)
{
	u_int	 i;

	for (i = 0; i < w->ngangs; i++) {
		if (strcmp(w->gangs[i], id) == 0)
			return (1);
	}
	return (0);
}

/* Why queued job o (shape s) waits; if it fits, its room is taken. */
static char *
cw_why(struct cw *w, json_t *o, const struct cluster_shape *s)
{
	const char	*id = json_string_value(json_object_get(o, "id"));
	u_int		 n, first = 0, cards[CLUSTER_CARDS];
	char		*why;

	if ((why = cluster_refusal(w->members, w->n, s)) != NULL)
		return (why);	/* the members that could have left */
	if (s->nodes > 1 && id != NULL && cw_gang_placed(w, id))
		return (xstrdup("its last attempt's parts to stop"));
	n = cw_with_room(w, s, &first, cards);
	if (s->nodes > 1 && n < s->nodes) {
		xasprintf(&why, "a gang of %u waits for %u members with room "
		    "for a part; %u %s", s->nodes, s->nodes, n, n == 1 ?
		    "has" : "have");
		return (why);
	}
	if (n == 0)
		return (cw_nearest(w, s));
	if (s->nodes <= 1)
		cluster_room_charge(&w->rooms[first], s, cards, s->ncards, 1);
	return (xstrdup("the leader's next pass (it fits now)"));
}

/*
 * Sets "waits_for" on each of the n queued job records in v (in queue
 * order) that has none yet, from r, a range of the cluster's whole
 * prefix.
 */
void
cluster_why(json_t **v, u_int n, const struct etcd_reply *r)
{
	struct cw		 w;
	struct cluster_shape	 s;
	u_int			 i;
	char			*why, *cause = NULL;

	cw_load(&w, r);
	for (i = 0; i < n; i++) {
		if (json_object_get(v[i], "waits_for") != NULL)
			continue;	/* an array's rest, for itself */
		if (cluster_shape_parse(v[i], &s, &cause) != 0) {
			free(cause);
			cause = NULL;
			continue;
		}
		why = cw_why(&w, v[i], &s);
		json_object_set_new(v[i], "waits_for", json_string(why));
		free(why);
	}
	cw_free(&w);
}
