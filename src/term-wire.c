/*
 * term-wire.c: the framing of a terminal connection (docs/terminals.md),
 * the same on both sides: one type byte, a four-byte big-endian length of
 * at most TERM_FRAME_MAX, the payload.  Parsed here, and only here.
 */

#include <string.h>

#include "gmux.h"
#include "term-int.h"

/*
 * Parses one frame at the start of buf.  Returns its whole size, 0 if more
 * bytes are needed, or -1 with *cause if the framing is broken.
 */
ssize_t
term_frame_parse(const void *buf, size_t len, struct term_frame *f,
    char **cause)
{
	const u_char	*p = buf;
	uint32_t	 n;
	ssize_t		 r;

	if (len < FRAME_HDR)
		return (0);
	if (p[0] != TERM_DATA && p[0] != TERM_WINDOW && p[0] != TERM_EXIT) {
		xasprintf(cause, "bad frame type %u", p[0]);
		return (-1);
	}
	if ((r = frame_take(buf, len, TERM_FRAME_MAX, &n, cause)) > 0) {
		f->type = p[0];
		f->len = n;
		f->data = p + FRAME_HDR;
	}
	return (r);
}

/* A window frame's size: columns and rows, each 1 to TERM_SIZE_MAX. */
int
term_window_parse(const struct term_frame *f, u_int *cols, u_int *rows,
    char **cause)
{
	if (f->type != TERM_WINDOW || f->len != 4) {
		xasprintf(cause, "a window frame is 4 bytes");
		return (-1);
	}
	*cols = ((u_int)f->data[0] << 8) | f->data[1];
	*rows = ((u_int)f->data[2] << 8) | f->data[3];
	if (*cols < 1 || *cols > TERM_SIZE_MAX || *rows < 1 ||
	    *rows > TERM_SIZE_MAX) {
		xasprintf(cause, "window %ux%u: each must be 1 to %u", *cols,
		    *rows, TERM_SIZE_MAX);
		return (-1);
	}
	return (0);
}

/* A whole window frame, header and payload: FRAME_HDR + 4 bytes. */
void
term_window_encode(u_char *buf, u_int cols, u_int rows)
{
	frame_header(buf, TERM_WINDOW, 4);
	buf[FRAME_HDR] = (u_char)(cols >> 8);
	buf[FRAME_HDR + 1] = (u_char)cols;
	buf[FRAME_HDR + 2] = (u_char)(rows >> 8);
	buf[FRAME_HDR + 3] = (u_char)rows;
}

/* Is s a terminal type we pass on (TERM): 1-64 of [A-Za-z0-9._+-]? */
int
term_name_ok(const char *s)
{
	size_t	 n = strlen(s);

	return (n >= 1 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") == n);
}
