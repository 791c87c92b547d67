/*
 * doctor.c: gmux doctor's findings, one line each (ok, warn or fail, and
 * the fix for what is not ok), or a JSON array.
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "doctor-int.h"

static const char *const doctor_names[] = { "ok", "warn", "fail" };

/* A finding: check, level, fix (NULL if ok), and what was seen. */
void
doctor_add(struct doctor *d, const char *check, enum doctor_level level,
    const char *fix, const char *fmt, ...)
{
	struct doctor_finding	*f;
	va_list			 ap;

	d->v = xreallocarray(d->v, d->n + 1, sizeof *d->v);
	f = &d->v[d->n++];
	f->check = xstrdup(check);
	f->level = level;
	f->fix = fix != NULL && level != DOCTOR_OK ? xstrdup(fix) : NULL;
	va_start(ap, fmt);
	xvasprintf(&f->detail, fmt, ap);
	va_end(ap);
}

void
doctor_print(const struct doctor *d, FILE *f)
{
	const struct doctor_finding	*x;
	u_int				 i;

	for (i = 0; i < d->n; i++) {
		x = &d->v[i];
		fprintf(f, "%-4s  %-18s %s", doctor_names[x->level], x->check,
		    x->detail);
		if (x->fix != NULL)
			fprintf(f, "; fix: %s", x->fix);
		fputc('\n', f);
	}
}

/* The findings as a JSON array; the caller owns it. */
json_t *
doctor_json(const struct doctor *d)
{
	const struct doctor_finding	*x;
	json_t				*a = json_array();
	u_int				 i;

	for (i = 0; i < d->n; i++) {
		x = &d->v[i];
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s*}",
		    "check", x->check, "status", doctor_names[x->level],
		    "detail", x->detail, "fix", x->fix));
	}
	return (a);
}

int
doctor_failed(const struct doctor *d)
{
	u_int	 i;

	for (i = 0; i < d->n; i++) {
		if (d->v[i].level == DOCTOR_FAIL)
			return (1);
	}
	return (0);
}

void
doctor_clear(struct doctor *d)
{
	u_int	 i;

	for (i = 0; i < d->n; i++) {
		free(d->v[i].check);
		free(d->v[i].detail);
		free(d->v[i].fix);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}
