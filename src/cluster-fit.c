/*
 * cluster-fit.c: what a job asks of a member and whether a member holds it,
 * pure (docs/cluster.md, "Placement"): a job record's request parsed into
 * a shape, the reason no member could ever hold one (at submission), and
 * a member's room now, counted by the leader's scheduler and by the queue's
 * reasons alike.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

/* Copies a directive's word into a shape's room for it. */
static int
cs_word(char *to, const char *from, const char *what, char **cause)
{
	if (from == NULL)
		return (0);
	if (strlen(from) >= CLUSTER_WORD) {
		xasprintf(cause, "%s: longer than %d characters", what,
		    CLUSTER_WORD - 1);
		return (-1);
	}
	snprintf(to, CLUSTER_WORD, "%s", from);
	return (0);
}

/* The directives that place it (docs/cluster.md, "Placement"). */
static int
cs_spec(const struct jobspec *j, struct cluster_shape *s, char **cause)
{
	s->cpus = j->cpus;
	s->ram = j->ram;
	s->vram = j->vram;
	s->mode = j->mode;
	s->nodes = j->nodes > 0 ? j->nodes : 1;
	if (cs_word(s->type, j->gpu_type, "gpus", cause) != 0 ||
	    cs_word(s->server, j->server, "server", cause) != 0 ||
	    cs_word(s->tag, j->partition, "partition", cause) != 0)
		return (-1);
	return (0);
}

/* Parses the request of a job record into s. */
int
cluster_shape_parse(json_t *rec, struct cluster_shape *s, char **cause)
{
	json_t		*req = json_object_get(rec, "req"), *x;
	struct jobreq	 r;
	int		 rc;

	memset(s, 0, sizeof *s);
	if (!json_is_object(req)) {
		xasprintf(cause, "no req");
		return (-1);
	}
	jobreq_init(&r);
	if ((rc = jobreq_from_json(req, &r, cause)) == 0) {
		s->seats = r.seats;
		s->mem = r.mem;
		s->ncards = r.ncards;
		s->prio = r.priority;
		s->flags = r.flags;
		rc = cs_spec(&r.spec, s, cause);
	}
	jobreq_clear(&r);
	if ((x = json_object_get(rec, "submitted")) != NULL &&
	    json_is_integer(x))
		s->submitted = json_integer_value(x);
	return (rc);
}

/* What one card needs of memory for s (0: share x its memory). */
static uint64_t
cs_need(const struct cluster_shape *s, uint64_t memory)
{
	if (s->mem != 0)
		return (s->mem);
	return (memory / SEATS_PER_CARD * s->seats);
}

/* Whether card c could ever hold a part of s: its type, its memory. */
static int
cs_card_could(const struct cluster_card *c, const struct cluster_shape *s)
{
	if (s->type[0] != '\0' && !jobspec_type_is(c->vendor, c->model,
	    s->type))
		return (0);
	return (cs_need(s, c->memory) <= c->memory && c->memory >= s->vram);
}

/* Whether member m could ever hold s, its cards aside. */
int
cluster_member_could(const struct cluster_member *m,
    const struct cluster_shape *s)
{
	if (s->server[0] != '\0' && strcmp(m->name, s->server) != 0)
		return (0);
	if (s->tag[0] != '\0' && !jobspec_tagged(m->tags, s->tag))
		return (0);
	if (s->cpus > m->cpus || s->ram > m->ram)
		return (0);
	return (1);
}

/* The members of v that could hold s's member-wide asks (cpus, ram...). */
static char *
cs_refuse_member(const struct cluster_member *v, u_int n,
    const struct cluster_shape *s)
{
	struct cluster_shape	 t;
	char			*why, *size;
	u_int			 i;

	memset(&t, 0, sizeof t);
	snprintf(t.server, sizeof t.server, "%s", s->server);
	for (i = 0; i < n && !cluster_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member is named %s", s->server);
		return (why);
	}
	snprintf(t.tag, sizeof t.tag, "%s", s->tag);
	for (i = 0; i < n && !cluster_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member%s%s has the tag %s", *s->server ?
		    " named " : "", s->server, s->tag);
		return (why);
	}
	t.cpus = s->cpus;
	for (i = 0; i < n && !cluster_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member has %u CPUs", s->cpus);
		return (why);
	}
	size = format_size(s->ram);
	xasprintf(&why, "no member has %s of RAM", size);
	free(size);
	return (why);
}

/*
 * Why no member of v could ever hold s, or NULL if one could (the caller
 * frees the reason).
 */
char *
cluster_refusal(const struct cluster_member *v, u_int n,
    const struct cluster_shape *s)
{
	u_int		 i, c, fit, typed, most = 0, mtyped = 0, could = 0;
	u_int		 hold = 0;
	char		*why;

	if (n == 0)
		return (xstrdup("no member is live"));
	if (s->mode == JOBSPEC_OVERCOMMIT)
		return (xstrdup("mode: overcommit is not taken yet (each "
		    "member reserves what it admits); use shared"));
	if (s->nodes > CLUSTER_GANG_MAX) {
		xasprintf(&why, "nodes: at most %u members in a gang",
		    CLUSTER_GANG_MAX);
		return (why);
	}
	for (i = 0; i < n; i++) {
		if (!cluster_member_could(&v[i], s))
			continue;
		could++;
		for (c = fit = typed = 0; c < v[i].ncards; c++) {
			typed += s->type[0] == '\0' || jobspec_type_is(
			    v[i].cards[c].vendor, v[i].cards[c].model, s->type);
			fit += cs_card_could(&v[i].cards[c], s);
		}
		if (s->ncards == 0 || s->seats == 0 || fit >= s->ncards) {
			if (++hold >= s->nodes)
				return (NULL);
			continue;
		}
		most = v[i].ncards > most ? v[i].ncards : most;
		mtyped = typed > mtyped ? typed : mtyped;
	}
	if (hold > 0) {
		xasprintf(&why, "nodes: a gang of %u needs %u members that "
		    "could hold a part; %u could", s->nodes, s->nodes, hold);
		return (why);
	}
	if (could == 0)
		return (cs_refuse_member(v, n, s));
	if (most == 0)
		return (xstrdup("no member has a GPU"));
	if (s->type[0] != '\0' && mtyped == 0)
		xasprintf(&why, "no member has a GPU of type %s", s->type);
	else if (mtyped < s->ncards)
		xasprintf(&why, "no member has %u GPUs%s%s", s->ncards,
		    *s->type ? " of type " : "", s->type);
	else
		why = xstrdup("no member has a card with that much memory");
	return (why);
}

/* The cards of m with room for s now, in cards; how many. */
u_int
cluster_room_cards(const struct cluster_room *m,
    const struct cluster_shape *s, u_int *cards)
{
	u_int		 c, n = 0;
	uint64_t	 need;

	for (c = 0; c < m->m.ncards && c < CLUSTER_CARDS; c++) {
		need = cs_need(s, m->m.cards[c].memory);
		if (m->used[c] + s->seats > SEATS_PER_CARD ||
		    m->mused[c] + need > m->m.cards[c].memory ||
		    m->m.cards[c].memory - m->mused[c] < s->vram ||
		    !cs_card_could(&m->m.cards[c], s))
			continue;
		cards[n++] = c;
	}
	return (n);
}

/* The cards of m that s fits on now, best fit first; 0 if too few. */
u_int
cluster_room_fit(const struct cluster_room *m, const struct cluster_shape *s,
    u_int *cards, u_int *left)
{
	u_int		 n, i, j, t;

	*left = 0;
	if ((n = cluster_room_cards(m, s, cards)) < s->ncards)
		return (0);
	/* the fullest cards first: best fit */
	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && m->used[cards[j]] >
		    m->used[cards[j - 1]]; j--) {
			t = cards[j];
			cards[j] = cards[j - 1];
			cards[j - 1] = t;
		}
	}
	for (i = 0; i < s->ncards; i++)
		*left += SEATS_PER_CARD - m->used[cards[i]] - s->seats;
	return (s->ncards);
}

/* Whether m has the CPUs and RAM s reserves, and is the member it asks. */
int
cluster_room_has(const struct cluster_room *m, const struct cluster_shape *s)
{
	return (cluster_member_could(&m->m, s) &&
	    m->cpus + s->cpus <= m->m.cpus &&
	    m->ram + s->ram <= m->m.ram);
}

/* Commits s on m's cards (sign 1), or takes it back (-1). */
void
cluster_room_charge(struct cluster_room *m, const struct cluster_shape *s,
    const u_int *cards, u_int n, int sign)
{
	u_int	 i;

	m->njobs += sign;
	m->cpus += sign * s->cpus;
	m->ram += sign * s->ram;
	for (i = 0; i < n && i < s->ncards; i++) {
		if (cards[i] >= m->m.ncards || cards[i] >= CLUSTER_CARDS)
			continue;
		m->used[cards[i]] += sign * s->seats;
		m->mused[cards[i]] += sign * cs_need(s,
		    m->m.cards[cards[i]].memory);
	}
}
