/*
 * enforce.c: the one interface through which a job's caps and ceilings
 * reach the card.  Every change is recorded (for fake cards this record is
 * all there is, and tests read it back through the API).
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static json_t	*history;

/* Says, per card, what can be enforced on it and how. */
void
enforce_init(struct cards *cs)
{
	u_int		 i;
	struct card	*c;

	for (i = 0; i < cs->n; i++) {
		c = &cs->v[i];
		c->enforce.memory = "admission";
		c->enforce.compute = "admission";
		c->enforce.live_memory = 1;
		c->enforce.live_compute = 1;
		free(c->enforce.why);
		c->enforce.why = xstrdup(c->fake ?
		    "fake card: shares are admitted and recorded, not enforced" :
		    "no enforcement backend for this card yet");
	}
}

/* Adds the vendor's device variable naming card c to *envp. */
void
enforce_job_env(const struct card *c, u_int seats, uint64_t mem, char ***envp)
{
	const char	*var = vendor_device_env(c->vendor);
	char		*id, *kv;
	size_t		 n = strv_len(*envp);

	if (var == NULL)
		return;
	id = card_device_id(c);
	xasprintf(&kv, "%s=%s", var, id);
	*envp = xreallocarray(*envp, n + 3, sizeof **envp);
	(*envp)[n++] = kv;
	if (c->vendor == VENDOR_AMD)
		xasprintf(&(*envp)[n++], "ROCR_VISIBLE_DEVICES=%s", id);
	(*envp)[n] = NULL;
	free(id);
}

/* Applies a job's guarantee, ceiling and memory cap on card c. */
void
enforce_set(u_int job, const struct card *c, u_int seats, u_int ceiling,
    uint64_t mem)
{
	json_t	*e;

	if (history == NULL)
		history = json_array();
	e = json_pack("{s:i,s:i,s:i,s:i,s:I,s:I}", "job", job, "card",
	    c->index, "share", seats, "ceiling", ceiling, "mem",
	    (json_int_t)mem, "at", (json_int_t)clock_ms());
	json_array_append_new(history, e);
	log_debug("%s: j%u card %u seats %u ceiling %u mem %llu", __func__,
	    job, c->index, seats, ceiling, (unsigned long long)mem);
}

void
enforce_forget(u_int job)
{
	log_debug("%s: j%u", __func__, job);
}

/* Returns every change so far; the caller owns the reference. */
json_t *
enforce_history(void)
{
	if (history == NULL)
		history = json_array();
	return (json_incref(history));
}
