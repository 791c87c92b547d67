/*
 * ignore.c: .gmuxignore, in gitignore's syntax and with its meaning:
 * blank lines and "#" comments; "!" re-includes; a trailing "/" matches
 * directories only; a pattern with a "/" other than a trailing one is
 * anchored to the directory of its file, one without matches a name at any
 * depth; "*" and "?" do not cross "/", "**" as a whole component does;
 * "[a-z]", "[!x]" classes; "\" escapes.  The last matching rule wins, and
 * rules from deeper .gmuxignore files come later.  Like git, nothing inside
 * an ignored directory can be re-included (it is not even read).
 *
 * The matcher follows git's wildmatch, including its early aborts, which
 * keep hostile patterns from taking exponential time.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define WM_MATCH		1
#define WM_NOMATCH		0
#define WM_ABORT_ALL		-1
#define WM_ABORT_TO_STARSTAR	-2

#define IGNORE_LINE_MAX		4096

/* The defaults, documented in docs/remote.md; .gmuxignore can negate them. */
static const char *ignore_default_rules[] = {
	".git/", ".hg/", ".svn/", "__pycache__/", "*.pyc", ".venv/",
	"node_modules/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
	".ipynb_checkpoints/", ".DS_Store",
};

struct ignore_rule {
	char		*pattern;
	char		*base;		/* "" or "dir/sub" (no trailing /) */
	int		 negate;
	int		 dironly;
	int		 anchored;
};

struct ignore {
	struct ignore_rule	*v;
	size_t			 n;
	size_t			 size;
};

/* Matches one [...] class at p against c; *end is set past the class. */
static int
wm_class(const char *p, u_char c, const char **end)
{
	int		 negate = 0, match = 0;
	u_char		 lo, hi;

	if (*p == '!' || *p == '^') {
		negate = 1;
		p++;
	}
	if (*p == ']') {
		match |= c == ']';
		p++;
	}
	for (; *p != ']'; p++) {
		if (*p == '\0')
			return (WM_ABORT_ALL);
		if (*p == '\\' && *++p == '\0')
			return (WM_ABORT_ALL);
		lo = hi = (u_char)*p;
		if (p[1] == '-' && p[2] != ']' && p[2] != '\0') {
			p += 2;
			if (*p == '\\' && *++p == '\0')
				return (WM_ABORT_ALL);
			hi = (u_char)*p;
		}
		if (c >= lo && c <= hi)
			match = 1;
	}
	*end = p;
	return (match != negate && c != '/' ? WM_MATCH : WM_NOMATCH);
}

static int
wm(const char *start, const char *p, const char *t)
{
	const char	*q, *prev;
	int		 r, slash;

	for (; *p != '\0'; p++, t++) {
		if (*t == '\0' && *p != '*')
			return (WM_ABORT_ALL);
		switch (*p) {
		case '\\':
			if (*++p == '\0' || *t != *p)
				return (WM_NOMATCH);
			break;
		case '?':
			if (*t == '/')
				return (WM_NOMATCH);
			break;
		case '[':
			if ((r = wm_class(p + 1, (u_char)*t, &q)) != WM_MATCH)
				return (r);
			p = q;
			break;
		case '*':
			prev = p;
			slash = 0;
			if (p[1] == '*') {
				while (p[1] == '*')
					p++;
				/* A whole component: "**" crosses "/". */
				if ((prev == start || prev[-1] == '/') &&
				    (p[1] == '\0' || p[1] == '/')) {
					if (p[1] == '/' &&
					    wm(start, p + 2, t) == WM_MATCH)
						return (WM_MATCH);
					slash = 1;
				}
			}
			if (p[1] == '\0') {
				if (!slash && strchr(t, '/') != NULL)
					return (WM_NOMATCH);
				return (WM_MATCH);
			}
			for (; *t != '\0'; t++) {
				r = wm(start, p + 1, t);
				if (r != WM_NOMATCH) {
					if (!slash || r != WM_ABORT_TO_STARSTAR)
						return (r);
				} else if (!slash && *t == '/')
					return (WM_ABORT_TO_STARSTAR);
			}
			return (WM_ABORT_ALL);
		default:
			if (*t != *p)
				return (WM_NOMATCH);
			break;
		}
	}
	return (*t == '\0' ? WM_MATCH : WM_NOMATCH);
}

/* gitignore's pattern match of a whole path (wildmatch, WM_PATHNAME). */
int
ignore_wildmatch(const char *pattern, const char *text)
{
	return (wm(pattern, pattern, text) == WM_MATCH);
}

struct ignore *
ignore_create(void)
{
	return (xcalloc(1, sizeof (struct ignore)));
}

void
ignore_truncate(struct ignore *ig, size_t n)
{
	while (ig->n > n) {
		ig->n--;
		free(ig->v[ig->n].pattern);
		free(ig->v[ig->n].base);
	}
}

void
ignore_free(struct ignore *ig)
{
	if (ig == NULL)
		return;
	ignore_truncate(ig, 0);
	free(ig->v);
	free(ig);
}

size_t
ignore_mark(const struct ignore *ig)
{
	return (ig->n);
}

/* Adds one line of a .gmuxignore read in directory base. */
static void
ignore_add_line(struct ignore *ig, const char *base, const char *s,
    size_t len)
{
	struct ignore_rule	 r;
	char			*slash;

	memset(&r, 0, sizeof r);
	/* Trailing spaces go unless escaped. */
	while (len > 0 && s[len - 1] == ' ' && !(len > 1 && s[len - 2] == '\\'))
		len--;
	if (len == 0 || s[0] == '#' || len > IGNORE_LINE_MAX)
		return;
	if (s[0] == '!') {
		r.negate = 1;
		s++;
		len--;
	}
	if (len > 0 && s[len - 1] == '/') {
		r.dironly = 1;
		len--;
	}
	if (len > 0 && s[0] == '/') {
		r.anchored = 1;
		s++;
		len--;
	}
	if (len == 0)
		return;
	r.pattern = xstrndup(s, len);
	if (strlen(r.pattern) != len) {		/* a NUL in the line */
		free(r.pattern);
		return;
	}
	if ((slash = strchr(r.pattern, '/')) != NULL)
		r.anchored = 1;
	r.base = xstrdup(base);
	if (ig->n == ig->size) {
		ig->size = ig->size ? ig->size * 2 : 16;
		ig->v = xreallocarray(ig->v, ig->size, sizeof *ig->v);
	}
	ig->v[ig->n++] = r;
}

/*
 * Adds the rules in text, a .gmuxignore found in directory base ("" for
 * the top).  Like git, a line that is not a valid pattern is still taken
 * as one; there are no errors.
 */
void
ignore_parse(struct ignore *ig, const char *base, const char *text,
    size_t len)
{
	const char	*end = text + len, *nl;
	size_t		 n;

	while (text < end) {
		if ((nl = memchr(text, '\n', (size_t)(end - text))) == NULL)
			nl = end;
		n = (size_t)(nl - text);
		if (n > 0 && text[n - 1] == '\r')
			n--;
		ignore_add_line(ig, base, text, n);
		text = nl + 1;
	}
}

void
ignore_defaults(struct ignore *ig)
{
	size_t	 i;

	for (i = 0; i < nitems(ignore_default_rules); i++) {
		ignore_add_line(ig, "", ignore_default_rules[i],
		    strlen(ignore_default_rules[i]));
	}
}

static int
ignore_rule_match(const struct ignore_rule *r, const char *path, int isdir)
{
	const char	*rel = path, *name;
	size_t		 blen = strlen(r->base);

	if (r->dironly && !isdir)
		return (0);
	if (blen != 0) {
		if (strncmp(path, r->base, blen) != 0 || path[blen] != '/')
			return (0);
		rel = path + blen + 1;
	}
	if (r->anchored)
		return (ignore_wildmatch(r->pattern, rel));
	name = strrchr(rel, '/');
	return (ignore_wildmatch(r->pattern, name != NULL ? name + 1 : rel));
}

/* Returns 1 if path (relative to the top) is ignored. */
int
ignore_match(const struct ignore *ig, const char *path, int isdir)
{
	size_t	 i;

	for (i = ig->n; i > 0; i--) {
		if (ignore_rule_match(&ig->v[i - 1], path, isdir))
			return (!ig->v[i - 1].negate);
	}
	return (0);
}
