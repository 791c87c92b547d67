/*
 * progress.c: one status line for transfers that take a while.  Shown only
 * on a terminal, only once a transfer has run for a second (quick ones stay
 * silent), redrawn at most ten times a second, and erased when done.  The
 * clock is passed in, so the line can be tested.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define PROGRESS_DELAY_MS	1000
#define PROGRESS_EVERY_MS	100

/* Returns the fd to draw on: stderr if it is a terminal, else -1. */
int
progress_tty(void)
{
	return (isatty(STDERR_FILENO) ? STDERR_FILENO : -1);
}

/* Starts a transfer of files and bytes in all; fd -1 draws nothing. */
void
progress_start(struct progress *pg, int fd, const char *what, uint64_t files,
    uint64_t bytes, int64_t now)
{
	memset(pg, 0, sizeof *pg);
	pg->fd = fd;
	pg->what = what;
	pg->files_total = files;
	pg->bytes_total = bytes;
	pg->start = now;
}

/* Returns the line for now (no newline); the caller frees it. */
char *
progress_line(const struct progress *pg, int64_t now)
{
	char	*done, *total, *rate, *s;
	int64_t	 ms = now - pg->start;

	done = format_size(pg->bytes);
	total = format_size(pg->bytes_total);
	rate = format_size(ms > 0 ? pg->bytes * 1000 / (uint64_t)ms : 0);
	xasprintf(&s, "gmux: %s %llu/%llu files, %s/%s, %s/s", pg->what,
	    (unsigned long long)pg->files,
	    (unsigned long long)pg->files_total, done, total, rate);
	free(done);
	free(total);
	free(rate);
	return (s);
}

static void
progress_draw(struct progress *pg, int64_t now)
{
	char	*line, *out;

	line = progress_line(pg, now);
	xasprintf(&out, "\r%s\033[K", line);
	write_all(pg->fd, out, strlen(out));
	free(out);
	free(line);
	pg->shown = 1;
	pg->last = now;
}

void
progress_add(struct progress *pg, uint64_t files, uint64_t bytes, int64_t now)
{
	pg->files += files;
	pg->bytes += bytes;
	if (pg->fd == -1 || now - pg->start < PROGRESS_DELAY_MS ||
	    (pg->shown && now - pg->last < PROGRESS_EVERY_MS))
		return;
	progress_draw(pg, now);
}

/* Ends the transfer, erasing the line if one was drawn. */
void
progress_end(struct progress *pg, int64_t now)
{
	if (pg->fd != -1 && pg->shown)
		write_all(pg->fd, "\r\033[K", 4);
	pg->shown = 0;
}
