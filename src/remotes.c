/*
 * remotes.c: the hosts a client knows (`gmux remote add/ls/rm/default`),
 * kept in the client's configuration directory in one JSON file, mode
 * 0600 since it holds tokens, replaced atomically:
 *
 *	{"default":"gpu1","remotes":[{"name":"gpu1","target":T}, ...]}
 *
 * where T is TOKEN@HOST:PORT#PIN.  Also: choosing a host for a job from
 * what each said about its room, and the line `gmux serve --addr` prints.
 */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define REMOTES_MAX_FILE	(1024 * 1024)

/* Returns the file's path (beside the client's config); caller frees. */
char *
remotes_path(void)
{
	char	*dir, *slash, *s;

	dir = xstrdup(path_config());
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	xasprintf(&s, "%s/remotes.json", dir);
	free(dir);
	return (s);
}

/* A remote's name: 1 to 32 of [A-Za-z0-9._-], starting alphanumeric. */
int
remote_name_valid(const char *s)
{
	size_t	 i;

	for (i = 0; s[i] != '\0'; i++) {
		if (i >= 32 || !(isalnum((u_char)s[i]) ||
		    (i != 0 && (s[i] == '.' || s[i] == '_' || s[i] == '-'))))
			return (0);
	}
	return (i != 0);
}

void
remotes_clear(struct remotes *rs)
{
	u_int	 i;

	for (i = 0; i < rs->n; i++) {
		free(rs->v[i].name);
		target_clear(&rs->v[i].target);
	}
	free(rs->v);
	free(rs->dflt);
	free(rs->path);
	memset(rs, 0, sizeof *rs);
}

static int
remotes_parse(struct remotes *rs, const char *buf, size_t len, char **cause)
{
	json_t		*root, *arr, *o;
	json_error_t	 err;
	const char	*name, *target, *dflt = NULL;
	char		*why = NULL;
	size_t		 i;
	int		 rc = -1;

	if ((root = json_loadb(buf, len, 0, &err)) == NULL) {
		xasprintf(cause, "line %d: %s", err.line, err.text);
		return (-1);
	}
	if (json_unpack(root, "{s?s, s:o}", "default", &dflt, "remotes",
	    &arr) != 0 || !json_is_array(arr)) {
		xasprintf(cause, "no \"remotes\" array");
		goto out;
	}
	if (json_array_size(arr) > REMOTES_MAX) {
		xasprintf(cause, "more than %d remotes", REMOTES_MAX);
		goto out;
	}
	rs->v = xcalloc(json_array_size(arr), sizeof *rs->v);
	json_array_foreach(arr, i, o) {
		if (json_unpack(o, "{s:s, s:s}", "name", &name, "target",
		    &target) != 0 || !remote_name_valid(name) ||
		    target_parse(target, &rs->v[rs->n].target, &why) != 0) {
			xasprintf(cause, "remote %zu: %s", i + 1, why ? why :
			    "needs a name and a target");
			free(why);
			goto out;
		}
		rs->v[rs->n++].name = xstrdup(name);
	}
	if (dflt != NULL && remotes_find(rs, dflt) != NULL)
		rs->dflt = xstrdup(dflt);
	rc = 0;
out:
	json_decref(root);
	return (rc);
}

/* Loads the list at path (none yet is an empty list).  Returns 0 or -1. */
int
remotes_load(struct remotes *rs, const char *path, char **cause)
{
	char	*buf, *why = NULL;
	size_t	 len;
	int	 rc;

	memset(rs, 0, sizeof *rs);
	rs->path = xstrdup(path);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return (0);
	if ((buf = read_file(path, REMOTES_MAX_FILE, &len, cause)) == NULL)
		return (-1);
	rc = remotes_parse(rs, buf, len, &why);
	explicit_bzero(buf, len);
	free(buf);
	if (rc != 0) {
		xasprintf(cause, "%s: %s", path, why);
		free(why);
		remotes_clear(rs);
		rs->path = xstrdup(path);
	}
	return (rc);
}

int
remotes_save(const struct remotes *rs, char **cause)
{
	json_t	*arr = json_array(), *root;
	char	*t, *s, *dir, *slash;
	u_int	 i;
	int	 rc;

	for (i = 0; i < rs->n; i++) {
		t = target_format(&rs->v[i].target);
		json_array_append_new(arr, json_pack("{s:s, s:s}", "name",
		    rs->v[i].name, "target", t));
		explicit_bzero(t, strlen(t));
		free(t);
	}
	root = json_pack("{s:o}", "remotes", arr);
	if (rs->dflt != NULL)
		json_object_set_new(root, "default", json_string(rs->dflt));
	s = json_dumps(root, JSON_INDENT(1));
	json_decref(root);
	dir = xstrdup(rs->path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		mkdir_p(dir, 0700);
	}
	free(dir);
	rc = write_file_atomic(rs->path, s, strlen(s), 0600, cause);
	explicit_bzero(s, strlen(s));
	free(s);
	return (rc);
}

const struct remote *
remotes_find(const struct remotes *rs, const char *name)
{
	u_int	 i;

	for (i = 0; i < rs->n; i++) {
		if (strcmp(rs->v[i].name, name) == 0)
			return (&rs->v[i]);
	}
	return (NULL);
}

/* Adds a remote (the first one becomes the default). */
int
remotes_add(struct remotes *rs, const char *name, const char *target,
    char **cause)
{
	struct target	 t;

	if (!remote_name_valid(name)) {
		xasprintf(cause, "'%.32s' is not a remote name (letters, "
		    "digits, '.', '_' and '-', at most 32)", name);
		return (-1);
	}
	if (rs->n >= REMOTES_MAX) {
		xasprintf(cause, "at most %d remotes", REMOTES_MAX);
		return (-1);
	}
	if (remotes_find(rs, name) != NULL) {
		xasprintf(cause, "remote %s exists; gmux remote rm %s first",
		    name, name);
		return (-1);
	}
	if (target_parse(target, &t, cause) != 0)
		return (-1);
	rs->v = xreallocarray(rs->v, rs->n + 1, sizeof *rs->v);
	rs->v[rs->n].name = xstrdup(name);
	rs->v[rs->n++].target = t;
	if (rs->dflt == NULL)
		rs->dflt = xstrdup(name);
	return (0);
}

int
remotes_rm(struct remotes *rs, const char *name, char **cause)
{
	u_int	 i;

	for (i = 0; i < rs->n; i++) {
		if (strcmp(rs->v[i].name, name) == 0)
			break;
	}
	if (i == rs->n) {
		xasprintf(cause, "no remote %.32s", name);
		return (-1);
	}
	free(rs->v[i].name);
	target_clear(&rs->v[i].target);
	memmove(&rs->v[i], &rs->v[i + 1], (rs->n - i - 1) * sizeof *rs->v);
	rs->n--;
	if (rs->dflt != NULL && strcmp(rs->dflt, name) == 0) {
		free(rs->dflt);
		rs->dflt = rs->n ? xstrdup(rs->v[0].name) : NULL;
	}
	return (0);
}

int
remotes_set_default(struct remotes *rs, const char *name, char **cause)
{
	if (remotes_find(rs, name) == NULL) {
		xasprintf(cause, "no remote %.32s", name);
		return (-1);
	}
	free(rs->dflt);
	rs->dflt = xstrdup(name);
	return (0);
}

/* For `gmux remote ls`: everything but the tokens. */
json_t *
remotes_to_json(const struct remotes *rs)
{
	json_t	*arr = json_array();
	u_int	 i;

	for (i = 0; i < rs->n; i++) {
		json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, "
		    "s:b}", "name", rs->v[i].name, "host", rs->v[i].target.host,
		    "port", (int)rs->v[i].target.port, "pin",
		    rs->v[i].target.pin, "default", rs->dflt != NULL &&
		    strcmp(rs->dflt, rs->v[i].name) == 0));
	}
	return (arr);
}

/* The room a host's best fitting card leaves: seats, then memory. */
static int
remote_room_of(const struct remote_room *r, u_int seats, uint64_t mem,
    int64_t *left_seats, uint64_t *left_mem)
{
	const struct remote_card_room	*c;
	u_int				 i;
	int				 fits = 0;

	*left_seats = -1;
	*left_mem = 0;
	for (i = 0; i < r->ncards; i++) {
		c = &r->cards[i];
		if (c->seats_free < seats || c->mem_free < mem)
			continue;
		if ((int64_t)(c->seats_free - seats) > *left_seats ||
		    ((int64_t)(c->seats_free - seats) == *left_seats &&
		    c->mem_free - mem > *left_mem)) {
			*left_seats = c->seats_free - seats;
			*left_mem = c->mem_free - mem;
		}
		fits = 1;
	}
	return (fits);
}

/*
 * Chooses the host for a job of seats and mem from what each answered:
 * among hosts with a card that fits now, the one with the most seats left
 * on its best card (then the most memory); the default host wins ties.  If
 * none fits now, the default (or first) host that answered: the job queues
 * there.  Returns an index into v, or -1 if no host answered.
 */
int
remotes_pick(const struct remote_room *v, u_int n, u_int seats,
    uint64_t mem)
{
	int64_t		 best_seats = -1, s;
	uint64_t	 best_mem = 0, m;
	int		 best = -1, fallback = -1;
	u_int		 i;

	for (i = 0; i < n; i++) {
		if (!v[i].ok)
			continue;
		if (fallback == -1 ||
		    (v[i].is_default && !v[fallback].is_default))
			fallback = (int)i;
		if (!remote_room_of(&v[i], seats, mem, &s, &m))
			continue;
		if (s > best_seats || (s == best_seats && m > best_mem) ||
		    (s == best_seats && m == best_mem && v[i].is_default)) {
			best_seats = s;
			best_mem = m;
			best = (int)i;
		}
	}
	return (best != -1 ? best : fallback);
}

/*
 * The line `gmux serve --addr` prints once, for the token it just made:
 * host is how clients reach this machine (NULL: its host name).  Returns
 * it allocated; the caller wipes and frees it.
 */
char *
remotes_invite(const char *token, const char *host, u_int port,
    const char *pin)
{
	struct target	 t;
	char		 name[256], *tgt, *s;

	if (host == NULL || *host == '\0' || strcmp(host, "0.0.0.0") == 0 ||
	    strcmp(host, "::") == 0) {
		if (gethostname(name, sizeof name) != 0)
			snprintf(name, sizeof name, "localhost");
		name[sizeof name - 1] = '\0';
		host = name;
	}
	memset(&t, 0, sizeof t);
	t.token = (char *)token;
	t.host = (char *)host;
	t.port = port;
	snprintf(t.pin, sizeof t.pin, "%s", pin);
	tgt = target_format(&t);
	xasprintf(&s, "gmux remote add NAME %s", tgt);
	explicit_bzero(tgt, strlen(tgt));
	free(tgt);
	return (s);
}
