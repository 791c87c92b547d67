/*
 * token-grant.c: the clusters a token is granted (docs/cluster.md,
 * "Several clusters").  A grant is part of the token's entry in the
 * token file, so it is known wherever the token is checked: on the host
 * that made it, or on every host that shares the file (TOKENS).  An entry
 * without the field ("clusters" absent, as written before grants) is
 * granted the cluster of the host that checks it.
 *
 * File: {"tokens":[{..., "clusters": ["lab1", "lab2"]}, ...]}
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define TOKEN_GRANTS_MAX	64

/* A cluster's id: [A-Za-z0-9_-], 1 to 64 characters (as CLUSTER_ID). */
int
token_cluster_valid(const char *s)
{
	size_t	 n = strlen(s);

	return (n > 0 && n <= 64 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_-") == n);
}

void
token_grants_clear(struct token *tk)
{
	u_int	 i;

	for (i = 0; i < tk->nclusters; i++)
		free(tk->clusters[i]);
	free(tk->clusters);
	tk->clusters = NULL;
	tk->nclusters = 0;
	tk->granted = 0;
}

static void
token_grants_add(struct token *tk, const char *id)
{
	tk->clusters = xreallocarray(tk->clusters, tk->nclusters + 1,
	    sizeof *tk->clusters);
	tk->clusters[tk->nclusters++] = xstrdup(id);
	tk->granted = 1;
}

/* Reads entry o's "clusters" (absent: none written) into tk. */
int
token_grants_parse(json_t *o, struct token *tk, char **cause)
{
	json_t		*a = json_object_get(o, "clusters"), *v;
	const char	*id;
	size_t		 i;

	if (a == NULL)
		return (0);
	if (!json_is_array(a) || json_array_size(a) > TOKEN_GRANTS_MAX) {
		xasprintf(cause, "clusters: not a list of cluster ids");
		return (-1);
	}
	tk->granted = 1;
	json_array_foreach(a, i, v) {
		if ((id = json_string_value(v)) == NULL ||
		    !token_cluster_valid(id) || token_granted(tk, id)) {
			xasprintf(cause, "clusters: entry %zu is not a new "
			    "cluster id", i);
			token_grants_clear(tk);
			return (-1);
		}
		token_grants_add(tk, id);
	}
	return (0);
}

/* Sets o's "clusters" to tk's grants, if it has a list. */
void
token_grants_json(const struct token *tk, json_t *o)
{
	json_t	*a;
	u_int	 i;

	if (!tk->granted)
		return;
	a = json_array();
	for (i = 0; i < tk->nclusters; i++)
		json_array_append_new(a, json_string(tk->clusters[i]));
	json_object_set_new(o, "clusters", a);
}

/* dst gets src's grants (a joined token, its invite's). */
void
token_grants_copy(struct token *dst, const struct token *src)
{
	u_int	 i;

	token_grants_clear(dst);
	for (i = 0; i < src->nclusters; i++)
		token_grants_add(dst, src->clusters[i]);
	dst->granted = src->granted;
}

/*
 * Is tk granted cluster id?  An entry without a list is granted the
 * cluster of the host that checks it (the caller's own: id).
 */
int
token_granted(const struct token *tk, const char *id)
{
	u_int	 i;

	if (!tk->granted)
		return (1);
	for (i = 0; i < tk->nclusters; i++) {
		if (strcmp(tk->clusters[i], id) == 0)
			return (1);
	}
	return (0);
}

/*
 * Grants (on) or takes back cluster cid in tk's list.  An entry without a
 * list gets one first: own, the cluster of the host that asks (NULL:
 * none), which it was granted until now.  Returns 0 or -1 (a bad id).
 */
int
token_grants_set(struct token *tk, const char *cid, int on,
    const char *own, char **cause)
{
	u_int	 i;

	if (!token_cluster_valid(cid)) {
		xasprintf(cause, "cluster: '%.64s' is not a cluster id "
		    "(letters, digits, '_' and '-')", cid);
		return (-1);
	}
	if (!tk->granted && own != NULL)
		token_grants_add(tk, own);
	tk->granted = 1;
	if (on && !token_granted(tk, cid))
		token_grants_add(tk, cid);
	for (i = 0; !on && i < tk->nclusters; i++) {
		if (strcmp(tk->clusters[i], cid) != 0)
			continue;
		free(tk->clusters[i]);
		memmove(&tk->clusters[i], &tk->clusters[i + 1],
		    (tk->nclusters - i - 1) * sizeof *tk->clusters);
		tk->nclusters--;
		break;
	}
	return (0);
}
