/*
 * array.c: an array job's index set as Slurm writes it: "0-15%4", "1-9:2",
 * "1,3,10-12".  Pure: text in, ranges out.  Ranges come in ascending order
 * and do not overlap, so the n-th index and an index's place are found by
 * walking a few ranges, never by listing a million indices.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define ARRAY_MAX_RANGES	1024

void
array_clear(struct array_spec *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* Reads a decimal number of at most 7 digits at *s; -1 if there is none. */
static int
array_number(const char **s, u_int *out)
{
	const char	*p = *s;
	u_int		 v = 0;

	if (*p < '0' || *p > '9')
		return (-1);
	while (*p >= '0' && *p <= '9' && p - *s < 8)
		v = v * 10 + (u_int)(*p++ - '0');
	if (*p >= '0' && *p <= '9')
		return (-1);
	*out = v;
	*s = p;
	return (0);
}

/* One item of the list: N, N-M or N-M:STEP. */
static int
array_item(const char **s, struct array_range *r, char **cause)
{
	r->step = 1;
	if (array_number(s, &r->lo) != 0)
		goto bad;
	r->hi = r->lo;
	if (**s == '-') {
		(*s)++;
		if (array_number(s, &r->hi) != 0 || r->hi < r->lo)
			goto bad;
		if (**s == ':') {
			(*s)++;
			if (array_number(s, &r->step) != 0 || r->step == 0)
				goto bad;
		}
	}
	if (r->hi > ARRAY_MAX_INDEX) {
		xasprintf(cause, "array: index %u is past %u", r->hi,
		    ARRAY_MAX_INDEX);
		return (-1);
	}
	/* The last index the step reaches. */
	r->hi = r->lo + (r->hi - r->lo) / r->step * r->step;
	return (0);
bad:
	xasprintf(cause, "array: expected N, N-M or N-M:STEP (like 0-15%%4 "
	    "or 1,3,5)");
	return (-1);
}

static u_int
array_range_count(const struct array_range *r)
{
	return ((r->hi - r->lo) / r->step + 1);
}

/* Fills a from text like "0-15:2,20%4"; -1 with *cause if it is bad. */
int
array_parse(const char *text, struct array_spec *a, char **cause)
{
	const char		*s = text;
	struct array_range	 r;

	memset(a, 0, sizeof *a);
	for (;;) {
		if (array_item(&s, &r, cause) != 0)
			goto fail;
		if (a->n > 0 && r.lo <= a->v[a->n - 1].hi) {
			xasprintf(cause, "array: %u comes after %u: list "
			    "indices in ascending order, once each", r.lo,
			    a->v[a->n - 1].hi);
			goto fail;
		}
		if (a->n == ARRAY_MAX_RANGES) {
			xasprintf(cause, "array: more than %u ranges",
			    ARRAY_MAX_RANGES);
			goto fail;
		}
		a->v = xreallocarray(a->v, a->n + 1, sizeof *a->v);
		a->v[a->n++] = r;
		a->count += array_range_count(&r);
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '%') {
		s++;
		if (array_number(&s, &a->limit) != 0 || a->limit == 0) {
			xasprintf(cause, "array: %% takes how many elements "
			    "may run at once (1 or more)");
			goto fail;
		}
	}
	if (*s != '\0') {
		xasprintf(cause, "array: unexpected '%c'", *s);
		goto fail;
	}
	return (0);
fail:
	array_clear(a);
	return (-1);
}

/* The n-th index (0-based, n < count). */
u_int
array_index(const struct array_spec *a, u_int n)
{
	u_int	 i, c;

	for (i = 0; i < a->n; i++) {
		c = array_range_count(&a->v[i]);
		if (n < c)
			return (a->v[i].lo + n * a->v[i].step);
		n -= c;
	}
	return (UINT32_MAX);
}

/* Where index is in the set (0-based), or -1 if it is not in it. */
int64_t
array_position(const struct array_spec *a, u_int index)
{
	const struct array_range	*r;
	int64_t				 before = 0;
	u_int				 i;

	for (i = 0; i < a->n; i++) {
		r = &a->v[i];
		if (index >= r->lo && index <= r->hi) {
			if ((index - r->lo) % r->step != 0)
				return (-1);
			return (before + (index - r->lo) / r->step);
		}
		before += array_range_count(r);
	}
	return (-1);
}

/*
 * The set from its n-th index on, in the text array_parse reads (with the
 * limit): "4-15%4" for what of "0-15%4" has not started.  Allocated; ""
 * if nothing is left.
 */
char *
array_format(const struct array_spec *a, u_int from)
{
	const struct array_range	*r;
	char				*s = xstrdup(""), *t;
	u_int				 i, c, lo;

	for (i = 0; i < a->n; i++) {
		r = &a->v[i];
		c = array_range_count(r);
		if (from >= c) {
			from -= c;
			continue;
		}
		lo = r->lo + from * r->step;
		from = 0;
		if (lo == r->hi)
			xasprintf(&t, "%s%s%u", s, *s ? "," : "", lo);
		else if (r->step == 1)
			xasprintf(&t, "%s%s%u-%u", s, *s ? "," : "", lo, r->hi);
		else
			xasprintf(&t, "%s%s%u-%u:%u", s, *s ? "," : "", lo,
			    r->hi, r->step);
		free(s);
		s = t;
	}
	if (*s != '\0' && a->limit != 0) {
		xasprintf(&t, "%s%%%u", s, a->limit);
		free(s);
		s = t;
	}
	return (s);
}
