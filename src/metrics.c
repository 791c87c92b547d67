/*
 * metrics.c: the /metrics page in Prometheus's text exposition format
 * (version 0.0.4), rendered from what the daemon hands over; no I/O and
 * no state.  Every metric is listed in docs/metrics.md.
 */

#include <inttypes.h>
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

static void
metrics_card_label(FILE *f, const char *name, const struct metrics_card *c)
{
	fprintf(f, "%s{card=\"%u\"} ", name, c->index);
}

static void
metrics_cards_info(FILE *f, const struct metrics_input *in)
{
	const struct metrics_card	*c;
	u_int				 i;

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
	metrics_head(f, "gmux_card_memory_bytes", "gauge",
	    "Memory of the card in bytes.");
	for (i = 0; i < in->ncards; i++) {
		metrics_card_label(f, "gmux_card_memory_bytes", &in->cards[i]);
		fprintf(f, "%" PRIu64 "\n", in->cards[i].memory);
	}
}

static void
metrics_cards_use(FILE *f, const struct metrics_input *in)
{
	const struct metrics_card	*c;
	u_int				 i;

	metrics_head(f, "gmux_card_memory_allocated_bytes", "gauge",
	    "Sum of the memory caps of the jobs on the card, in bytes.");
	for (i = 0; i < in->ncards; i++) {
		c = &in->cards[i];
		metrics_card_label(f, "gmux_card_memory_allocated_bytes", c);
		fprintf(f, "%" PRIu64 "\n", c->mem_allocated);
	}
	metrics_head(f, "gmux_card_share_allocated", "gauge",
	    "Guaranteed compute share allocated on the card (0 to 1).");
	for (i = 0; i < in->ncards; i++) {
		metrics_card_label(f, "gmux_card_share_allocated",
		    &in->cards[i]);
		metrics_fixed(f, in->cards[i].seats, 2);
		fputc('\n', f);
	}
	metrics_head(f, "gmux_card_share_burst", "gauge",
	    "Compute share granted above their guarantees to bursting jobs "
	    "(0 to 1).");
	for (i = 0; i < in->ncards; i++) {
		metrics_card_label(f, "gmux_card_share_burst", &in->cards[i]);
		metrics_fixed(f, in->cards[i].burst, 2);
		fputc('\n', f);
	}
	metrics_head(f, "gmux_card_jobs", "gauge",
	    "Running jobs on the card.");
	for (i = 0; i < in->ncards; i++) {
		metrics_card_label(f, "gmux_card_jobs", &in->cards[i]);
		fprintf(f, "%u\n", in->cards[i].jobs);
	}
	metrics_head(f, "gmux_card_utilization_ratio", "gauge",
	    "Measured compute utilization of the card (0 to 1); absent "
	    "where it cannot be measured.");
	for (i = 0; i < in->ncards; i++) {
		if (in->cards[i].util < 0)
			continue;
		metrics_card_label(f, "gmux_card_utilization_ratio",
		    &in->cards[i]);
		fprintf(f, "%.6g\n", in->cards[i].util);
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
	metrics_cards_info(f, in);
	metrics_cards_use(f, in);
	metrics_jobs(f, in);
	metrics_usage(f, in);
	if (fclose(f) != 0)
		fatal("metrics_render");
	return (buf);
}
