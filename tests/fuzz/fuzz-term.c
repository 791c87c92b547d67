/*
 * fuzz-term.c: a terminal connection's framing (term_frame_parse) as both
 * its readers use it: bytes arrive in pieces of any size (the first input
 * byte picks them), whole frames are taken off the front and window
 * frames checked; read that way or all at once, the input must give the
 * same frames, the same sizes and the same break.
 * seeds: tests/fuzz/seeds/term/
 */

#include "fuzz.h"
#include "term-int.h"

struct reader {
	u_char		*buf;
	size_t		 len;
	size_t		 frames;
	uint64_t	 payload;
	uint64_t	 sizes;		/* sum of good windows' cols*rows */
	int		 broken;
};

static void
window(struct reader *r, const struct term_frame *f)
{
	u_char	 enc[FRAME_HDR + 4];
	char	*cause = NULL;
	u_int	 cols, rows;

	if (term_window_parse(f, &cols, &rows, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	FUZZ_ASSERT(cols >= 1 && cols <= TERM_SIZE_MAX);
	FUZZ_ASSERT(rows >= 1 && rows <= TERM_SIZE_MAX);
	term_window_encode(enc, cols, rows);
	FUZZ_ASSERT(memcmp(enc + FRAME_HDR, f->data, 4) == 0);
	r->sizes += (uint64_t)cols * rows;
}

/* Takes every whole frame off the front of r's buffer. */
static void
drain(void *arg)
{
	struct reader		*r = arg;
	struct term_frame	 f;
	ssize_t			 n;
	size_t			 off = 0;
	char			*cause = NULL;

	while (!r->broken && (n = term_frame_parse(r->buf + off,
	    r->len - off, &f, &cause)) != 0) {
		if (n < 0) {
			FUZZ_ASSERT(cause != NULL);
			free(cause);
			r->broken = 1;
			break;
		}
		FUZZ_ASSERT((size_t)n == FRAME_HDR + f.len);
		FUZZ_ASSERT(f.len <= TERM_FRAME_MAX);
		FUZZ_ASSERT(f.data == r->buf + off + FRAME_HDR);
		FUZZ_ASSERT(f.type == TERM_DATA || f.type == TERM_WINDOW ||
		    f.type == TERM_EXIT);
		if (f.type == TERM_WINDOW)
			window(r, &f);
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
	struct reader	 stream, whole;
	u_int		 seed;

	if (size == 0)
		return (0);
	memset(&stream, 0, sizeof stream);
	memset(&whole, 0, sizeof whole);
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
	FUZZ_ASSERT(stream.sizes == whole.sizes);
	FUZZ_ASSERT(stream.broken == whole.broken);
	free(stream.buf);
	free(whole.buf);
	return (0);
}
