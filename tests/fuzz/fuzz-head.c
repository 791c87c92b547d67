/*
 * fuzz-head.c: the host's scan of a request's head (http_head_feed, then
 * http_head_get), fed in pieces of varying sizes as TLS records arrive.
 * seeds: tests/fuzz/seeds/head/
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_head	 h;
	size_t			 at = 0, n, rest, fed = 0;
	char			*v;
	int			 rc = 0;

	memset(&h, 0, sizeof h);
	while (at < size && rc == 0) {
		n = 1 + (data[at] % 13);
		if (n > size - at)
			n = size - at;
		rc = http_head_feed(&h, (const char *)data + at, n, 256, &rest);
		fed += n;
		at += n;
	}
	if (rc == 1) {
		/* What came after the head is what was fed past its end. */
		if (h.end > h.len || rest > n || fed - rest != h.end)
			abort();
		if ((v = http_head_get(&h, "Authorization")) != NULL) {
			if (strchr(v, '\n') != NULL || strlen(v) > h.end)
				abort();
			free(v);
		}
	} else if (rc == -1 && h.len <= 256)
		abort();
	http_head_clear(&h);
	return (0);
}
