/*
 * usage.c: gmux usage reports: their windows (relative durations or UTC
 * dates), their JSON form on the API, and the table and CSV the CLI prints.
 * Days are UTC days throughout.
 */

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define USAGE_SEAT_MS_PER_SHARE_SECOND	100000.0	/* 100 seats x 1 s */
#define USAGE_SEAT_MS_PER_CARD_HOUR	360000000.0
#define USAGE_MAX_DAY	2932897LL	/* 10000-01-01; 9999-12-31 is in */

static const char *usage_by_names[] = {
	"owner", "job", "card", "vendor", "day",
};

const char *
usage_by_name(enum usage_by by)
{
	return (usage_by_names[by]);
}

int
usage_by_from_name(const char *s, enum usage_by *by, char **cause)
{
	u_int	 i;

	for (i = 0; i < nitems(usage_by_names); i++) {
		if (s != NULL && strcmp(s, usage_by_names[i]) == 0) {
			*by = (enum usage_by)i;
			return (0);
		}
	}
	xasprintf(cause, "'%s' is not one of owner, job, card, vendor, day",
	    s != NULL ? s : "");
	return (-1);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
usage_days_from_civil(int64_t y, u_int m, u_int d)
{
	int64_t	 era;
	u_int	 yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (u_int)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (era * 146097 + (int64_t)doe - 719468);
}

static void
usage_civil_from_days(int64_t z, int64_t *y, u_int *m, u_int *d)
{
	int64_t	 era;
	u_int	 doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (u_int)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Writes "2026-11-01" for a UTC day number into buf (at least 16 bytes). */
void
usage_format_day(int64_t day, char *buf)
{
	int64_t	 y;
	u_int	 m, d;

	if (day < 0 || day >= USAGE_MAX_DAY)
		day = 0;
	usage_civil_from_days(day, &y, &m, &d);
	snprintf(buf, 16, "%04d-%02u-%02u", (int)(y % 10000), m % 100, d % 100);
}

/* Writes "2026-11-01T12:00:00Z" (with ".123" if not whole) into buf[32]. */
void
usage_format_time(int64_t ms, char *buf)
{
	int64_t	 s;
	char	 day[16];

	if (ms < 0 || ms >= USAGE_MAX_DAY * LEDGER_DAY_MS)
		ms = 0;
	usage_format_day(ms / LEDGER_DAY_MS, day);
	s = (ms % LEDGER_DAY_MS) / 1000;
	if (ms % 1000 != 0) {
		snprintf(buf, 32, "%sT%02d:%02d:%02d.%03dZ", day,
		    (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60),
		    (int)(ms % 1000));
	} else {
		snprintf(buf, 32, "%sT%02d:%02d:%02dZ", day, (int)(s / 3600),
		    (int)(s / 60 % 60), (int)(s % 60));
	}
}

/* Reads exactly n digits at *p; -1 if they are not there. */
static int
usage_digits(const char **p, u_int n)
{
	int	 v = 0;

	while (n-- > 0) {
		if (!isdigit((u_char)**p))
			return (-1);
		v = v * 10 + (*(*p)++ - '0');
	}
	return (v);
}

static u_int
usage_month_days(int y, int m)
{
	static const u_int	 days[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return (29);
	return (days[m - 1]);
}

/* "2026-11-01", "2026-11-01T12:30", "2026-11-01 12:30:15Z": UTC. */
static int
usage_parse_date(const char *s, int64_t *ms)
{
	const char	*p = s;
	int		 y, mo, d, h = 0, mi = 0, sec = 0;

	if ((y = usage_digits(&p, 4)) < 1970 || *p++ != '-' ||
	    (mo = usage_digits(&p, 2)) < 1 || mo > 12 || *p++ != '-' ||
	    (d = usage_digits(&p, 2)) < 1 || d > (int)usage_month_days(y, mo))
		return (-1);
	if (*p == 'T' || *p == ' ') {
		p++;
		if ((h = usage_digits(&p, 2)) < 0 || h > 23 || *p++ != ':' ||
		    (mi = usage_digits(&p, 2)) < 0 || mi > 59)
			return (-1);
		if (*p == ':') {
			p++;
			if ((sec = usage_digits(&p, 2)) < 0 || sec > 59)
				return (-1);
		}
	}
	if (*p == 'Z')
		p++;
	if (*p != '\0')
		return (-1);
	*ms = usage_days_from_civil(y, (u_int)mo, (u_int)d) * LEDGER_DAY_MS +
	    ((int64_t)h * 3600 + mi * 60 + sec) * 1000;
	return (0);
}

/*
 * A point in time for --since and --until: "now", a duration back from
 * now ("24h", "30d"), or a UTC date or date and time.
 */
int
usage_parse_time(const char *s, int64_t now, int64_t *ms, char **cause)
{
	int64_t	 d;
	char	*why = NULL;

	if (strcmp(s, "now") == 0) {
		*ms = now;
		return (0);
	}
	if (usage_parse_date(s, ms) == 0)
		return (0);
	if (strlen(s) >= 5 && isdigit((u_char)s[0]) && s[4] == '-')
		goto bad;
	if (parse_duration(s, &d, &why) != 0 || d > now) {
		free(why);
		goto bad;
	}
	*ms = now - d;
	return (0);
bad:
	xasprintf(cause, "'%s' is not a time (like 24h, 30d, 2026-11-01 or "
	    "2026-11-01T12:00Z)", s);
	return (-1);
}

/* The window [since, until); by default the last 24 hours. */
int
usage_parse_window(const char *since_s, const char *until_s, int64_t now,
    int64_t *since, int64_t *until, char **cause)
{
	*since = now - LEDGER_DAY_MS;
	*until = now;
	if (since_s != NULL && usage_parse_time(since_s, now, since,
	    cause) != 0)
		return (-1);
	if (until_s != NULL && usage_parse_time(until_s, now, until,
	    cause) != 0)
		return (-1);
	if (*since >= *until) {
		xasprintf(cause, "--since must be before --until");
		return (-1);
	}
	return (0);
}

void
usage_free(struct usage *u)
{
	u_int	 i;

	for (i = 0; i < u->nrows; i++) {
		free(u->rows[i].key);
		free(u->rows[i].host);
	}
	free(u->rows);
	free(u->total.key);
	memset(u, 0, sizeof *u);
}

static json_t *
usage_row_json(const struct usage_row *r, const char *field, int card)
{
	json_t	*j;

	j = json_object();
	if (r->host != NULL)
		json_object_set_new(j, "host", json_string(r->host));
	if (field != NULL && card)
		json_object_set_new(j, field, json_integer(atoll(r->key)));
	else if (field != NULL)
		json_object_set_new(j, field, json_string(r->key));
	json_object_set_new(j, "jobs", json_integer(r->jobs));
	json_object_set_new(j, "seat_ms", json_integer(r->seat_ms));
	json_object_set_new(j, "share_seconds", json_real((double)r->seat_ms /
	    USAGE_SEAT_MS_PER_SHARE_SECOND));
	json_object_set_new(j, "card_hours", json_real((double)r->seat_ms /
	    USAGE_SEAT_MS_PER_CARD_HOUR));
	json_object_set_new(j, "mem_gib_hours", json_real(r->mem_gib_hours));
	return (j);
}

/* The API's form of a report; the caller owns the reference. */
json_t *
usage_to_json(const struct usage *u)
{
	json_t		*j, *rows;
	const char	*by = usage_by_name(u->by);
	char		 t[32];
	u_int		 i;

	j = json_object();
	json_object_set_new(j, "by", json_string(by));
	json_object_set_new(j, "since", json_integer(u->since));
	json_object_set_new(j, "until", json_integer(u->until));
	usage_format_time(u->since, t);
	json_object_set_new(j, "since_utc", json_string(t));
	usage_format_time(u->until, t);
	json_object_set_new(j, "until_utc", json_string(t));
	rows = json_array();
	for (i = 0; i < u->nrows; i++) {
		json_array_append_new(rows, usage_row_json(&u->rows[i], by,
		    u->by == USAGE_CARD));
	}
	json_object_set_new(j, "rows", rows);
	json_object_set_new(j, "total", usage_row_json(&u->total, NULL, 0));
	return (j);
}

static int
usage_row_from_json(json_t *j, const char *field, struct usage_row *r)
{
	json_t	*k, *n, *s, *m;

	if (!json_is_object(j))
		return (-1);
	n = json_object_get(j, "jobs");
	s = json_object_get(j, "seat_ms");
	m = json_object_get(j, "mem_gib_hours");
	if (!json_is_integer(n) || json_integer_value(n) < 0 ||
	    json_integer_value(n) > UINT32_MAX || !json_is_integer(s) ||
	    !json_is_number(m))
		return (-1);
	r->jobs = (u_int)json_integer_value(n);
	r->seat_ms = json_integer_value(s);
	r->mem_gib_hours = json_number_value(m);
	if ((k = json_object_get(j, "host")) != NULL && json_is_string(k))
		r->host = xstrdup(json_string_value(k));
	if (field == NULL) {
		r->key = xstrdup("total");
		return (0);
	}
	k = json_object_get(j, field);
	if (json_is_string(k))
		r->key = xstrdup(json_string_value(k));
	else if (json_is_integer(k))
		xasprintf(&r->key, "%" PRId64, (int64_t)json_integer_value(k));
	else
		return (-1);
	return (0);
}

/* Reads a report from the API's reply; fills u (usage_free it) or cause. */
int
usage_from_json(json_t *j, struct usage *u, char **cause)
{
	json_t	*rows, *since, *until;
	size_t	 i;

	memset(u, 0, sizeof *u);
	rows = json_object_get(j, "rows");
	since = json_object_get(j, "since");
	until = json_object_get(j, "until");
	if (usage_by_from_name(json_string_value(json_object_get(j, "by")),
	    &u->by, cause) != 0)
		return (-1);
	if (!json_is_array(rows) || !json_is_integer(since) ||
	    !json_is_integer(until))
		goto bad;
	u->since = json_integer_value(since);
	u->until = json_integer_value(until);
	u->rows = xcalloc(json_array_size(rows) + 1, sizeof *u->rows);
	for (i = 0; i < json_array_size(rows); i++) {
		if (usage_row_from_json(json_array_get(rows, i),
		    usage_by_name(u->by), &u->rows[i]) != 0) {
			u->nrows = (u_int)i + 1;
			goto bad;
		}
	}
	u->nrows = (u_int)i;
	if (usage_row_from_json(json_object_get(j, "total"), NULL,
	    &u->total) != 0)
		goto bad;
	return (0);
bad:
	usage_free(u);
	xasprintf(cause, "the usage reply is malformed");
	return (-1);
}

/* Writes a CSV field, quoted when it must be (RFC 4180). */
void
usage_csv_field(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void
usage_print_csv_row(const struct usage_row *r, const char *key, int hosts,
    FILE *f)
{
	if (hosts) {
		usage_csv_field(f, r->host != NULL ? r->host : "");
		fputc(',', f);
	}
	usage_csv_field(f, key);
	fprintf(f, ",%u,%" PRId64 ".%05" PRId64 ",%.6f,%.6f,%" PRId64 "\n",
	    r->jobs, r->seat_ms / 100000, r->seat_ms % 100000,
	    (double)r->seat_ms / USAGE_SEAT_MS_PER_CARD_HOUR,
	    r->mem_gib_hours, r->seat_ms);
}

static void
usage_print_csv(const struct usage *u, FILE *f)
{
	u_int	 i;
	int	 hosts = u->nrows > 0 && u->rows[0].host != NULL;

	fprintf(f, "%s%s,jobs,share_seconds,card_hours,mem_gib_hours,seat_ms\n",
	    hosts ? "host," : "", usage_by_name(u->by));
	for (i = 0; i < u->nrows; i++)
		usage_print_csv_row(&u->rows[i], u->rows[i].key, hosts, f);
	usage_print_csv_row(&u->total, "(total)", hosts, f);
}

static void
usage_print_table_row(const struct usage_row *r, const char *key, int hw,
    int w, FILE *f)
{
	if (hw > 0)
		fprintf(f, "%-*s ", hw, r->host != NULL ? r->host : "");
	fprintf(f, "%-*s %6u %12.4f %14.2f %14.3f\n", w, key, r->jobs,
	    (double)r->seat_ms / USAGE_SEAT_MS_PER_CARD_HOUR,
	    (double)r->seat_ms / USAGE_SEAT_MS_PER_SHARE_SECOND,
	    r->mem_gib_hours);
}

static void
usage_print_table(const struct usage *u, FILE *f)
{
	char	 since[32], until[32], head[16];
	int	 w = 6, hw = 0;
	u_int	 i;

	for (i = 0; i < u->nrows; i++) {
		if ((int)strlen(u->rows[i].key) > w)
			w = (int)strlen(u->rows[i].key);
		/* Rows merged from several hosts: a HOST column first. */
		if (u->rows[i].host != NULL && hw < 4)
			hw = 4;
		if (u->rows[i].host != NULL &&
		    (int)strlen(u->rows[i].host) > hw)
			hw = (int)strlen(u->rows[i].host);
	}
	usage_format_time(u->since, since);
	usage_format_time(u->until, until);
	fprintf(f, "usage by %s from %s to %s (UTC)\n", usage_by_name(u->by),
	    since, until);
	for (i = 0; usage_by_name(u->by)[i] != '\0' && i < sizeof head - 1; i++)
		head[i] = (char)toupper((u_char)usage_by_name(u->by)[i]);
	head[i] = '\0';
	if (hw > 0)
		fprintf(f, "%-*s ", hw, "HOST");
	fprintf(f, "%-*s %6s %12s %14s %14s\n", w, head, "JOBS", "CARD-HOURS",
	    "SHARE-SECONDS", "MEM-GIB-HOURS");
	for (i = 0; i < u->nrows; i++)
		usage_print_table_row(&u->rows[i], u->rows[i].key, hw, w, f);
	usage_print_table_row(&u->total, "TOTAL", hw, w, f);
}

void
usage_print(const struct usage *u, enum usage_format fmt, FILE *f)
{
	json_t	*j;
	char	*s;

	switch (fmt) {
	case USAGE_TABLE:
		usage_print_table(u, f);
		break;
	case USAGE_CSV:
		usage_print_csv(u, f);
		break;
	case USAGE_JSON:
		j = usage_to_json(u);
		s = json_dumps(j, JSON_INDENT(2)|JSON_PRESERVE_ORDER|
		    JSON_REAL_PRECISION(15));
		fprintf(f, "%s\n", s);
		free(s);
		json_decref(j);
		break;
	}
}
