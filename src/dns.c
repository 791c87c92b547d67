/*
 * dns.c: the fence's DNS stub.  A fenced job's lookups come here (over a
 * socket pair the supervisor put in place of the job's socket to port 53)
 * and get A and AAAA answers for allowed names only, NXDOMAIN for the
 * rest.  Messages are parsed as untrusted input: the job writes them.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#define DNS_HDR		12
#define DNS_T_A		1
#define DNS_T_AAAA	28
#define DNS_T_ANY	255
#define DNS_C_IN	1
#define DNS_QR		0x8000
#define DNS_TC		0x0200
#define DNS_RD		0x0100
#define DNS_RA		0x0080
#define DNS_FORMERR	1
#define DNS_SERVFAIL_RC	2
#define DNS_NXDOMAIN_RC	3
#define DNS_NOTIMP	4
#define DNS_REFUSED	5
#define DNS_UDP_MAX	512	/* no EDNS: a datagram answer fits in 512 */
#define DNS_MAX_RR	64
#define DNS_OUT_MAX	(1024 * 1024)	/* a job that never reads is cut off */

struct dns_conn {
	int		 fd;
	int		 stream;	/* length-prefixed (TCP) or datagrams */
	u_char		*in;		/* stream: 2-byte length + message */
	size_t		 inlen;
	u_char		*out;
	size_t		 outlen;
	size_t		 outoff;
};

static uint16_t
get16(const u_char *p)
{
	return ((uint16_t)(p[0] << 8 | p[1]));
}

static void
put16(u_char *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void
put32(u_char *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/*
 * Reads the question's name into q->name, lower case, dot-separated.
 * Compression pointers are refused: a question has nothing to point to.
 * Returns the offset after the name or 0.
 */
static size_t
parse_name(const u_char *m, size_t len, size_t off, struct dns_question *q)
{
	size_t	 n = 0, i;
	u_char	 c, l;

	q->plain = 1;
	for (;;) {
		if (off >= len)
			return (0);
		if ((l = m[off++]) == 0)
			break;
		if (l > 63 || off + l > len || n + l + 1 > DNS_MAX_NAME)
			return (0);
		if (n != 0)
			q->name[n++] = '.';
		for (i = 0; i < l; i++) {
			c = m[off + i];
			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (!((c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_')) {
				q->plain = 0;
				c = '?';
			}
			q->name[n++] = (char)c;
		}
		off += l;
	}
	q->name[n] = '\0';
	return (off);
}

/*
 * Parses a query with one question.  Fails (with a cause) on anything
 * else; the header alone (the first 12 bytes) is enough to answer with an
 * error, which dns_answer() does.
 */
int
dns_parse_query(const u_char *m, size_t len, struct dns_question *q,
    char **cause)
{
	size_t	 off;

	memset(q, 0, sizeof *q);
	if (len < DNS_HDR) {
		xasprintf(cause, "message of %zu bytes is too short", len);
		return (-1);
	}
	q->id = get16(m);
	q->flags = get16(m + 2);
	if (q->flags & DNS_QR) {
		xasprintf(cause, "not a query");
		return (-1);
	}
	if (get16(m + 4) != 1) {
		xasprintf(cause, "%u questions, not one", get16(m + 4));
		return (-1);
	}
	if ((off = parse_name(m, len, DNS_HDR, q)) == 0 || off + 4 > len) {
		xasprintf(cause, "bad question");
		return (-1);
	}
	q->qtype = get16(m + off);
	q->qclass = get16(m + off + 2);
	q->len = off + 4;
	return (0);
}

/* Writes a header; counts are for one question and an answers. */
static void
put_header(u_char *out, uint16_t id, uint16_t flags, u_int rcode, u_int qd,
    u_int an)
{
	put16(out, id);
	put16(out + 2, (uint16_t)(DNS_QR | (flags & DNS_RD) | DNS_RA | rcode));
	put16(out + 4, (uint16_t)qd);
	put16(out + 6, (uint16_t)an);
	put16(out + 8, 0);
	put16(out + 10, 0);
}

/* Appends the answers of type qtype from rr that fit; returns how many. */
static u_int
put_answers(u_char *out, size_t *used, size_t max, uint16_t qtype,
    const struct dns_rr *rr, int n, int *truncated)
{
	u_int	 an = 0, alen;
	int	 i;
	uint16_t type;

	for (i = 0; i < n; i++) {
		type = rr[i].family == AF_INET ? DNS_T_A : DNS_T_AAAA;
		if (qtype != type && qtype != DNS_T_ANY)
			continue;
		alen = type == DNS_T_A ? 4 : 16;
		if (*used + 12 + alen > max) {
			*truncated = 1;
			break;
		}
		put16(out + *used, 0xc000 | DNS_HDR);	/* the question's */
		put16(out + *used + 2, type);
		put16(out + *used + 4, DNS_C_IN);
		put32(out + *used + 6, rr[i].ttl);
		put16(out + *used + 10, (uint16_t)alen);
		memcpy(out + *used + 12, rr[i].addr, alen);
		*used += 12 + alen;
		an++;
	}
	return (an);
}

/*
 * Answers query m into out (max bytes; 512 for a datagram, whose answer
 * is cut short with TC set when the records do not fit).  Returns the
 * answer's length, or 0 when there is nothing to answer (too short to
 * have an ID, or an answer rather than a query).
 */
size_t
dns_answer(const u_char *m, size_t len, u_char *out, size_t max,
    dns_lookup_cb lookup, void *arg)
{
	struct dns_question	 q;
	struct dns_rr		 rr[DNS_MAX_RR];
	char			*cause = NULL;
	size_t			 used;
	u_int			 rcode = 0, an = 0;
	int			 n = 0, truncated = 0;

	if (len < DNS_HDR || max < DNS_HDR || (get16(m + 2) & DNS_QR))
		return (0);
	if (dns_parse_query(m, len, &q, &cause) != 0) {
		free(cause);
		put_header(out, get16(m), get16(m + 2), DNS_FORMERR, 0, 0);
		return (DNS_HDR);
	}
	if (((q.flags >> 11) & 0xf) != 0) {
		put_header(out, q.id, q.flags, DNS_NOTIMP, 0, 0);
		return (DNS_HDR);
	}
	if (q.len > max) {
		put_header(out, q.id, q.flags | DNS_TC, 0, 0, 0);
		return (DNS_HDR);
	}
	memcpy(out + DNS_HDR, m + DNS_HDR, q.len - DNS_HDR);
	used = q.len;
	if (q.qclass != DNS_C_IN)
		rcode = DNS_REFUSED;
	else if (!q.plain || (n = lookup(q.name, rr, DNS_MAX_RR, arg)) ==
	    DNS_NXDOMAIN)
		rcode = DNS_NXDOMAIN_RC;
	else if (n < 0)
		rcode = DNS_SERVFAIL_RC;
	else
		an = put_answers(out, &used, max, q.qtype, rr, n, &truncated);
	put_header(out, q.id, q.flags, rcode, 1, an);
	if (truncated)
		out[2] |= DNS_TC >> 8;
	return (used);
}

/* Returns a stub connection on fd (the caller's, now the conn's). */
struct dns_conn *
dns_conn_create(int fd, int stream)
{
	struct dns_conn	*c;

	c = xcalloc(1, sizeof *c);
	c->fd = fd;
	c->stream = stream;
	if (stream)
		c->in = xmalloc(2 + 65535);
	return (c);
}

/* Whether answers wait to be written (the caller then watches for out). */
int
dns_conn_pending(const struct dns_conn *c)
{
	return (c->outoff < c->outlen);
}

static int
queue_answer(struct dns_conn *c, const u_char *msg, size_t len)
{
	if (c->outoff == c->outlen)
		c->outoff = c->outlen = 0;
	if (c->outlen + 2 + len > DNS_OUT_MAX)
		return (-1);
	c->out = xrealloc(c->out, c->outlen + 2 + len);
	put16(c->out + c->outlen, (uint16_t)len);
	memcpy(c->out + c->outlen + 2, msg, len);
	c->outlen += 2 + len;
	return (0);
}

/* Datagrams: one query, one answer; an answer that cannot go is dropped. */
static int
read_datagrams(struct dns_conn *c, dns_lookup_cb lookup, void *arg)
{
	u_char	 m[65536], out[DNS_UDP_MAX];
	ssize_t	 n;
	size_t	 alen;

	for (;;) {
		n = recv(c->fd, m, sizeof m, MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return (errno == EAGAIN ? 0 : -1);
		if (n == 0)
			return (-1);
		alen = dns_answer(m, (size_t)n, out, sizeof out, lookup, arg);
		if (alen != 0)
			send(c->fd, out, alen, MSG_DONTWAIT|MSG_NOSIGNAL);
	}
}

/*
 * Reads what the job wrote and queues the answers.  Returns -1 when the
 * connection is over (closed, broken, or a job that does not read).
 */
int
dns_conn_read(struct dns_conn *c, dns_lookup_cb lookup, void *arg)
{
	u_char	 out[65535];
	ssize_t	 n;
	size_t	 mlen, alen;

	if (!c->stream)
		return (read_datagrams(c, lookup, arg));
	n = read(c->fd, c->in + c->inlen, 2 + 65535 - c->inlen);
	if (n == -1)
		return (errno == EAGAIN || errno == EINTR ? 0 : -1);
	if (n == 0)
		return (-1);
	c->inlen += (size_t)n;
	while (c->inlen >= 2 && c->inlen >= 2 + (mlen = get16(c->in))) {
		if (mlen == 0)
			return (-1);
		alen = dns_answer(c->in + 2, mlen, out, sizeof out, lookup,
		    arg);
		if (alen != 0 && queue_answer(c, out, alen) != 0)
			return (-1);
		c->inlen -= 2 + mlen;
		memmove(c->in, c->in + 2 + mlen, c->inlen);
	}
	return (dns_conn_write(c));
}

/* Writes queued answers; returns -1 when the connection is broken. */
int
dns_conn_write(struct dns_conn *c)
{
	ssize_t	 n;

	while (c->outoff < c->outlen) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return (errno == EAGAIN ? 0 : -1);
		c->outoff += (size_t)n;
	}
	return (0);
}

void
dns_conn_free(struct dns_conn *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}
