/*
 * metrics.c: the /metrics page in Prometheus's text exposition format
 * (version 0.0.4), rendered from what the daemon hands over; no I/O and
 * no state.  Every metric is listed in docs/metrics.md.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

/* Writes a label value with \, " and newline escaped. */
static void
metrics_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void
metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes v / 10^decimals exactly, without trailing zeros. */
static void
metrics_fixed(FILE *f, int64_t v, u_int decimals)
{
	char	 frac[24];
	int64_t	 scale = 1;
	u_int	 i;
	int	 n;

	for (i = 0; i < decimals; i++)
		scale *= 10;
	if (v < 0) {
		fputc('-', f);
		v = -v;
	}
	fprintf(f, "%" PRId64, v / scale);
	if (v % scale == 0)
		return;
	n = snprintf(frac, sizeof frac, "%0*" PRId64, (int)decimals,
	    v % scale);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	fprintf(f, ".%s", frac);
}

enum metrics_kind {
	METRICS_BYTES,		/* uint64_t */
	METRICS_SEATS,		/* u_int seats, shown as a share */
	METRICS_COUNT,		/* u_int */
	METRICS_RATIO,		/* double; no series when negative */
};

/* The per-card gauges, in the order of the page. */
static const struct {
	const char		*name;
	const char		*help;
	enum metrics_kind	 kind;
	size_t			 offset;
} metrics_card_gauges[] = {
	{ "gmux_card_memory_bytes", "Memory of the card in bytes.",
	  METRICS_BYTES, offsetof(struct metrics_card, memory) },
	{ "gmux_card_memory_allocated_bytes", "Sum of the memory caps of the "
	  "jobs on the card, in bytes.", METRICS_BYTES,
	  offsetof(struct metrics_card, mem_allocated) },
	{ "gmux_card_share_allocated", "Guaranteed compute share allocated on "
	  "the card (0 to 1).", METRICS_SEATS,
	  offsetof(struct metrics_card, seats) },
	{ "gmux_card_share_burst", "Compute share granted above their "
	  "guarantees to bursting jobs (0 to 1).", METRICS_SEATS,
	  offsetof(struct metrics_card, burst) },
	{ "gmux_card_jobs", "Running jobs on the card.", METRICS_COUNT,
	  offsetof(struct metrics_card, jobs) },
	{ "gmux_card_utilization_ratio", "Measured compute utilization of the "
	  "card (0 to 1); absent where it cannot be measured.",
	  METRICS_RATIO, offsetof(struct metrics_card, util) },
};

static void
metrics_card_value(FILE *f, const char *name, enum metrics_kind kind,
    const struct metrics_card *c, const void *p)
{
	if (kind == METRICS_RATIO && *(const double *)p < 0)
		return;
	fprintf(f, "%s{card=\"%u\"} ", name, c->index);
	switch (kind) {
	case METRICS_BYTES:
		fprintf(f, "%" PRIu64 "\n", *(const uint64_t *)p);
		break;
	case METRICS_SEATS:
		metrics_fixed(f, *(const u_int *)p, 2);
		fputc('\n', f);
		break;
	case METRICS_COUNT:
		fprintf(f, "%u\n", *(const u_int *)p);
		break;
	case METRICS_RATIO:
		fprintf(f, "%.6g\n", *(const double *)p);
		break;
	}
}

static void
metrics_cards(FILE *f, const struct metrics_input *in)
{
	const struct metrics_card	*c;
	u_int				 i, m;

	metrics_head(f, "gmux_card_info", "gauge",
	    "A card the daemon manages; always 1.");
	for (i = 0; i < in->ncards; i++) {
		c = &in->cards[i];
		fprintf(f, "gmux_card_info{card=\"%u\",vendor=", c->index);
		metrics_label(f, c->vendor);
		fputs(",model=", f);
		metrics_label(f, c->model);
		fputs(",uuid=", f);
		metrics_label(f, c->uuid != NULL ? c->uuid : "");
		fputs("} 1\n", f);
	}
	for (m = 0; m < nitems(metrics_card_gauges); m++) {
		metrics_head(f, metrics_card_gauges[m].name, "gauge",
		    metrics_card_gauges[m].help);
		for (i = 0; i < in->ncards; i++) {
			c = &in->cards[i];
			metrics_card_value(f, metrics_card_gauges[m].name,
			    metrics_card_gauges[m].kind, c, (const char *)c +
			    metrics_card_gauges[m].offset);
		}
	}
}

static void
metrics_jobs(FILE *f, const struct metrics_input *in)
{
	u_int	 i;

	metrics_head(f, "gmux_jobs", "gauge", "Jobs the daemon knows, by "
	    "state.");
	for (i = 0; i < in->nstates; i++) {
		fputs("gmux_jobs{state=", f);
		metrics_label(f, in->states[i].state);
		fprintf(f, "} %u\n", in->states[i].jobs);
	}
	metrics_head(f, "gmux_queue_length", "gauge",
	    "Jobs waiting for room on a card.");
	fprintf(f, "gmux_queue_length %u\n", in->queue_length);
}

static void
metrics_usage(FILE *f, const struct metrics_input *in)
{
	u_int	 i;

	metrics_head(f, "gmux_usage_share_seconds_total", "counter",
	    "Guaranteed compute used, per owner, in share-seconds (a whole "
	    "card for one second is 1), since the books began.");
	for (i = 0; i < in->nowners; i++) {
		fputs("gmux_usage_share_seconds_total{owner=", f);
		metrics_label(f, in->owners[i].owner);
		fputs("} ", f);
		metrics_fixed(f, in->owners[i].seat_ms, 5);
		fputc('\n', f);
	}
	metrics_head(f, "gmux_usage_memory_byte_seconds_total", "counter",
	    "Memory caps held, per owner, in byte-seconds, since the books "
	    "began.");
	for (i = 0; i < in->nowners; i++) {
		fputs("gmux_usage_memory_byte_seconds_total{owner=", f);
		metrics_label(f, in->owners[i].owner);
		fprintf(f, "} %.15g\n", in->owners[i].mem_byte_seconds);
	}
}

/* Renders the page; the caller frees it. */
char *
metrics_render(const struct metrics_input *in)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f;

	if ((f = open_memstream(&buf, &len)) == NULL)
		fatal("open_memstream");
	metrics_head(f, "gmux_build_info", "gauge",
	    "The running gmux's version; always 1.");
	fputs("gmux_build_info{version=", f);
	metrics_label(f, in->version);
	fputs("} 1\n", f);
	metrics_head(f, "gmux_start_time_seconds", "gauge",
	    "When the daemon started, in seconds since the epoch.");
	fputs("gmux_start_time_seconds ", f);
	metrics_fixed(f, in->start_ms, 3);
	fputc('\n', f);
	metrics_cards(f, in);
	metrics_jobs(f, in);
	metrics_usage(f, in);
	if (fclose(f) != 0)
		fatal("metrics_render");
	return (buf);
}
