/*
 * fuzz-jobreq.c: a job request as the API gets it (json_loadb, then
 * jobreq_from_json).  A request that is accepted must survive the trip
 * through jobreq_to_json and back unchanged, as it does through the state
 * file and the cluster queue, and its container_env, if a remote job's
 * check takes it, fits an env file.
 * seeds: tests/fuzz/seeds/jobreq/
 */

#include "fuzz.h"

static void
same_strv(char **a, char **b)
{
	size_t	 i;

	FUZZ_ASSERT((a == NULL) == (b == NULL));
	for (i = 0; a != NULL && a[i] != NULL; i++)
		FUZZ_ASSERT(b[i] != NULL && strcmp(a[i], b[i]) == 0);
	FUZZ_ASSERT(a == NULL || b[i] == NULL);
}

static void
round_trip(const struct jobreq *r)
{
	struct jobreq	 r2;
	json_t		*o = jobreq_to_json(r);
	char		*cause = NULL;

	jobreq_init(&r2);
	if (jobreq_from_json(o, &r2, &cause) != 0) {
		fprintf(stderr, "round trip refused: %s\n", cause);
		FUZZ_ASSERT(0);
	}
	same_strv(r->argv, r2.argv);
	same_strv(r->env, r2.env);
	FUZZ_ASSERT((r->cwd == NULL) == (r2.cwd == NULL));
	FUZZ_ASSERT(r->seats == r2.seats && r->mem == r2.mem);
	FUZZ_ASSERT(r->card == r2.card && r->ncards == r2.ncards);
	FUZZ_ASSERT(r->priority == r2.priority && r->flags == r2.flags);
	FUZZ_ASSERT(r->grace_ms == r2.grace_ms);
	FUZZ_ASSERT(r->timeout_ms == r2.timeout_ms);
	jobreq_clear(&r2);
	json_decref(o);
}

/*
 * A remote job's container_env that container_env_check takes fits an
 * env file: every name has a value of one line, none is gmux's.
 */
static void
env_file_ok(struct jobreq *r)
{
	char	*cause = NULL, **n, **e;
	size_t	 len;

	r->confined = 1;
	if (container_env_check(r, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && strncmp(cause, "container_env",
		    13) == 0);
		free(cause);
		return;
	}
	for (n = r->spec.container_env; n != NULL && *n != NULL; n++) {
		FUZZ_ASSERT(strncmp(*n, "GMUX_", 5) != 0 &&
		    strcmp(*n, "LD_PRELOAD") != 0);
		len = strlen(*n);
		for (e = r->env; *e != NULL; e++) {
			if (strncmp(*e, *n, len) == 0 && (*e)[len] == '=')
				break;
		}
		FUZZ_ASSERT(*e != NULL && strpbrk(*e, "\r\n") == NULL);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobreq	 r;
	json_t		*o;
	json_error_t	 err;
	char		*cause = NULL;

	if ((o = json_loadb((const char *)data, size, 0, &err)) == NULL)
		return (0);
	jobreq_init(&r);
	if (jobreq_from_json(o, &r, &cause) == 0) {
		FUZZ_ASSERT(r.argv != NULL && r.argv[0] != NULL);
		FUZZ_ASSERT(r.seats <= SEATS_PER_CARD && r.priority <= 9);
		round_trip(&r);
		env_file_ok(&r);
	} else
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	jobreq_clear(&r);
	json_decref(o);
	return (0);
}
