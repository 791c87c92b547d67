/* output.c: aligned tables and JSON for the CLI's listings. */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

struct table {
	u_int		 ncols;
	u_int		 nrows;
	char		**cells;	/* row-major, header first */
};

/* Creates a table with these column headers; free with table_free. */
struct table *
table_create(const char *const *headers, u_int ncols)
{
	struct table	*t;
	u_int		 i;

	t = xcalloc(1, sizeof *t);
	t->ncols = ncols;
	t->cells = xcalloc(ncols, sizeof *t->cells);
	for (i = 0; i < ncols; i++)
		t->cells[i] = xstrdup(headers[i]);
	t->nrows = 1;
	return (t);
}

/* Adds a row: ncols strings (copied; NULL prints as "-"). */
void
table_add(struct table *t, ...)
{
	va_list		 ap;
	const char	*s;
	u_int		 i;

	t->cells = xreallocarray(t->cells, (size_t)(t->nrows + 1) * t->ncols,
	    sizeof *t->cells);
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++) {
		s = va_arg(ap, const char *);
		t->cells[t->nrows * t->ncols + i] = xstrdup(s ? s : "-");
	}
	va_end(ap);
	t->nrows++;
}

void
table_print(struct table *t, FILE *f)
{
	size_t	*w;
	u_int	 r, c;

	w = xcalloc(t->ncols, sizeof *w);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			size_t len = strlen(t->cells[r * t->ncols + c]);
			if (len > w[c])
				w[c] = len;
		}
	}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			if (c == t->ncols - 1)
				fprintf(f, "%s\n", cell);
			else
				fprintf(f, "%-*s  ", (int)w[c], cell);
		}
	}
	free(w);
}

void
table_free(struct table *t)
{
	u_int	 i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void
json_print(json_t *o, FILE *f)
{
	char	*text;

	text = json_dumps(o, JSON_INDENT(2)|JSON_ENCODE_ANY|
	    JSON_REAL_PRECISION(15));	/* 0.1, not 0.10000000000000001 */
	fprintf(f, "%s\n", text ? text : "null");
	free(text);
}
