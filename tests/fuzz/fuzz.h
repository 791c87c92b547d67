/*
 * fuzz.h: what the libFuzzer harnesses share.  A harness's first comment
 * may name its seed files ("seeds: GLOB ..."); tests/fuzz/run copies them
 * into the fuzzer's working corpus.
 */

#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* An invariant that must hold whatever the input: abort, so it counts. */
#define FUZZ_ASSERT(c) do {						\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: FUZZ_ASSERT(%s) failed\n",	\
		    __FILE__, __LINE__, #c);				\
		abort();						\
	}								\
} while (0)

/* Returns the input as a NUL-terminated string; the caller frees it. */
static inline char *
fuzz_text(const uint8_t *data, size_t size)
{
	char	*s = xmalloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return (s);
}

/*
 * Checks what a card parser left: on success every card from first on is
 * numbered, of the vendor, named, and fit to go out as JSON; on failure
 * there is a cause and nothing was added.
 */
static inline void
fuzz_check_cards(int rc, char *cause, struct cards *cs, u_int first,
    enum vendor v)
{
	json_t	*o;
	u_int	 i;

	if (rc != 0) {
		FUZZ_ASSERT(rc == -1 && cause != NULL && *cause != '\0');
		FUZZ_ASSERT(cs->n == first);
		return;
	}
	FUZZ_ASSERT(cause == NULL && cs->n <= CARDS_MAX);
	for (i = first; i < cs->n; i++) {
		FUZZ_ASSERT(cs->v[i].index == i && cs->v[i].vendor == v);
		FUZZ_ASSERT(cs->v[i].model != NULL);
		FUZZ_ASSERT(cs->v[i].vendor_index >= 0 &&
		    cs->v[i].vendor_index < CARDS_MAX);
		o = card_to_json(&cs->v[i]);
		FUZZ_ASSERT(json_is_string(json_object_get(o, "model")));
		FUZZ_ASSERT(json_is_string(json_object_get(o, "uuid")));
		FUZZ_ASSERT(json_object_get(o, "bus_id") != NULL);
		json_decref(o);
	}
}

/*
 * Feeds data to a streaming reader as the network would, in pieces of 1
 * to 17 bytes that seed picks: each is appended to buf (the caller's, of
 * size + 1 bytes, *len used) and drain(arg) takes off what it can; stops
 * once *broken.
 */
static inline void
fuzz_pieces(const uint8_t *data, size_t size, u_int seed, u_char *buf,
    size_t *len, const int *broken, void (*drain)(void *), void *arg)
{
	size_t	 off = 0, piece;

	while (off < size && !*broken) {
		seed = seed * 1103515245 + 12345;
		piece = 1 + (seed >> 16) % 17;
		if (piece > size - off)
			piece = size - off;
		memcpy(buf + *len, data + off, piece);
		*len += piece;
		off += piece;
		drain(arg);
	}
}

#endif
