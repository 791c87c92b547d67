/*
 * fuzz-http.c: the client's HTTP/1.1 response parser, fed in pieces of
 * varying sizes as a socket would deliver them.
 * seeds: tests/fuzz/seeds/http/
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static void
body_cb(const char *data, size_t len, void *arg)
{
	size_t	*total = arg;

	if (len > 0 && data[0] == '\x7f' && data[len - 1] == '\x7f')
		(*total)++;
	*total += len;
}

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_resp	 r;
	size_t			 at = 0, n, total = 0;
	char			*cause = NULL;
	int			 rc = 0;

	http_resp_init(&r);
	while (at < size && rc == 0) {
		n = 1 + (data[at] % 17);
		if (n > size - at)
			n = size - at;
		rc = http_resp_feed(&r, (const char *)data + at, n, body_cb,
		    &total, &cause);
		at += n;
	}
	if (rc == 0)
		rc = http_resp_feed(&r, "", 0, body_cb, &total, &cause);
	free(cause);
	return (0);
}
