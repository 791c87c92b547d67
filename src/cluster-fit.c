/*
 * cluster-fit.c: what a job asks of a member, pure (docs/cluster.md,
 * "Placement"): a job record's request parsed into a shape, and the
 * reason no member could ever hold one (at submission, and for the queue's
 * reasons).  A member's room now is the scheduler's (cluster-sched.c).
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

/*
 * A card's memory in use as a member publishes it, pub until now: the
 * measure rounded up to CLUSTER_MEM_STEP, changed only when that moved by
 * more than a step from pub, so a card whose use wobbles about a step
 * boundary rewrites no record (what is published is at most a step below
 * the measure).
 */
uint64_t
cluster_use_step(uint64_t pub, uint64_t measured)
{
	uint64_t	 up;

	if (measured == CARD_UNKNOWN)
		return (CARD_UNKNOWN);
	up = (measured + CLUSTER_MEM_STEP - 1) / CLUSTER_MEM_STEP *
	    CLUSTER_MEM_STEP;
	if (pub == CARD_UNKNOWN || up > pub + CLUSTER_MEM_STEP ||
	    up + CLUSTER_MEM_STEP < pub)
		return (up);
	return (pub);
}

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

/* Whether a card of the members of v measures its memory in use. */
static int
cs_measured(const struct cluster_member *v, u_int n)
{
	u_int	 i, c;

	for (i = 0; i < n; i++) {
		for (c = 0; c < v[i].ncards; c++) {
			if (v[i].cards[c].used != CARD_UNKNOWN)
				return (1);
		}
	}
	return (0);
}

/*
 * Why no member of v could ever hold s, or NULL if one could (the caller
 * frees the reason).
 */
char *
cluster_refusal(const struct cluster_member *v, u_int n,
    const struct cluster_shape *s)
{
	u_int		 i, c, typed, most = 0, mtyped = 0, could = 0;
	u_int		 hold = 0;
	char		*why;

	if (n == 0)
		return (xstrdup("no member is live"));
	if (s->nodes > CLUSTER_GANG_MAX) {
		xasprintf(&why, "nodes: at most %u members in a gang",
		    CLUSTER_GANG_MAX);
		return (why);
	}
	for (i = 0; i < n; i++) {
		if (!cluster_member_could(&v[i], s))
			continue;
		could++;
		for (c = typed = 0; c < v[i].ncards; c++)
			typed += s->type[0] == '\0' || jobspec_type_is(
			    v[i].cards[c].vendor, v[i].cards[c].model, s->type);
		if (cluster_member_holds(&v[i], s)) {
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
	else if (s->mode == JOBSPEC_OVERCOMMIT && !cs_measured(v, n))
		why = xstrdup("mode: overcommit admits on measured memory use, "
		    "and no member measures its cards' (fake cards do not)");
	else
		why = xstrdup("no member has a card with that much memory");
	return (why);
}
