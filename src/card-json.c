/*
 * card-json.c: reading the JSON that amd-smi, rocm-smi and xpu-smi print.
 * Its shape changes between versions (a list of GPUs, the same list under
 * "gpu_data", or one object; a number as an integer, a string, "N MB" or
 * {"value": N, "unit": "MB"}), so every accessor here takes any of those
 * and treats "N/A" as absent rather than as an error.
 */

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

#define CARD_JSON_TRIES	8	/* candidate lines tried before giving up */

/* A number as a tool wrote it: whole part, fraction and unit. */
struct cj_num {
	uint64_t	 whole;
	double		 frac;
	char		 unit[8];
};

static const struct {
	const char	*name;
	uint64_t	 mult;
} cj_units[] = {
	{ "B", 1 },
	{ "K", 1ULL << 10 }, { "KB", 1ULL << 10 }, { "KiB", 1ULL << 10 },
	{ "M", 1ULL << 20 }, { "MB", 1ULL << 20 }, { "MiB", 1ULL << 20 },
	{ "G", 1ULL << 30 }, { "GB", 1ULL << 30 }, { "GiB", 1ULL << 30 },
	{ "T", 1ULL << 40 }, { "TB", 1ULL << 40 }, { "TiB", 1ULL << 40 },
};

/*
 * Parses the tool's output as JSON.  Some versions print warnings before
 * the document, so it starts at the first line that opens with '{' or '['.
 * Returns a new reference, or NULL with *cause.
 */
json_t *
card_json_load(const char *text, char **cause)
{
	const char	*line, *p, *nl;
	json_t		*j;
	json_error_t	 err;
	u_int		 tries = 0, lineno = 1;
	char		*first = NULL;

	for (line = text; line != NULL; line = nl, lineno++) {
		if ((nl = strchr(line, '\n')) != NULL)
			nl++;
		p = line + strspn(line, " \t\r");
		if (*p != '{' && *p != '[')
			continue;
		j = json_loads(p, JSON_REJECT_DUPLICATES, &err);
		if (j != NULL) {
			free(first);
			return (j);
		}
		if (first == NULL)
			xasprintf(&first, "bad JSON at line %d: %s",
			    err.line + (int)lineno - 1, err.text);
		if (++tries == CARD_JSON_TRIES)
			break;
	}
	if (first == NULL)
		xasprintf(&first, "no JSON in the output");
	*cause = first;
	return (NULL);
}

/*
 * Returns the list of per-GPU objects in root (a new reference): root
 * itself if it is a list, its "gpu_data" list (amd-smi 26 and later), or
 * root alone in a list if it is one GPU's object (older amd-smi with one
 * GPU).  NULL with *cause otherwise.
 */
json_t *
card_json_list(json_t *root, char **cause)
{
	json_t	*a, *v;

	if (json_is_array(root))
		return (json_incref(root));
	if (!json_is_object(root))
		goto bad;
	if ((v = json_object_get(root, "gpu_data")) != NULL) {
		if (!json_is_array(v))
			goto bad;
		return (json_incref(v));
	}
	if (json_object_get(root, "gpu") == NULL)
		goto bad;
	a = json_array();
	json_array_append(a, root);
	return (a);
bad:
	xasprintf(cause, "expected a list of GPUs");
	return (NULL);
}

/* Returns obj's member key (borrowed), the case of key not mattering. */
json_t *
card_json_get(json_t *obj, const char *key)
{
	const char	*k;
	json_t		*v;

	if (!json_is_object(obj))
		return (NULL);
	if ((v = json_object_get(obj, key)) != NULL)
		return (v);
	json_object_foreach(obj, k, v) {
		if (strcasecmp(k, key) == 0)
			return (v);
	}
	return (NULL);
}

/*
 * Returns obj's string member key, trimmed (the caller frees it), or NULL
 * if it is missing, not a string, "N/A" or not fit to keep.
 */
char *
card_json_text(json_t *obj, const char *key)
{
	json_t	*v = card_json_get(obj, key);
	char	*copy, *s;

	if (!json_is_string(v) || json_string_length(v) > 255)
		return (NULL);
	copy = xstrdup(json_string_value(v));
	s = strtrim(copy);
	if (card_na(s) || !card_text_ok(s)) {
		free(copy);
		return (NULL);
	}
	memmove(copy, s, strlen(s) + 1);
	return (copy);
}

/* Parses "196592", "0x4a", "16288.00", "196592 MB" into n. */
static int
cj_num_string(const char *str, struct cj_num *n)
{
	char	 buf[64], *s, *p;
	size_t	 i;
	double	 scale = 0.1;

	if (strlen(str) >= sizeof buf)
		return (-1);
	snprintf(buf, sizeof buf, "%s", str);
	s = strtrim(buf);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return (card_parse_u64(s, &n->whole));
	if (!isdigit((u_char)*s))
		return (-1);
	for (p = s; isdigit((u_char)*p); p++)
		;
	if (*p == '.') {
		*p++ = '\0';
		for (; isdigit((u_char)*p); p++, scale /= 10)
			n->frac += (*p - '0') * scale;
	}
	for (; *p == ' '; p++)
		*p = '\0';
	for (i = 0; isalpha((u_char)p[i]); i++)
		;
	if (p[i] != '\0' || i >= sizeof n->unit)
		return (-1);
	memcpy(n->unit, p, i);
	*p = '\0';
	return (card_parse_u64(s, &n->whole));
}

static int
cj_num(json_t *v, struct cj_num *n, int depth)
{
	json_t	*unit;
	double	 d;

	if (json_is_object(v) && depth == 0) {
		unit = json_object_get(v, "unit");
		if (json_is_string(unit) &&
		    json_string_length(unit) < sizeof n->unit)
			snprintf(n->unit, sizeof n->unit, "%s",
			    json_string_value(unit));
		return (cj_num(json_object_get(v, "value"), n, 1));
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		n->whole = (uint64_t)json_integer_value(v);
		return (0);
	}
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (!isfinite(d) || d < 0 || d >= 9.2e18)
			return (-1);
		n->whole = (uint64_t)d;
		n->frac = d - (double)n->whole;
		return (0);
	}
	if (json_is_string(v))
		return (cj_num_string(json_string_value(v), n));
	return (-1);
}

/* Reads a count (units ignored); -1 if v is absent, "N/A" or not one. */
int
card_json_u64(json_t *v, uint64_t *out)
{
	struct cj_num	 n;

	memset(&n, 0, sizeof n);
	if (cj_num(v, &n, 0) != 0)
		return (-1);
	*out = n.whole;
	return (0);
}

/*
 * Reads a size in bytes: the unit comes with the value ("MB" is MiB, as
 * the tools mean it) or is unit when the value has none.
 */
int
card_json_bytes(json_t *v, const char *unit, uint64_t *out)
{
	struct cj_num	 n;
	uint64_t	 mult = 0;
	size_t		 i;

	memset(&n, 0, sizeof n);
	if (cj_num(v, &n, 0) != 0)
		return (-1);
	if (n.unit[0] != '\0')
		unit = n.unit;
	for (i = 0; i < nitems(cj_units); i++) {
		if (strcasecmp(unit, cj_units[i].name) == 0)
			mult = cj_units[i].mult;
	}
	if (mult == 0 || n.whole > (UINT64_MAX - mult) / mult)
		return (-1);
	*out = n.whole * mult + (uint64_t)(n.frac * (double)mult);
	return (0);
}

/* Reads obj's member key as a card index: 0 to CARDS_MAX - 1. */
int
card_json_index(json_t *obj, const char *key, int *out)
{
	json_t	*v = card_json_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) >= CARDS_MAX)
		return (-1);
	*out = (int)json_integer_value(v);
	return (0);
}
