/*
 * card-nvidia.c: NVIDIA cards, from nvidia-smi's CSV queries.  Each line is
 * one card or process, its fields separated by ", "; a figure the driver
 * cannot give reads "[N/A]" or "[Not Supported]"; lines may end in CRLF.
 * A parser takes all of the output or none of it: a line it cannot read
 * fails the whole query, with the line's number in the cause.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

#define NV_TOOL		"nvidia-smi"
#define NV_COMMAS	64		/* the most commas in one line */
#define NV_MIB_MAX	((1ULL << 44) - 1)	/* MiB that fit 64 bits */

static char *nv_gpus_argv[] = {
	NV_TOOL, "--query-gpu=index,uuid,name,memory.total,pci.bus_id",
	"--format=csv,noheader,nounits", NULL
};
static char *nv_apps_argv[] = {
	NV_TOOL, "--query-compute-apps=pid,gpu_uuid,used_memory",
	"--format=csv,noheader,nounits", NULL
};
static char *nv_usage_argv[] = {
	NV_TOOL, "--query-gpu=index,utilization.gpu,memory.used",
	"--format=csv,noheader,nounits", NULL
};

typedef int (*nv_line_cb)(char **, void *, char **);

/*
 * Splits line into nf trimmed fields.  Field wide (-1 for none) takes any
 * extra commas, so a product name with a comma in it stays whole.
 */
static int
nv_fields(char *line, char **f, u_int nf, int wide)
{
	char	*comma[NV_COMMAS], *p, *start = line;
	u_int	 nc = 0, i, ci, extra;

	for (p = line; (p = strchr(p, ',')) != NULL; p++) {
		if (nc == NV_COMMAS)
			return (-1);
		comma[nc++] = p;
	}
	if (nc + 1 < nf || (nc + 1 > nf && wide < 0))
		return (-1);
	extra = nc + 1 - nf;
	for (i = 0; i < nf; i++) {
		if (i + 1 < nf) {
			ci = (int)i < wide ? i : i + extra;
			*comma[ci] = '\0';
		}
		f[i] = strtrim(start);
		if (i + 1 < nf)
			start = comma[ci] + 1;
	}
	return (0);
}

/* Runs cb on each non-blank line of text; stops at the first failure. */
static int
nv_lines(const char *text, const char *what, u_int nf, int wide,
    nv_line_cb cb, void *arg, char **cause)
{
	char	*copy, *line, *next, *f[8], *why;
	u_int	 lineno = 0;
	int	 rc = 0;

	copy = xstrdup(text);
	for (line = copy; line != NULL && rc == 0; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line = strtrim(line);
		if (*line == '\0' ||
		    strncmp(line, "No running processes found", 26) == 0)
			continue;
		if (nv_fields(line, f, nf, wide) != 0) {
			xasprintf(cause, "%s, line %u: expected %u fields",
			    what, lineno, nf);
			rc = -1;
		} else if (cb(f, arg, &why) != 0) {
			xasprintf(cause, "%s, line %u: %s", what, lineno, why);
			free(why);
			rc = -1;
		}
	}
	free(copy);
	return (rc);
}

/* Reads a number nvidia-smi printed, with or without its unit. */
static int
nv_number(const char *s, uint64_t *v)
{
	char	 buf[32];
	size_t	 n = strlen(s);

	if (card_parse_u64(s, v) == 0)
		return (0);
	if (n >= sizeof buf)
		return (-1);
	memcpy(buf, s, n + 1);
	if (n > 4 && strcmp(buf + n - 4, " MiB") == 0)
		buf[n - 4] = '\0';
	else if (n > 2 && strcmp(buf + n - 2, " %") == 0)
		buf[n - 2] = '\0';
	else
		return (-1);
	return (card_parse_u64(buf, v));
}

/* Reads a MiB figure as bytes; "[N/A]" is CARD_UNKNOWN. */
static int
nv_mib(const char *field, const char *s, uint64_t *bytes, char **why)
{
	uint64_t	 v;

	if (card_na(s)) {
		*bytes = CARD_UNKNOWN;
		return (0);
	}
	if (nv_number(s, &v) != 0 || v > NV_MIB_MAX) {
		xasprintf(why, "%s: '%.32s' is not a size in MiB", field, s);
		return (-1);
	}
	*bytes = v << 20;
	return (0);
}

static int
nv_index(const char *s, int *index, char **why)
{
	uint64_t	 v;

	if (nv_number(s, &v) != 0 || v >= CARDS_MAX) {
		xasprintf(why, "index: '%.32s' is not a card index", s);
		return (-1);
	}
	*index = (int)v;
	return (0);
}

static int
nv_uuid(const char *field, const char *s, char **why)
{
	if (card_na(s) || !card_text_ok(s) || strchr(s, ' ') != NULL) {
		xasprintf(why, "%s: '%.64s' is not a UUID", field, s);
		return (-1);
	}
	return (0);
}

static int
nv_uuid_taken(const struct cards *cs, const char *uuid)
{
	u_int	 i;

	for (i = 0; i < cs->n; i++) {
		if (cs->v[i].uuid != NULL && strcmp(cs->v[i].uuid, uuid) == 0)
			return (1);
	}
	return (0);
}

/* index, uuid, name, memory.total (MiB), pci.bus_id */
static int
nv_gpu_line(char **f, void *arg, char **why)
{
	struct cards	*cs = arg;
	struct card	*c;
	int		 index;
	uint64_t	 mem;

	if (nv_index(f[0], &index, why) != 0 ||
	    nv_uuid("uuid", f[1], why) != 0 ||
	    nv_mib("memory.total", f[3], &mem, why) != 0)
		return (-1);
	if (!card_na(f[2]) && !card_text_ok(f[2])) {
		xasprintf(why, "name: not printable text");
		return (-1);
	}
	if (nv_uuid_taken(cs, f[1])) {
		xasprintf(why, "uuid: %s is listed twice", f[1]);
		return (-1);
	}
	if (card_room(cs, NV_TOOL, why) != 0)
		return (-1);
	c = cards_add(cs);
	c->vendor = VENDOR_NVIDIA;
	c->vendor_index = index;
	c->uuid = xstrdup(f[1]);
	c->model = xstrdup(card_na(f[2]) ? "NVIDIA GPU" : f[2]);
	c->memory = mem == CARD_UNKNOWN ? 0 : mem;
	if (!card_na(f[4]) && card_text_ok(f[4]))
		c->bus_id = xstrdup(f[4]);
	return (0);
}

/*
 * Adds the cards of `nvidia-smi --query-gpu=index,uuid,name,memory.total,
 * pci.bus_id --format=csv,noheader,nounits` to cs.  A card whose memory
 * the driver does not report gets 0.  Returns -1 with *cause and adds
 * nothing if any line is bad.
 */
int
card_nvidia_parse(const char *text, struct cards *cs, char **cause)
{
	u_int	 n = cs->n;

	if (nv_lines(text, NV_TOOL " --query-gpu", 5, 2, nv_gpu_line, cs,
	    cause) == 0)
		return (0);
	cards_truncate(cs, n);
	return (-1);
}

/* pid, gpu_uuid, used_memory (MiB) */
static int
nv_app_line(char **f, void *arg, char **why)
{
	struct card_procs	*ps = arg;
	struct card_proc	*p;
	uint64_t		 pid, mem;

	if (card_parse_u64(f[0], &pid) != 0 || pid == 0 || pid > INT_MAX) {
		xasprintf(why, "pid: '%.32s' is not a process id", f[0]);
		return (-1);
	}
	if (nv_uuid("gpu_uuid", f[1], why) != 0 ||
	    nv_mib("used_memory", f[2], &mem, why) != 0)
		return (-1);
	p = card_procs_add(ps);
	p->pid = (pid_t)pid;
	p->vendor = VENDOR_NVIDIA;
	p->uuid = xstrdup(f[1]);
	p->mem = mem;
	return (0);
}

/*
 * Adds the processes of `nvidia-smi --query-compute-apps=pid,gpu_uuid,
 * used_memory --format=csv,noheader,nounits` to ps; used_memory may be
 * unknown (under MPS, for one).  All or nothing, as card_nvidia_parse.
 */
int
card_nvidia_parse_apps(const char *text, struct card_procs *ps, char **cause)
{
	u_int	 n = ps->n;

	if (nv_lines(text, NV_TOOL " --query-compute-apps", 3, -1,
	    nv_app_line, ps, cause) == 0)
		return (0);
	card_procs_truncate(ps, n);
	return (-1);
}

/* index, utilization.gpu (%), memory.used (MiB) */
static int
nv_usage_line(char **f, void *arg, char **why)
{
	struct card_usages	*us = arg;
	struct card_usage	*u;
	int			 index;
	uint64_t		 util = 0, mem;

	if (nv_index(f[0], &index, why) != 0 ||
	    nv_mib("memory.used", f[2], &mem, why) != 0)
		return (-1);
	if (!card_na(f[1]) && (nv_number(f[1], &util) != 0 || util > 100)) {
		xasprintf(why, "utilization.gpu: '%.32s' is not a percentage",
		    f[1]);
		return (-1);
	}
	u = card_usages_add(us);
	u->vendor = VENDOR_NVIDIA;
	u->vendor_index = index;
	u->util = card_na(f[1]) ? -1 : (int)util;
	u->mem_used = mem;
	return (0);
}

/*
 * Adds the measured use of `nvidia-smi --query-gpu=index,utilization.gpu,
 * memory.used --format=csv,noheader,nounits` to us.  All or nothing.
 */
int
card_nvidia_parse_usage(const char *text, struct card_usages *us,
    char **cause)
{
	u_int	 n = us->n;

	if (nv_lines(text, NV_TOOL " --query-gpu", 3, -1, nv_usage_line, us,
	    cause) == 0)
		return (0);
	card_usages_truncate(us, n);
	return (-1);
}

/* Adds the host's NVIDIA cards to cs, if nvidia-smi is installed. */
int
card_nvidia_detect(struct cards *cs, char **cause)
{
	if (card_tool_cards(nv_gpus_argv, card_nvidia_parse, cs, cause) == -1)
		return (-1);
	return (0);
}

/* The nvidia-smi command for q (card_nvidia_parse_apps or _usage reads it). */
char *const *
card_nvidia_argv(enum card_query q)
{
	return (q == CARD_QUERY_PROCS ? nv_apps_argv : nv_usage_argv);
}
