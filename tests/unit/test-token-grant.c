/*
 * test-token-grant.c: the clusters a token is granted (token-grant.c):
 * read and written with the token file, an entry without a list granted
 * its checking host's cluster, grants set and taken back, copied to a
 * joined token, and malformed lists refused.
 */

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

#define ENTRY	"{\"id\":\"t1\",\"owner\":\"alice\",\"sha256\":\"" \
    "0000000000000000000000000000000000000000000000000000000000000000\"," \
    "\"created\":1,\"revoked\":false"

static int
parse(const char *text, struct tokens *t)
{
	char	*cause = NULL;
	int	 rc;

	rc = tokens_parse(text, strlen(text), t, &cause);
	free(cause);
	return (rc);
}

static void
test_parse(void)
{
	struct tokens	 t;

	memset(&t, 0, sizeof t);
	/* no list: granted the cluster of whichever host checks it */
	CHECK(parse("{\"tokens\":[" ENTRY "}]}", &t) == 0);
	CHECK(t.n == 1 && !t.v[0].granted);
	CHECK(token_granted(&t.v[0], "lab1") && token_granted(&t.v[0], "x"));
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[\"lab1\",\"lab2\"]}"
	    "]}", &t) == 0);
	CHECK(t.v[0].granted && t.v[0].nclusters == 2);
	CHECK(token_granted(&t.v[0], "lab2") && !token_granted(&t.v[0],
	    "lab3") && !token_granted(&t.v[0], "lab"));
	/* an empty list: no cluster at all */
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[]}]}", &t) == 0);
	CHECK(t.v[0].granted && !token_granted(&t.v[0], "lab1"));
	/* malformed: not a list, not ids, twice the same */
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":\"lab1\"}]}", &t) ==
	    -1 && t.n == 0);
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[1]}]}", &t) == -1);
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[\"a/b\"]}]}", &t) ==
	    -1);
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[\"\"]}]}", &t) ==
	    -1);
	CHECK(parse("{\"tokens\":[" ENTRY ",\"clusters\":[\"a\",\"a\"]}]}",
	    &t) == -1);
	tokens_clear(&t);
}

static void
test_grant(void)
{
	struct tokens	*t, *t2;
	json_t		*j;
	char		*path = tpath("tokens.json"), *cause = NULL;
	char		*s1, *id1, *s2, *id2;

	t = tokens_open(path, &cause);
	CHECK(t != NULL);
	CHECK(tokens_invite(t, "alice", &s1, &id1, &cause) == 0);
	/* an old entry gets a list first: the asking host's cluster */
	CHECK(tokens_grant(t, id1, "lab2", 1, "lab1", &cause) == 0);
	CHECK(t->v[0].nclusters == 2);
	CHECK_STR(t->v[0].clusters[0], "lab1");
	CHECK_STR(t->v[0].clusters[1], "lab2");
	CHECK(tokens_grant(t, id1, "lab2", 1, "lab1", &cause) == 0);
	CHECK(t->v[0].nclusters == 2);		/* once */
	CHECK(tokens_grant(t, id1, "bad id", 1, NULL, &cause) == -1);
	CHECK(strstr(cause, "cluster:") == cause);
	free(cause);
	cause = NULL;
	CHECK(tokens_grant(t, "t9", "lab1", 1, NULL, &cause) == -1);
	free(cause);
	cause = NULL;

	/* another process reads it back; a joined token gets its grants */
	t2 = tokens_open(path, &cause);
	CHECK(t2 != NULL && t2->n == 1 && t2->v[0].nclusters == 2);
	CHECK(tokens_join(t2, tokens_check(t2, s1), &s2, &id2, &cause) == 0);
	CHECK(t2->n == 2 && t2->v[1].nclusters == 2);
	CHECK(token_granted(tokens_check(t2, s2), "lab2"));
	CHECK(tokens_grant(t2, id2, "lab1", 0, "lab9", &cause) == 0);
	CHECK(tokens_refresh(t, &cause) == 0);
	CHECK(!token_granted(tokens_check(t, s2), "lab1"));
	CHECK(token_granted(tokens_check(t, s2), "lab2"));
	CHECK(token_granted(tokens_check(t, s1), "lab1"));
	j = tokens_to_json(t, "lab1");
	CHECK(json_array_size(json_object_get(json_array_get(j, 1),
	    "clusters")) == 1);
	json_decref(j);
	tokens_free(t);
	tokens_free(t2);
	free(s1);
	free(s2);
	free(id1);
	free(id2);
	free(path);
}

int
main(void)
{
	if (tmpdir_init("token-grant") != 0)
		return (1);
	RUN(test_parse);
	RUN(test_grant);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
