/*
 * top.c: gmux top.  top_render() draws one frame from the daemon's cards
 * and jobs (as GET /v1/cards and GET /v1/jobs return them) for a terminal
 * of a given size, and is pure; top_loop() runs it full-screen each second
 * through a callback that fetches the two replies, or prints plain frames
 * when the output is not a terminal.
 *
 * Shares are fractions of a card (0.25) when JSON reals, seats when
 * integers; utilization is a fraction when real, a percentage when integer.
 * Text from the daemon is printed with control characters replaced, so a
 * job's owner or a card's model cannot move the cursor.
 */

#include <sys/ioctl.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "gmux.h"

#define TOP_LABEL	10	/* "guaranteed" */
#define TOP_VALUE	9	/* "20G/80G" */
#define TOP_MIN_BAR	5
#define TOP_MAX_BAR	60

struct top_frame {
	FILE		*f;
	u_int		 width;
	u_int		 height;	/* 0: no limit */
	u_int		 lines;
	int		 full;		/* stopped at the height */
};

/* Starts a line; returns 0 if the frame has no room for it. */
static int
top_line(struct top_frame *fr, const char *fmt, ...) printflike(2, 3);

static int
top_line(struct top_frame *fr, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	u_int	 i, n;

	if (fr->full || (fr->height != 0 && fr->lines >= fr->height)) {
		fr->full = 1;
		return (0);
	}
	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	n = (u_int)strlen(s);
	if (n > fr->width)
		n = fr->width;
	for (i = 0; i < n; i++) {
		if ((u_char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	}
	/* No trailing blanks: lines compare exactly, terminals stay clean. */
	while (n > 0 && s[n - 1] == ' ')
		n--;
	fwrite(s, 1, n, fr->f);
	fputc('\n', fr->f);
	free(s);
	fr->lines++;
	return (1);
}

/* A share from JSON as seats: reals are fractions, integers seats. */
static int
top_seats(json_t *j)
{
	double	 v;

	if (json_is_integer(j))
		v = (double)json_integer_value(j);
	else if (json_is_real(j))
		v = json_real_value(j) * SEATS_PER_CARD;
	else
		return (-1);
	if (!(v >= 0))
		return (-1);
	return (v > 100 * SEATS_PER_CARD ? 100 * SEATS_PER_CARD :
	    (int)lround(v));
}

static uint64_t
top_u64(json_t *j)
{
	if (json_is_integer(j) && json_integer_value(j) > 0)
		return ((uint64_t)json_integer_value(j));
	if (json_is_real(j) && json_real_value(j) > 0 &&
	    json_real_value(j) < 1.8e19)
		return ((uint64_t)json_real_value(j));
	return (0);
}

static const char *
top_str(json_t *o, const char *k, const char *none)
{
	const char	*s = json_string_value(json_object_get(o, k));

	return (s != NULL ? s : none);
}

/* Fills buf with a bar of width w, filled for part/whole. */
static void
top_bar(char *buf, u_int w, uint64_t part, uint64_t whole)
{
	u_int	 i, n = 0;

	if (whole > 0)
		n = (u_int)lround((double)(part > whole ? whole : part) /
		    (double)whole * w);
	for (i = 0; i < w; i++)
		buf[i] = i < n ? '#' : '.';
	buf[w] = '\0';
}

static u_int
top_bar_width(u_int width)
{
	int	 w = ((int)width - 2 - 2 - 2 * (TOP_LABEL + TOP_VALUE + 4)) / 2;

	if (w < TOP_MIN_BAR)
		return (TOP_MIN_BAR);
	return (w > TOP_MAX_BAR ? TOP_MAX_BAR : (u_int)w);
}

/* Same host (merged from several: "host" is set; else both NULL)? */
static int
top_same_host(json_t *a, json_t *b)
{
	return (strcmp(top_str(a, "host", ""), top_str(b, "host", "")) == 0);
}

static u_int
top_card_jobs(json_t *jobs, json_t *c, json_int_t index)
{
	json_t	*j;
	size_t	 i;
	u_int	 n = 0;

	json_array_foreach(jobs, i, j) {
		if (json_integer_value(json_object_get(j, "card")) == index &&
		    json_is_integer(json_object_get(j, "card")) &&
		    top_same_host(j, c) &&
		    strcmp(top_str(j, "state", ""), "running") == 0)
			n++;
	}
	return (n);
}

/* Utilization as a percentage, or -1 if the card has none. */
static int
top_util(json_t *c)
{
	json_t	*u = json_object_get(c, "util");

	if (json_is_real(u) && json_real_value(u) >= 0)
		return ((int)lround(fmin(json_real_value(u), 1.0) * 100));
	if (json_is_integer(u) && json_integer_value(u) >= 0)
		return (json_integer_value(u) > 100 ? 100 :
		    (int)json_integer_value(u));
	return (-1);
}

static void
top_card(struct top_frame *fr, json_t *c, json_t *jobs)
{
	char		 b1[TOP_MAX_BAR + 1], b2[TOP_MAX_BAR + 1], v[64];
	char		*mem, *used;
	uint64_t	 memory, mem_used;
	int		 g, burst, util;
	u_int		 w = top_bar_width(fr->width), n;
	json_int_t	 index;

	index = json_integer_value(json_object_get(c, "index"));
	memory = top_u64(json_object_get(c, "memory"));
	if ((g = top_seats(json_object_get(c, "guaranteed"))) < 0 &&
	    (g = top_seats(json_object_get(c, "share_free"))) >= 0)
		g = SEATS_PER_CARD - g;
	if ((burst = top_seats(json_object_get(c, "burst"))) < 0)
		burst = 0;
	if (json_object_get(c, "mem_used") != NULL)
		mem_used = top_u64(json_object_get(c, "mem_used"));
	else {
		mem_used = top_u64(json_object_get(c, "mem_free"));
		mem_used = mem_used > memory ? 0 : memory - mem_used;
	}
	util = top_util(c);
	mem = format_size(memory);
	used = format_size(mem_used);
	n = top_card_jobs(jobs, c, index);
	top_line(fr, "%s%scard %lld  %s %s  %s  %u job%s", top_str(c, "host",
	    ""), json_is_string(json_object_get(c, "host")) ? " " : "",
	    (long long)index, top_str(c, "vendor", "?"), top_str(c, "model",
	    "?"), mem, n, n == 1 ? "" : "s");
	top_bar(b1, w, g < 0 ? 0 : (uint64_t)g, SEATS_PER_CARD);
	top_bar(b2, w, (uint64_t)burst, SEATS_PER_CARD);
	snprintf(v, sizeof v, "%d%%", g < 0 ? 0 : g);
	top_line(fr, "  %-*s [%s] %-*s  %-*s [%s] %d%%", TOP_LABEL,
	    "guaranteed", b1, TOP_VALUE, v, TOP_LABEL, "burst", b2, burst);
	top_bar(b1, w, mem_used, memory);
	top_bar(b2, w, util < 0 ? 0 : (uint64_t)util, 100);
	snprintf(v, sizeof v, "%s/%s", used, mem);
	if (util < 0) {
		top_line(fr, "  %-*s [%s] %-*s  %-*s [%s] n/a", TOP_LABEL,
		    "memory", b1, TOP_VALUE, v, TOP_LABEL, "util", b2);
	} else {
		top_line(fr, "  %-*s [%s] %-*s  %-*s [%s] %d%%", TOP_LABEL,
		    "memory", b1, TOP_VALUE, v, TOP_LABEL, "util", b2, util);
	}
	free(mem);
	free(used);
}

/* "12:05", "3:04:05" or "2d 03:04:05". */
static void
top_runtime(int64_t ms, char *buf, size_t len)
{
	int64_t	 s = ms < 0 ? 0 : ms / 1000;

	if (s < 3600)
		snprintf(buf, len, "%d:%02d", (int)(s / 60), (int)(s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%d:%02d:%02d", (int)(s / 3600),
		    (int)(s / 60 % 60), (int)(s % 60));
	else
		snprintf(buf, len, "%dd %02d:%02d:%02d", (int)(s / 86400),
		    (int)(s / 3600 % 24), (int)(s / 60 % 60), (int)(s % 60));
}

static int
top_rank(json_t *j)
{
	const char	*s = top_str(j, "state", "");

	if (strcmp(s, "running") == 0)
		return (0);
	return (strcmp(s, "queued") == 0 ? 1 : 2);
}

static json_int_t
top_job_id(json_t *j)
{
	json_t		*id = json_object_get(j, "id");
	const char	*s = json_string_value(id);

	if (s != NULL)
		return (strtoll(s + (*s == 'j'), NULL, 10));
	return (json_integer_value(id));
}

static int
top_job_cmp(const void *a, const void *b)
{
	json_t		*ja = *(json_t *const *)a, *jb = *(json_t *const *)b;
	json_int_t	 ia, ib;

	if (top_rank(ja) != top_rank(jb))
		return (top_rank(ja) - top_rank(jb));
	ia = top_job_id(ja);
	ib = top_job_id(jb);
	return (ia < ib ? -1 : ia > ib);
}

static void
top_job(struct top_frame *fr, json_t *j, int64_t now, int hosts)
{
	char		 card[16], share[16], rt[32], *mem;
	int64_t		 started, ended;
	int		 seats;
	json_t		*c = json_object_get(j, "card");

	snprintf(card, sizeof card, "%s", "-");
	if (json_is_integer(c) && json_integer_value(c) >= 0)
		snprintf(card, sizeof card, "%lld",
		    (long long)json_integer_value(c));
	seats = top_seats(json_object_get(j, "share"));
	snprintf(share, sizeof share, "%d.%02d", seats < 0 ? 0 : seats / 100,
	    seats < 0 ? 0 : seats % 100);
	started = json_integer_value(json_object_get(j, "started"));
	ended = json_integer_value(json_object_get(j, "ended"));
	snprintf(rt, sizeof rt, "-");
	if (started > 0)
		top_runtime((ended > 0 ? ended : now) - started, rt, sizeof rt);
	/* No cap yet (share x the card it has not got): as ps says it. */
	mem = top_u64(json_object_get(j, "mem")) == 0 ? xstrdup("-") :
	    format_size(top_u64(json_object_get(j, "mem")));
	top_line(fr, "%-*.*s%sj%-5lld %-10.10s %-4s %-5s %-6s %-9.9s %s",
	    hosts ? 10 : 0, hosts ? 10 : 0, top_str(j, "host", ""), hosts ?
	    " " : "", (long long)top_job_id(j), top_str(j, "owner", "?"), card,
	    share, mem, top_str(j, "state", "?"), rt);
	free(mem);
}

/* An array either as it is or under key in an object. */
static json_t *
top_array(json_t *j, const char *key)
{
	if (json_is_object(j))
		j = json_object_get(j, key);
	return (json_is_array(j) ? j : NULL);
}

static void
top_jobs(struct top_frame *fr, json_t *jobs, int64_t now)
{
	json_t	**v;
	size_t	  i, n = json_array_size(jobs);
	int	  hosts = n > 0 && json_is_string(json_object_get(
		      json_array_get(jobs, 0), "host"));

	top_line(fr, "%s%-6s %-10s %-4s %-5s %-6s %-9s %s", hosts ?
	    "HOST       " : "", "JOB", "OWNER", "CARD", "SHARE", "MEM", "STATE",
	    "RUNTIME");
	v = xcalloc(n + 1, sizeof *v);
	for (i = 0; i < n; i++)
		v[i] = json_array_get(jobs, i);
	qsort(v, n, sizeof *v, top_job_cmp);
	for (i = 0; i < n; i++) {
		/* Keep the last line for what did not fit. */
		if (fr->height != 0 && fr->lines + 1 == fr->height &&
		    i + 1 < n) {
			top_line(fr, "... %zu more jobs", n - i);
			break;
		}
		top_job(fr, v[i], now, hosts);
	}
	free(v);
}

/*
 * Renders one frame, lines of at most width characters and at most height
 * lines (0: as many as needed), each ending in a newline.  The caller
 * frees it.
 */
char *
top_render(json_t *cards, json_t *jobs, u_int width, u_int height,
    int64_t now)
{
	struct top_frame	 fr;
	char			*buf = NULL, t[32];
	size_t			 len = 0, i, running = 0, queued = 0;
	json_t			*c;

	memset(&fr, 0, sizeof fr);
	fr.width = width < 20 ? 20 : width;
	fr.height = height;
	if ((fr.f = open_memstream(&buf, &len)) == NULL)
		fatal("open_memstream");
	cards = top_array(cards, "cards");
	jobs = top_array(jobs, "jobs");
	json_array_foreach(jobs, i, c) {
		running += top_rank(c) == 0;
		queued += top_rank(c) == 1;
	}
	usage_format_time(now - now % 1000, t);
	top_line(&fr, "gmux top  %s  %zu cards  %zu jobs: %zu running, "
	    "%zu queued", t, json_array_size(cards), json_array_size(jobs),
	    running, queued);
	json_array_foreach(cards, i, c)
		top_card(&fr, c, jobs);
	top_jobs(&fr, jobs, now);
	if (fclose(fr.f) != 0)
		fatal("top_render");
	return (buf);
}

static volatile sig_atomic_t	 top_winch;
static volatile sig_atomic_t	 top_quit;

static void
top_signal(int sig)
{
	if (sig == SIGWINCH)
		top_winch = 1;
	else
		top_quit = 1;
}

static void
top_size(u_int *w, u_int *h)
{
	struct winsize	 ws;
	const char	*cols = getenv("COLUMNS");

	*w = 80;
	*h = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		*w = ws.ws_col;
		*h = ws.ws_row;
	} else if (cols != NULL && atoi(cols) > 0)
		*w = (u_int)atoi(cols);
}

/* Fetches and renders a frame; on failure the frame says why. */
static char *
top_frame(top_fetch_cb fetch, void *arg, u_int w, u_int h, char **cause)
{
	json_t	*cards = NULL, *jobs = NULL;
	char	*frame;

	if (fetch(arg, &cards, &jobs, cause) != 0)
		return (NULL);
	frame = top_render(cards, jobs, w, h, clock_ms());
	json_decref(cards);
	json_decref(jobs);
	return (frame);
}

/* Plain frames, a blank line apart, each second (or once). */
static int
top_plain(top_fetch_cb fetch, void *arg, int once, char **cause)
{
	char	*frame;
	u_int	 w, h;

	for (;;) {
		top_size(&w, &h);
		if ((frame = top_frame(fetch, arg, w, 0, cause)) == NULL)
			return (-1);
		if (fputs(frame, stdout) == EOF || (!once &&
		    fputc('\n', stdout) == EOF) || fflush(stdout) == EOF) {
			free(frame);
			return (0);	/* the reader went away */
		}
		free(frame);
		if (once || top_quit)
			return (0);
		sleep(1);
	}
}

/* Draws over the screen: home, each line cleared to its end, then below. */
static void
top_draw(const char *frame, const char *error)
{
	const char	*p, *nl;

	fputs("\033[H", stdout);
	for (p = frame; p != NULL && (nl = strchr(p, '\n')) != NULL;
	    p = nl + 1) {
		fwrite(p, 1, nl - p, stdout);
		fputs("\033[K\n", stdout);
	}
	if (error != NULL)
		printf("gmux top: %s\033[K\n", error);
	fputs("\033[J", stdout);
	fflush(stdout);
}

/* Waits up to ms for a key; returns 1 on q, 0 otherwise. */
static int
top_wait(int ms)
{
	struct pollfd	 pfd = { STDIN_FILENO, POLLIN, 0 };
	char		 c;

	if (poll(&pfd, 1, ms) <= 0)
		return (0);
	while (read(STDIN_FILENO, &c, 1) == 1) {
		if (c == 'q' || c == 'Q')
			return (1);
	}
	return (0);
}

static void
top_tty_loop(top_fetch_cb fetch, void *arg)
{
	char	*frame = NULL, *error = NULL, *next;
	u_int	 w, h;
	int64_t	 due = 0;

	while (!top_quit) {
		top_size(&w, &h);
		if (clock_mono_ms() >= due) {
			free(error);
			error = NULL;
			next = top_frame(fetch, arg, w, h ? h - 1 : 0, &error);
			if (next != NULL) {
				free(frame);
				frame = next;
			}
			due = clock_mono_ms() + 1000;
		}
		top_draw(frame, error);
		top_winch = 0;
		if (top_wait((int)(due - clock_mono_ms())))
			break;
		if (top_winch && frame != NULL) {
			/* Redraw at the new size at once, from a new fetch. */
			due = 0;
		}
	}
	free(frame);
	free(error);
}

/*
 * gmux top: full-screen, redrawn each second, q quits, follows the
 * terminal's size; plain frames when stdin or stdout is not a terminal,
 * one frame with once.  fetch returns new references to the cards and jobs
 * replies or -1 and a cause.
 */
int
top_loop(top_fetch_cb fetch, void *arg, int once, char **cause)
{
	struct termios		 old, raw;
	struct sigaction	 sa, oint, oterm, ohup, owinch;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = top_signal;
	sigemptyset(&sa.sa_mask);
	top_quit = top_winch = 0;
	if (once || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) ||
	    tcgetattr(STDIN_FILENO, &old) != 0)
		return (top_plain(fetch, arg, once, cause));
	sigaction(SIGINT, &sa, &oint);
	sigaction(SIGTERM, &sa, &oterm);
	sigaction(SIGHUP, &sa, &ohup);
	sigaction(SIGWINCH, &sa, &owinch);
	raw = old;
	raw.c_lflag &= ~(ICANON|ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	fputs("\033[?1049h\033[?25l", stdout);
	top_tty_loop(fetch, arg);
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	sigaction(SIGHUP, &ohup, NULL);
	sigaction(SIGWINCH, &owinch, NULL);
	return (0);
}
