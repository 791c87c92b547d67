/*
 * fuzz-frame.c: frame_parse as a streaming reader uses it: bytes arrive in
 * pieces of any size (the first input byte picks them), whole frames are
 * taken off the front, the rest waits for more.  Read that way or all at
 * once, the input must give the same frames.
 * seeds: tests/fuzz/seeds/frame/
 */

#include "fuzz.h"

struct reader {
	u_char		*buf;
	size_t		 len;
	size_t		 frames;
	uint64_t	 payload;
	int		 broken;
};

/* Takes every whole frame off the front of r's buffer. */
static void
drain(void *arg)
{
	struct reader	*r = arg;
	struct frame	 f;
	ssize_t		 n;
	size_t		 off = 0;
	char		*cause = NULL;

	while (!r->broken &&
	    (n = frame_parse(r->buf + off, r->len - off, &f, &cause)) != 0) {
		if (n < 0) {
			FUZZ_ASSERT(cause != NULL);
			free(cause);
			r->broken = 1;
			break;
		}
		FUZZ_ASSERT((size_t)n == FRAME_HDR + f.len);
		FUZZ_ASSERT(f.len <= FRAME_MAX);
		FUZZ_ASSERT(f.data == (const char *)r->buf + off + FRAME_HDR);
		FUZZ_ASSERT(f.type >= FRAME_STDOUT && f.type <= FRAME_INFO);
		r->frames++;
		r->payload += f.len;
		off += (size_t)n;
	}
	memmove(r->buf, r->buf + off, r->len - off);
	r->len -= off;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader	 stream = { NULL, 0, 0, 0, 0 };
	struct reader	 whole = { NULL, 0, 0, 0, 0 };
	u_int		 seed;

	if (size == 0)
		return (0);
	seed = data[0];
	data++;
	size--;
	stream.buf = xmalloc(size + 1);
	fuzz_pieces(data, size, seed, stream.buf, &stream.len,
	    &stream.broken, drain, &stream);
	whole.buf = xmalloc(size + 1);
	memcpy(whole.buf, data, size);
	whole.len = size;
	drain(&whole);
	FUZZ_ASSERT(stream.frames == whole.frames);
	FUZZ_ASSERT(stream.payload == whole.payload);
	FUZZ_ASSERT(stream.broken == whole.broken);
	free(stream.buf);
	free(whole.buf);
	return (0);
}
