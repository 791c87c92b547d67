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
 * Patterns are compiled once into tokens and matched by simulating them as
 * an NFA (the set of pattern positions alive after each character), so a
 * match costs at most pattern x path steps whatever the input: a
 * backtracking matcher, even git's with its early aborts, can be driven
 * into exponential time by chains of "**" (the fuzzer found one).
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define IGNORE_LINE_MAX		4096

/* The defaults, documented in docs/remote.md; .gmuxignore can negate them. */
static const char *ignore_default_rules[] = {
	".git/", ".hg/", ".svn/", "__pycache__/", "*.pyc", ".venv/",
	"node_modules/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
	".ipynb_checkpoints/", ".DS_Store",
};

enum wm_type {
	WM_CHAR,	/* one byte */
	WM_ANY,		/* ?: one byte but '/' */
	WM_CLASS,	/* [...]: at pattern + off */
	WM_STAR,	/* *: any bytes but '/' */
	WM_ALL,		/* a final whole "**": anything */
	WM_DIRS,	/* a whole "**" and "/": nothing, or up to a "/", */
	WM_DIRS_LOOP,	/* ...which takes two states: entry and loop */
};

struct wm_tok {
	u_char		 type;
	u_char		 c;
	uint32_t	 off;
};

struct wm_pat {
	const char	*pattern;
	struct wm_tok	*v;
	size_t		 n;
	int		 never;		/* a broken class or escape */
};

/*
 * Most rules are a plain name (".git/", ".DS_Store") or a star and a
 * suffix ("*.pyc"): those are compared directly, without the NFA, which
 * matters when every file of a large tree is matched against every rule.
 */
enum ignore_kind {
	IGNORE_WILD,		/* the NFA */
	IGNORE_LITERAL,		/* lit, exactly */
	IGNORE_SUFFIX,		/* "*" then lit: a name ending in lit */
};

struct ignore_rule {
	struct wm_pat	 wm;
	char		*pattern;
	char		*base;		/* "" or "dir/sub" (no trailing /) */
	size_t		 blen;
	enum ignore_kind kind;
	char		*lit;		/* LITERAL, SUFFIX: the bytes */
	size_t		 litlen;
	int		 negate;
	int		 dironly;
	int		 anchored;
};

/* Off: every rule through the NFA (the tests compare the two ways). */
static int	ignore_fast = 1;

struct ignore {
	struct ignore_rule	*v;
	size_t			 n;
	size_t			 size;
};

/*
 * Matches one [...] class (p is past the '[') against c.  Returns 1 or 0,
 * or -1 if the class has no end; *end is set to its ']'.
 */
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
			return (-1);
		if (*p == '\\' && *++p == '\0')
			return (-1);
		lo = hi = (u_char)*p;
		if (p[1] == '-' && p[2] != ']' && p[2] != '\0') {
			p += 2;
			if (*p == '\\' && *++p == '\0')
				return (-1);
			hi = (u_char)*p;
		}
		if (c >= lo && c <= hi)
			match = 1;
	}
	*end = p;
	return (match != negate && c != '/');
}

/* A run of stars at p (i its offset): which token it is, and its end. */
static enum wm_type
wm_stars(const char *pattern, size_t i, size_t *next)
{
	size_t	 j = i;

	while (pattern[j] == '*')
		j++;
	*next = j;
	if (j - i < 2 || (i != 0 && pattern[i - 1] != '/'))
		return (WM_STAR);
	if (pattern[j] == '\0')
		return (WM_ALL);
	if (pattern[j] != '/')
		return (WM_STAR);
	*next = j + 1;
	return (WM_DIRS);
}

/* Compiles pattern into wp (which points into it: keep it alive). */
static void
wm_compile(const char *pattern, struct wm_pat *wp)
{
	const char	*end;
	struct wm_tok	 t;
	size_t		 i = 0, next;

	memset(wp, 0, sizeof *wp);
	wp->pattern = pattern;
	wp->v = xcalloc(2 * strlen(pattern) + 1, sizeof *wp->v);
	while (pattern[i] != '\0') {
		memset(&t, 0, sizeof t);
		next = i + 1;
		switch (pattern[i]) {
		case '\\':
			if (pattern[i + 1] == '\0')
				wp->never = 1;
			t.c = (u_char)pattern[i + 1];
			next = i + 2;
			break;
		case '?':
			t.type = WM_ANY;
			break;
		case '[':
			t.type = WM_CLASS;
			t.off = (uint32_t)(i + 1);
			if (wm_class(pattern + i + 1, 0, &end) == -1)
				wp->never = 1;
			else
				next = (size_t)(end - pattern) + 1;
			break;
		case '*':
			t.type = wm_stars(pattern, i, &next);
			break;
		default:
			t.c = (u_char)pattern[i];
			break;
		}
		if (wp->never)
			return;
		/*
		 * "**" that is not a whole component is a "*"; "**" twice
		 * one.
		 */
		if (!(wp->n > 0 && t.type == WM_STAR &&
		    wp->v[wp->n - 1].type == WM_STAR))
			wp->v[wp->n++] = t;
		if (t.type == WM_DIRS) {
			t.type = WM_DIRS_LOOP;
			wp->v[wp->n++] = t;
		}
		i = next;
	}
}

static void
wm_free(struct wm_pat *wp)
{
	free(wp->v);
	wp->v = NULL;
}

/* Marks state i alive, and those reachable from it on no input. */
static void
wm_add(const struct wm_pat *wp, u_char *set, size_t i)
{
	while (i <= wp->n && !set[i]) {
		set[i] = 1;
		if (i == wp->n)
			return;
		switch (wp->v[i].type) {
		case WM_STAR:
		case WM_ALL:
			i++;
			break;
		case WM_DIRS:
			i += 2;		/* no directory at all */
			break;
		default:
			return;
		}
	}
}

/* Runs the compiled pattern over text; 1 if it matches all of it. */
static int
wm_run(const struct wm_pat *wp, const char *text)
{
	u_char		 small[2][64], *cur, *nxt, *tmp, c;
	const char	*end;
	size_t		 i, n = wp->n;
	int		 alive = 1;

	if (wp->never)
		return (0);
	if (n + 1 <= sizeof small[0]) {
		cur = small[0];
		nxt = small[1];
	} else {
		cur = xmalloc(n + 1);
		nxt = xmalloc(n + 1);
	}
	memset(cur, 0, n + 1);
	wm_add(wp, cur, 0);
	for (; *text != '\0' && alive; text++) {
		c = (u_char)*text;
		memset(nxt, 0, n + 1);
		alive = 0;
		for (i = 0; i < n; i++) {
			if (!cur[i])
				continue;
			switch (wp->v[i].type) {
			case WM_CHAR:
				if (c == wp->v[i].c)
					wm_add(wp, nxt, i + 1);
				break;
			case WM_ANY:
				if (c != '/')
					wm_add(wp, nxt, i + 1);
				break;
			case WM_CLASS:
				if (wm_class(wp->pattern + wp->v[i].off, c,
				    &end) == 1)
					wm_add(wp, nxt, i + 1);
				break;
			case WM_STAR:
				if (c != '/')
					wm_add(wp, nxt, i);
				break;
			case WM_DIRS:
				wm_add(wp, nxt, i + 1);
				if (c == '/')
					wm_add(wp, nxt, i + 2);
				break;
			case WM_DIRS_LOOP:
				wm_add(wp, nxt, i);
				if (c == '/')
					wm_add(wp, nxt, i + 1);
				break;
			case WM_ALL:
				wm_add(wp, nxt, i);
				break;
			}
			alive = 1;
		}
		tmp = cur;
		cur = nxt;
		nxt = tmp;
	}
	alive = *text == '\0' && cur[n];
	if (n + 1 > sizeof small[0]) {
		free(cur);
		free(nxt);
	}
	return (alive);
}

/* gitignore's pattern match of a whole path (wildmatch, WM_PATHNAME). */
int
ignore_wildmatch(const char *pattern, const char *text)
{
	struct wm_pat	 wp;
	int		 r;

	wm_compile(pattern, &wp);
	r = wm_run(&wp, text);
	wm_free(&wp);
	return (r);
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
		wm_free(&ig->v[ig->n].wm);
		free(ig->v[ig->n].lit);
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

/* Sees whether a compiled pattern is a plain name or a star and a suffix. */
static void
ignore_classify(struct ignore_rule *r)
{
	const struct wm_pat	*wp = &r->wm;
	size_t			 i, first;

	r->kind = IGNORE_WILD;
	if (wp->never || wp->n == 0)
		return;
	first = wp->v[0].type == WM_STAR ? 1 : 0;
	for (i = first; i < wp->n; i++) {
		if (wp->v[i].type != WM_CHAR || wp->v[i].c == '\0')
			return;
	}
	if (first == 1 && wp->n == 1)
		return;		/* "*" alone: the NFA will do */
	r->litlen = wp->n - first;
	r->lit = xmalloc(r->litlen + 1);
	for (i = first; i < wp->n; i++)
		r->lit[i - first] = (char)wp->v[i].c;
	r->lit[r->litlen] = '\0';
	r->kind = first ? IGNORE_SUFFIX : IGNORE_LITERAL;
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
	r.blen = strlen(base);
	wm_compile(r.pattern, &r.wm);
	ignore_classify(&r);
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

/* Matches text (len bytes) against r's pattern. */
static int
ignore_rule_text(const struct ignore_rule *r, const char *text, size_t len)
{
	switch (ignore_fast ? r->kind : IGNORE_WILD) {
	case IGNORE_LITERAL:
		return (len == r->litlen && memcmp(text, r->lit, len) == 0);
	case IGNORE_SUFFIX:
		/* The star matches no "/" (text may be a path, anchored). */
		return (len >= r->litlen && memcmp(text + len - r->litlen,
		    r->lit, r->litlen) == 0 && memchr(text, '/', len -
		    r->litlen) == NULL);
	default:
		return (wm_run(&r->wm, text));
	}
}

/* name is path's last component; len is path's length. */
static int
ignore_rule_match(const struct ignore_rule *r, const char *path, size_t len,
    const char *name, int isdir)
{
	const char	*rel = path;

	if (r->dironly && !isdir)
		return (0);
	if (r->blen != 0) {
		if (len <= r->blen || path[r->blen] != '/' ||
		    memcmp(path, r->base, r->blen) != 0)
			return (0);
		rel = path + r->blen + 1;
	}
	if (r->anchored)
		return (ignore_rule_text(r, rel, len - (size_t)(rel - path)));
	return (ignore_rule_text(r, name, len - (size_t)(name - path)));
}

/* Tests only: 0 matches every rule with the NFA, as before the fast paths. */
void
ignore_set_fast(int on)
{
	ignore_fast = on;
}

/* Returns 1 if path (relative to the top) is ignored. */
int
ignore_match(const struct ignore *ig, const char *path, int isdir)
{
	const char	*name = strrchr(path, '/');
	size_t		 i, len = strlen(path);

	name = name != NULL ? name + 1 : path;
	for (i = ig->n; i > 0; i--) {
		if (ignore_rule_match(&ig->v[i - 1], path, len, name, isdir))
			return (!ig->v[i - 1].negate);
	}
	return (0);
}
