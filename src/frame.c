/*
 * frame.c: the framed output stream.  A job's log file and every output
 * stream on the wire are the same sequence of frames: one type byte, a
 * four-byte big-endian length, then the payload.  Only stdout and stderr
 * frames count towards an output offset, so "--from N" means the N-th byte
 * of the job's output whatever framing it went through.
 */

#include <string.h>

#include "gmux.h"

size_t
frame_header(u_char *hdr, u_char type, uint32_t len)
{
	hdr[0] = type;
	hdr[1] = (u_char)(len >> 24);
	hdr[2] = (u_char)(len >> 16);
	hdr[3] = (u_char)(len >> 8);
	hdr[4] = (u_char)len;
	return (FRAME_HDR);
}

/* The payload length in a frame header (FRAME_HDR bytes). */
uint32_t
frame_len(const u_char *hdr)
{
	return (((uint32_t)hdr[1] << 24) | ((uint32_t)hdr[2] << 16) |
	    ((uint32_t)hdr[3] << 8) | hdr[4]);
}

int
frame_counts(u_char type)
{
	return (type == FRAME_STDOUT || type == FRAME_STDERR);
}

/*
 * The size of the frame at the start of buf (its header's type already
 * checked by the caller): FRAME_HDR + its payload, 0 if more bytes are
 * needed, or -1 with *cause if its length is over max.  *n is the length.
 */
ssize_t
frame_take(const void *buf, size_t len, uint32_t max, uint32_t *n,
    char **cause)
{
	if (len < FRAME_HDR)
		return (0);
	*n = frame_len(buf);
	if (*n > max) {
		xasprintf(cause, "frame of %u bytes is too large", *n);
		return (-1);
	}
	if (len - FRAME_HDR < *n)
		return (0);
	return ((ssize_t)(FRAME_HDR + *n));
}

/*
 * Parses one frame at the start of buf.  Returns its whole size, 0 if more
 * bytes are needed, or -1 with *cause if the framing is broken.
 */
ssize_t
frame_parse(const void *buf, size_t len, struct frame *f, char **cause)
{
	const u_char	*p = buf;
	uint32_t	 n;
	ssize_t		 r;

	if (len < FRAME_HDR)
		return (0);
	if (p[0] < FRAME_STDOUT || p[0] > FRAME_INFO) {
		xasprintf(cause, "bad frame type %u", p[0]);
		return (-1);
	}
	if ((r = frame_take(buf, len, FRAME_MAX, &n, cause)) > 0) {
		f->type = p[0];
		f->len = n;
		f->data = (const char *)p + FRAME_HDR;
	}
	return (r);
}
