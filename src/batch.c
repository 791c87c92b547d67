/*
 * batch.c: many small blobs in one request body, so a first sync of ten
 * thousand small files is a few requests, not ten thousand.
 *
 *	gmux-batch 1\n
 *	SHA256 SIZE\n		64 hex digits, a space, decimal bytes
 *	SIZE bytes of content	(no separator after it)
 *	...			more records until the end of the body
 *
 * The parser hands each record to a callback, which verifies and stores
 * it; nothing is trusted from the header but where the content ends.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define BATCH_MAGIC	"gmux-batch 1\n"

static char	*batch_reserve(struct batch *, size_t);

void
batch_init(struct batch *b)
{
	memset(b, 0, sizeof *b);
	batch_reserve(b, sizeof BATCH_MAGIC - 1);
	memcpy(b->data, BATCH_MAGIC, sizeof BATCH_MAGIC - 1);
	b->len = sizeof BATCH_MAGIC - 1;
}

void
batch_clear(struct batch *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

/* Makes room for len more bytes; returns where they go. */
static char *
batch_reserve(struct batch *b, size_t len)
{
	while (b->len + len > b->size) {
		b->size = b->size ? b->size * 2 : 64 * 1024;
		b->data = xrealloc(b->data, b->size);
	}
	return (b->data + b->len);
}

/* Starts a record of size bytes; the caller writes them at the result. */
char *
batch_add(struct batch *b, const char *digest, size_t size)
{
	char	*p;
	int	 n;

	p = batch_reserve(b, DIGEST_HEX + 24 + size);
	n = sprintf(p, "%s %zu\n", digest, size);
	b->len += (size_t)n + size;
	b->n++;
	return (p + n);
}

/*
 * Parses a batch body, calling cb for each record in order.  Records
 * larger than max are refused.  Returns 0, or -1 with *cause (from the
 * parser or from cb, which stops the parse by returning -1).
 */
int
batch_parse(const void *buf, size_t len, size_t max, batch_cb cb, void *arg,
    char **cause)
{
	const char	*p = buf, *end = p + len;
	char		 digest[DIGEST_HEX];
	uint64_t	 size;
	size_t		 i, n = 0;

	if (len < sizeof BATCH_MAGIC - 1 ||
	    memcmp(p, BATCH_MAGIC, sizeof BATCH_MAGIC - 1) != 0) {
		xasprintf(cause, "not a gmux batch");
		return (-1);
	}
	p += sizeof BATCH_MAGIC - 1;
	while (p < end) {
		n++;
		if (end - p < DIGEST_HEX + 1 || p[DIGEST_HEX - 1] != ' ')
			goto bad;
		memcpy(digest, p, DIGEST_HEX - 1);
		digest[DIGEST_HEX - 1] = '\0';
		if (!digest_valid(digest))
			goto bad;
		p += DIGEST_HEX;
		size = 0;
		for (i = 0; p < end && *p >= '0' && *p <= '9'; i++, p++) {
			if (i > 15 || (i == 1 && size == 0))
				goto bad;
			size = size * 10 + (uint64_t)(*p - '0');
		}
		if (i == 0 || p == end || *p++ != '\n')
			goto bad;
		if (size > max) {
			xasprintf(cause, "record %zu: %llu bytes, more than "
			    "%zu", n, (unsigned long long)size, max);
			return (-1);
		}
		if ((uint64_t)(end - p) < size) {
			xasprintf(cause, "record %zu is cut short", n);
			return (-1);
		}
		if (cb(digest, p, (size_t)size, arg, cause) != 0)
			return (-1);
		p += size;
	}
	return (0);
bad:
	xasprintf(cause, "record %zu has a malformed header", n);
	return (-1);
}
