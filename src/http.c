/*
 * http.c: the client's HTTP/1.1 response parser.  gmux's CLI talks only to
 * gmux's own daemon (evhttp), so this parses what a server may send: a
 * status line, headers, then a body delimited by Content-Length, chunked
 * encoding, or the end of the connection.  It is incremental (bytes are fed
 * as they arrive, the body is handed out as it is decoded) and it never
 * trusts a length it was given.
 *
 * (libcurl was the first choice; loading it and its dependency chain costs
 * about 7 ms per command, more than the whole budget of a local run.)
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gmux.h"

#define HTTP_MAX_HEADERS	100

enum {
	HTTP_STATUS,
	HTTP_HEADERS,
	HTTP_BODY,		/* Content-Length or until close */
	HTTP_CHUNK_SIZE,
	HTTP_CHUNK_DATA,
	HTTP_CHUNK_END,		/* the CRLF after a chunk's data */
	HTTP_TRAILER,
	HTTP_DONE,
};

void
http_resp_init(struct http_resp *r)
{
	memset(r, 0, sizeof *r);
	r->length = -1;
}

static int
http_status_line(struct http_resp *r, const char *line, char **cause)
{
	const char	*p;

	if (strncmp(line, "HTTP/1.", 7) != 0 || !isdigit((u_char)line[7]) ||
	    line[8] != ' ') {
		xasprintf(cause, "not an HTTP/1.x reply");
		return (-1);
	}
	p = line + 9;
	if (!isdigit((u_char)p[0]) || !isdigit((u_char)p[1]) ||
	    !isdigit((u_char)p[2]) || (p[3] != ' ' && p[3] != '\0')) {
		xasprintf(cause, "bad HTTP status");
		return (-1);
	}
	r->status = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	if (line[7] == '0')
		r->close = 1;	/* HTTP/1.0 keeps no connection */
	return (0);
}

static int
http_header(struct http_resp *r, const char *line, char **cause)
{
	const char	*v;
	char		*end;
	long long	 n;

	if (++r->nheaders > HTTP_MAX_HEADERS) {
		xasprintf(cause, "too many HTTP headers");
		return (-1);
	}
	if ((v = strchr(line, ':')) == NULL) {
		xasprintf(cause, "bad HTTP header");
		return (-1);
	}
	for (v++; *v == ' ' || *v == '\t'; v++)
		;
	if (strncasecmp(line, "Content-Length:", 15) == 0) {
		n = strtoll(v, &end, 10);
		if (!isdigit((u_char)*v) || *end != '\0' || n < 0) {
			xasprintf(cause, "bad Content-Length");
			return (-1);
		}
		r->length = n;
	} else if (strncasecmp(line, "Connection:", 11) == 0) {
		if (strcasecmp(v, "close") == 0)
			r->close = 1;
	} else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0) {
		if (strcasecmp(v, "chunked") != 0) {
			xasprintf(cause, "unsupported transfer encoding");
			return (-1);
		}
		r->chunked = 1;
	}
	return (0);
}

static int
http_chunk_size(struct http_resp *r, const char *line, char **cause)
{
	char			*end;
	unsigned long long	 n;

	if (!isxdigit((u_char)*line)) {
		xasprintf(cause, "bad chunk size");
		return (-1);
	}
	n = strtoull(line, &end, 16);
	if ((*end != '\0' && *end != ';') || n > (1ULL << 40)) {
		xasprintf(cause, "bad chunk size");
		return (-1);
	}
	r->left = n;
	r->state = n == 0 ? HTTP_TRAILER : HTTP_CHUNK_DATA;
	return (0);
}

/* A whole line (CRLF removed) in the state that reads lines. */
static int
http_line(struct http_resp *r, const char *line, char **cause)
{
	switch (r->state) {
	case HTTP_STATUS:
		if (http_status_line(r, line, cause) != 0)
			return (-1);
		r->state = HTTP_HEADERS;
		return (0);
	case HTTP_HEADERS:
		if (*line != '\0')
			return (http_header(r, line, cause));
		if (!r->chunked && r->length < 0)
			r->close = 1;	/* the body ends with the connection */
		if (r->chunked)
			r->state = HTTP_CHUNK_SIZE;
		else if (r->length == 0)
			r->state = HTTP_DONE;
		else {
			r->state = HTTP_BODY;
			r->left = (uint64_t)r->length;
		}
		return (0);
	case HTTP_CHUNK_SIZE:
		return (http_chunk_size(r, line, cause));
	case HTTP_CHUNK_END:
		if (*line != '\0') {
			xasprintf(cause, "bad chunk end");
			return (-1);
		}
		r->state = HTTP_CHUNK_SIZE;
		return (0);
	case HTTP_TRAILER:
		if (*line == '\0')
			r->state = HTTP_DONE;
		return (0);
	}
	return (0);
}

static int
http_is_line_state(int state)
{
	return (state == HTTP_STATUS || state == HTTP_HEADERS ||
	    state == HTTP_CHUNK_SIZE || state == HTTP_CHUNK_END ||
	    state == HTTP_TRAILER);
}

/* Hands out body bytes; returns how many of len it used. */
static size_t
http_body(struct http_resp *r, const char *p, size_t len,
    void (*cb)(const char *, size_t, void *), void *arg)
{
	size_t	 n = len;

	if (r->state == HTTP_CHUNK_DATA || r->length >= 0)
		n = r->left < len ? (size_t)r->left : len;
	if (n > 0)
		cb(p, n, arg);
	if (r->state == HTTP_CHUNK_DATA || r->length >= 0)
		r->left -= n;
	if (r->left == 0 && r->state == HTTP_CHUNK_DATA)
		r->state = HTTP_CHUNK_END;
	else if (r->left == 0 && r->length >= 0)
		r->state = HTTP_DONE;
	return (n);
}

/*
 * Feeds bytes of the reply.  Body bytes go to cb as they are decoded.
 * Returns 1 when the reply is complete, 0 if more is needed, -1 with
 * *cause if it is malformed.  len 0 means the connection closed.
 */
int
http_resp_feed(struct http_resp *r, const char *p, size_t len,
    void (*cb)(const char *, size_t, void *), void *arg, char **cause)
{
	size_t	 n;

	if (len == 0) {
		if (r->state == HTTP_BODY && r->length < 0)
			r->state = HTTP_DONE;
		if (r->state == HTTP_DONE)
			return (1);
		xasprintf(cause,
		    "the connection closed in the middle of a reply");
		return (-1);
	}
	while (len > 0 && r->state != HTTP_DONE) {
		if (!http_is_line_state(r->state)) {
			n = http_body(r, p, len, cb, arg);
			p += n;
			len -= n;
			continue;
		}
		if (*p == '\n') {
			if (r->linelen > 0 && r->line[r->linelen - 1] == '\r')
				r->linelen--;
			r->line[r->linelen] = '\0';
			r->linelen = 0;
			if (http_line(r, r->line, cause) != 0)
				return (-1);
		} else if (r->linelen + 1 >= sizeof r->line) {
			xasprintf(cause, "an HTTP line is too long");
			return (-1);
		} else if (*p == '\0') {
			xasprintf(cause, "a NUL in an HTTP line");
			return (-1);
		} else
			r->line[r->linelen++] = *p;
		p++;
		len--;
	}
	return (r->state == HTTP_DONE);
}

/*
 * A request's head as the host sees it arrive, before evhttp parses it
 * (server-tls.c checks the token there, before any body is read).  Bytes
 * are fed as they come; the head ends at its first empty line (CRLF or a
 * bare LF, as evhttp reads lines).  Returns 1 once it has, with *rest the
 * bytes of data that came after it; 0 while it has not; -1 if more than
 * max bytes came without an end.
 */
int
http_head_feed(struct http_head *h, const char *data, size_t len,
    size_t max, size_t *rest)
{
	size_t	 i, old = h->len, take = len;

	*rest = 0;
	if (h->end != 0) {
		*rest = len;
		return (1);
	}
	if (take > max + 2 - h->len)
		take = max + 2 - h->len;
	h->buf = xrealloc(h->buf, h->len + take + 1);
	memcpy(h->buf + h->len, data, take);
	h->len += take;
	h->buf[h->len] = '\0';
	for (i = old > 2 ? old - 2 : 0; i < h->len && h->end == 0; i++) {
		if (h->buf[i] != '\n')
			continue;
		if (i + 1 < h->len && h->buf[i + 1] == '\n')
			h->end = i + 2;
		else if (i + 2 < h->len && h->buf[i + 1] == '\r' &&
		    h->buf[i + 2] == '\n')
			h->end = i + 3;
	}
	if (h->end != 0) {
		*rest = len - (h->end - old);
		return (1);
	}
	return (h->len > max ? -1 : 0);
}

/*
 * The value of the first header called name in a complete head (spaces
 * around it trimmed), or NULL.  Allocated.
 */
char *
http_head_get(const struct http_head *h, const char *name)
{
	const char	*p, *end, *eol, *v;
	size_t		 nlen = strlen(name);

	if (h->end == 0)
		return (NULL);
	end = h->buf + h->end;
	if ((p = memchr(h->buf, '\n', h->end)) == NULL)
		return (NULL);
	for (p++; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		if ((size_t)(eol - p) <= nlen || p[nlen] != ':' ||
		    strncasecmp(p, name, nlen) != 0)
			continue;
		for (v = p + nlen + 1; v < eol && (*v == ' ' || *v == '\t');
		    v++)
			;
		while (eol > v && (eol[-1] == '\r' || eol[-1] == ' ' ||
		    eol[-1] == '\t'))
			eol--;
		return (xstrndup(v, (size_t)(eol - v)));
	}
	return (NULL);
}

void
http_head_clear(struct http_head *h)
{
	if (h->buf != NULL)
		explicit_bzero(h->buf, h->len);	/* it may hold a token */
	free(h->buf);
	memset(h, 0, sizeof *h);
}
