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

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "gmux.h"

#define BATCH_MAGIC	"gmux-batch 1\n"

void
batch_init(struct batch *b)
{
	memset(b, 0, sizeof *b);
	if ((b->buf = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b->buf, BATCH_MAGIC, sizeof BATCH_MAGIC - 1);
}

void
batch_clear(struct batch *b)
{
	if (b->buf != NULL)
		evbuffer_free(b->buf);
	memset(b, 0, sizeof *b);
}

/*
 * Adds a record of size bytes read from fd (in one read where it can: the
 * room is made first).  Returns 0, or -1 if fd had fewer (the file
 * changed): the batch is then spoiled, to be cleared.
 */
int
batch_add_fd(struct batch *b, const char *digest, int fd, size_t size)
{
	struct evbuffer_iovec	 v;
	size_t			 got = 0;
	ssize_t			 n;

	evbuffer_add_printf(b->buf, "%s %zu\n", digest, size);
	if (size == 0) {
		b->n++;
		return (0);
	}
	if (evbuffer_reserve_space(b->buf, (ev_ssize_t)size, &v, 1) != 1)
		fatalx("%s: out of memory", __func__);
	while (got < size) {
		n = read(fd, (char *)v.iov_base + got, size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return (-1);
		got += (size_t)n;
	}
	v.iov_len = size;
	evbuffer_commit_space(b->buf, &v, 1);
	b->n++;
	return (0);
}

/* The body so far, *len bytes; valid until the batch changes. */
const char *
batch_data(struct batch *b, size_t *len)
{
	*len = evbuffer_get_length(b->buf);
	return ((const char *)evbuffer_pullup(b->buf, -1));
}

size_t
batch_len(const struct batch *b)
{
	return (evbuffer_get_length(b->buf));
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
