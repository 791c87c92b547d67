/*
 * jobfile.c: job files, as gmux submit reads them.  A job file is a script
 * whose first comment lines may hold directives: "#GMUX --flag value" takes
 * every request flag of gmux run (runopt.c), "#SBATCH --flag=value" the
 * common subset of Slurm's, translated.  As sbatch does, directives are
 * read up to the first line that is neither blank nor a comment.  Every
 * bad line gets its own error, naming its line; the parse goes on, so a
 * file with three mistakes says so once.  Pure but for --chdir's realpath.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "jobspec-int.h"

#define JOBFILE_MAX_WORDS	64	/* on one line */
#define JOBFILE_MAX_ERRORS	100

/* Slurm's flags that gmux takes, and what it calls them. */
static const struct {
	const char	*slurm;		/* long name, without -- */
	char		 letter;	/* short flag, or 0 */
	const char	*gmux;		/* runopt's name */
} jobfile_sbatch[] = {
	{ "job-name", 'J', "job-name" },
	{ "gres", 0, "gpus" },
	{ "gpus", 'G', "gpus" },
	{ "mem", 0, "ram" },
	{ "cpus-per-task", 'c', "cpus" },
	{ "nodes", 'N', "nodes" },
	{ "array", 'a', "array" },
	{ "time", 't', "time" },
	{ "output", 'o', "output" },
	{ "error", 'e', "error" },
	{ "chdir", 'D', "chdir" },
	{ "partition", 'p', "partition" },
};

void
jobfile_init(struct jobfile *f)
{
	memset(f, 0, sizeof *f);
}

void
jobfile_free(struct jobfile *f)
{
	u_int	 i;

	for (i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].value);
	}
	free(f->v);
	strv_free(f->errors);
	jobfile_init(f);
}

static void printflike(3, 4)
jobfile_error(struct jobfile *f, u_int line, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg, *full;

	if (strv_len(f->errors) >= JOBFILE_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	xasprintf(&full, "line %u: %s", line, msg);
	strv_add(&f->errors, full);
	free(full);
	free(msg);
}

static void
jobfile_add(struct jobfile *f, u_int line, const char *name, const char *v)
{
	f->v = xreallocarray(f->v, f->n + 1, sizeof *f->v);
	f->v[f->n].line = line;
	f->v[f->n].name = xstrdup(name);
	f->v[f->n].value = v != NULL ? xstrdup(v) : NULL;
	f->v[f->n].sbatch = NULL;
	f->n++;
}

/*
 * A directive's error, cause as gmux run's flag says it ("--ram: ..."),
 * in the words of the line: an #SBATCH flag's own name, and the field
 * not said twice ("--gpus: gpus: ...").
 */
static void
jobfile_apply_error(struct jobfile *f, const struct jobfile_dir *d,
    const char *cause)
{
	size_t	 len = strlen(d->name);

	if (strncmp(cause, "--", 2) != 0 || strncmp(cause + 2, d->name,
	    len) != 0 || strncmp(cause + 2 + len, ": ", 2) != 0) {
		jobfile_error(f, d->line, "%s", cause);	/* as it is */
		return;
	}
	cause += len + 4;
	if (strncmp(cause, d->name, len) == 0 && strncmp(cause + len, ": ",
	    2) == 0)
		cause += len + 2;
	if (d->sbatch != NULL)
		jobfile_error(f, d->line, "#SBATCH --%s: %s", d->sbatch,
		    cause);
	else
		jobfile_error(f, d->line, "--%s: %s", d->name, cause);
}

/*
 * Splits a directive line into words as a shell would: quotes ('' and
 * ""), backslashes, and a word that starts with # ends the line.  Returns
 * the number of words, or -1 with *why.
 */
static int
jobfile_words(const char *s, char **w, int max, const char **why)
{
	char	*b = xmalloc(strlen(s) + 1), *o;
	int	 n = 0, q;

	while (*s != '\0') {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (*s == '\0' || *s == '#')
			break;
		if (n == max) {
			*why = "too many words";
			goto fail;
		}
		for (o = b, q = 0; *s != '\0'; s++) {
			if (q == 0 && (*s == ' ' || *s == '\t' || *s == '\r'))
				break;
			if (q == 0 && (*s == '\'' || *s == '"'))
				q = *s;
			else if (q != 0 && *s == q)
				q = 0;
			else if (q != '\'' && *s == '\\' && s[1] != '\0')
				*o++ = *++s;
			else
				*o++ = *s;
		}
		if (q != 0) {
			*why = "a quote is not closed";
			goto fail;
		}
		w[n++] = xstrndup(b, (size_t)(o - b));
	}
	free(b);
	return (n);
fail:
	free(b);
	while (n > 0)
		free(w[--n]);
	return (-1);
}

/* --gres=gpu[:TYPE]:N as --gpus [TYPE:]N; NULL (and an error) if not. */
static char *
jobfile_gres(struct jobfile *f, u_int line, const char *v)
{
	char	*out;

	if (strncmp(v, "gpu", 3) != 0 || (v[3] != '\0' && v[3] != ':')) {
		jobfile_error(f, line, "--gres=%s: only gpu[:TYPE][:N] (like "
		    "gpu:a100:2)", v);
		return (NULL);
	}
	if (v[3] == '\0')
		return (xstrdup("1"));
	out = xstrdup(v + 4);
	return (out);
}

/* Slurm's --mem: megabytes unless it has a unit. */
static char *
jobfile_mem(const char *v)
{
	char	*out;
	size_t	 n = strlen(v);

	if (n > 0 && isdigit((u_char)v[n - 1]))
		xasprintf(&out, "%sM", v);
	else
		out = xstrdup(v);
	return (out);
}

/* One #SBATCH flag (name without dashes, maybe its value): gmux's own. */
static void
jobfile_sbatch_one(struct jobfile *f, u_int line, const char *name,
    int letter, const char *v)
{
	char	*tv = NULL;
	u_int	 i;

	for (i = 0; i < nitems(jobfile_sbatch); i++) {
		if (letter ? jobfile_sbatch[i].letter == letter :
		    strcmp(jobfile_sbatch[i].slurm, name) == 0)
			break;
	}
	if (i == nitems(jobfile_sbatch)) {
		jobfile_error(f, line, "#SBATCH %s%s: not one gmux reads "
		    "(it reads --job-name, --gres=gpu, --gpus, --mem, "
		    "--cpus-per-task, --nodes, --array, --time, --output, "
		    "--error, --chdir, --partition)", letter ? "-" : "--",
		    name);
		return;
	}
	if (v == NULL) {
		jobfile_error(f, line, "#SBATCH --%s: needs a value",
		    jobfile_sbatch[i].slurm);
		return;
	}
	if (strcmp(jobfile_sbatch[i].slurm, "gres") == 0 &&
	    (v = tv = jobfile_gres(f, line, v)) == NULL)
		return;
	if (strcmp(jobfile_sbatch[i].slurm, "mem") == 0)
		v = tv = jobfile_mem(v);
	jobfile_add(f, line, jobfile_sbatch[i].gmux, v);
	f->v[f->n - 1].sbatch = jobfile_sbatch[i].slurm;
	free(tv);
}

/*
 * The flags of one directive line: --name=value, --name value (if the
 * flag takes one), and for #SBATCH -X value.  Returns nothing: what is
 * wrong is an error on the line.
 */
static void
jobfile_flags(struct jobfile *f, u_int line, int sbatch, char **w, int n)
{
	char		*eq, name[64];
	const char	*v;
	int		 i, opt, letter;

	for (i = 0; i < n; i++) {
		letter = 0;
		if (sbatch && w[i][0] == '-' && w[i][1] != '-' &&
		    w[i][1] != '\0') {
			letter = (u_char)w[i][1];
			snprintf(name, sizeof name, "%c", letter);
			if (w[i][2] != '\0')
				v = w[i] + 2;
			else
				v = i + 1 < n ? w[++i] : NULL;
			jobfile_sbatch_one(f, line, name, letter, v);
			continue;
		}
		if (strncmp(w[i], "--", 2) != 0 || w[i][2] == '\0') {
			jobfile_error(f, line, "'%s' is not a flag (like "
			    "--gpus 1)", w[i]);
			break;	/* the rest of the line is its value */
		}
		snprintf(name, sizeof name, "%.*s", (int)strcspn(w[i] + 2,
		    "="), w[i] + 2);
		eq = strchr(w[i], '=');
		v = eq != NULL ? eq + 1 : NULL;
		if (sbatch) {
			if (v == NULL && i + 1 < n && w[i + 1][0] != '-')
				v = w[++i];
			jobfile_sbatch_one(f, line, name, 0, v);
			continue;
		}
		if ((opt = runopt_find(name)) == -1) {
			jobfile_error(f, line, "--%s: not a flag of gmux run "
			    "(see gmux run --help)", name);
			continue;
		}
		if (v == NULL && runopt_has_arg(opt)) {
			if (i + 1 == n) {
				jobfile_error(f, line, "--%s: needs a value",
				    name);
				continue;
			}
			v = w[++i];
		}
		jobfile_add(f, line, name, v);
	}
}

/* One line that starts with #GMUX or #SBATCH (prefix is its length). */
static void
jobfile_directive(struct jobfile *f, u_int line, const char *text,
    size_t prefix, int sbatch)
{
	char		*w[JOBFILE_MAX_WORDS];
	const char	*why = NULL;
	int		 n;

	if (text[prefix] != '\0' && text[prefix] != ' ' &&
	    text[prefix] != '\t' && text[prefix] != '\r') {
		jobfile_error(f, line, "%.*s must be followed by a space",
		    (int)prefix, text);
		return;
	}
	if ((n = jobfile_words(text + prefix, w, JOBFILE_MAX_WORDS,
	    &why)) == -1) {
		jobfile_error(f, line, "%s", why);
		return;
	}
	if (n == 0)
		jobfile_error(f, line, "%.*s without a flag", (int)prefix,
		    text);
	jobfile_flags(f, line, sbatch, w, n);
	while (n > 0)
		free(w[--n]);
}

/* The length of the line's #GMUX or #SBATCH, or 0. */
static size_t
jobfile_prefix(const char *s)
{
	if (strncmp(s, "#GMUX", 5) == 0)
		return (5);
	if (strncmp(s, "#SBATCH", 7) == 0)
		return (7);
	return (0);
}

/* Whether the line is blank or a comment (where directives may be). */
static int
jobfile_comment(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return (*s == '\0' || *s == '#');
}

/*
 * Reads a job file's directives into f (initialised).  Returns 0, or -1
 * if any line is wrong: f->errors then says which and why, one each.
 */
int
jobfile_parse(const char *text, size_t len, struct jobfile *f)
{
	const char	*p = text, *end = text + len, *nl;
	char		*s;
	u_int		 line = 0, body = 0;
	size_t		 n;

	if ((nl = memchr(text, '\0', len)) != NULL) {
		for (p = text; p < nl; p++)
			line += *p == '\n';
		jobfile_error(f, line + 1, "a NUL byte: not a text file");
		return (-1);
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		s = xstrndup(p, nl != NULL ? (size_t)(nl - p) : (size_t)(end -
		    p));
		p = nl != NULL ? nl + 1 : end;
		line++;
		if ((n = jobfile_prefix(s)) != 0) {
			if (body != 0 && (s[n] == '\0' ||
			    isspace((u_char)s[n])))
				jobfile_error(f, line, "%s after the script's "
				    "first command (line %u) is not read: move "
				    "it above", s[1] == 'G' ? "#GMUX" :
				    "#SBATCH", body);
			else if (body == 0)
				jobfile_directive(f, line, s, n, s[1] == 'S');
		} else if (body == 0 && !jobfile_comment(s))
			body = line;
		free(s);
	}
	return (f->errors != NULL ? -1 : 0);
}

/* Orders errors by their line ("line 3: ..."). */
static int
jobfile_cmp(const void *a, const void *b)
{
	const char	*x = *(char *const *)a, *y = *(char *const *)b;
	long		 lx = strtol(x + 5, NULL, 10);
	long		 ly = strtol(y + 5, NULL, 10);

	return (lx < ly ? -1 : lx > ly);
}

/*
 * Applies f's directives to request o, in order (a later one wins, as on a
 * command line); a bad value is an error on its line.  Returns -1 if any.
 */
int
jobfile_apply(struct jobfile *f, json_t *o)
{
	char	*cause;
	u_int	 i;
	int	 opt;

	for (i = 0; i < f->n; i++) {
		cause = NULL;
		if ((opt = runopt_find(f->v[i].name)) == -1)
			jobfile_error(f, f->v[i].line, "--%s: not a flag of "
			    "gmux run", f->v[i].name);
		else if (runopt_apply(o, opt, f->v[i].value, &cause) != 0)
			jobfile_apply_error(f, &f->v[i], cause);
		free(cause);
	}
	if (f->errors == NULL)
		return (0);
	qsort(f->errors, strv_len(f->errors), sizeof *f->errors, jobfile_cmp);
	return (-1);
}
