/*
 * term-peer.c: a terminal or a published port of a cluster job that runs
 * on another member (docs/cluster.md, "Members calling members";
 * docs/terminals.md).  The member the client reached opens one pinned TLS
 * connection to the job's member, as a member (its certificate, the
 * owner in X-Gmux-Peer-Owner, never the client's token), sends the same
 * upgrade and, once that member has answered 101, answers its client 101
 * too and splices the two connections (term-port.c), frames and all.
 * Any other answer is passed on as it came (a 404 for another owner's
 * job, a 409 for one that has ended); no answer in time is a 502.
 *
 * The client's request stays this member's until it is answered: if the
 * client goes meanwhile, libevent leaves it without a connection, and
 * answering it then frees it (as term-dial.c).
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"
#include "term-int.h"

#define PEER_ANSWER_S	8		/* its answer, in the CLI's 10 s */
#define PEER_HEAD_MAX	16384		/* its head, at most */
#define PEER_BODY_MAX	65536		/* a refusal's body, at most */

struct tpeer {
	struct evhttp_request	*req;		/* the client's */
	struct bufferevent	*bev;		/* to the member */
	char			*member;
	char			*proto;
	struct http_resp	 resp;
	int			 head;		/* its head has come */
	int			 done;		/* and its body */
	struct evbuffer		*body;		/* a refusal's */
	char			*ct;		/* its Content-Type */
};

static void
tpeer_free(struct tpeer *p)
{
	if (p->bev != NULL)
		bufferevent_free(p->bev);
	if (p->body != NULL)
		evbuffer_free(p->body);
	free(p->ct);
	free(p->member);
	free(p->proto);
	free(p);
}

/* The member did not answer: 502 with why, and the relay goes. */
static void
tpeer_fail(struct tpeer *p, const char *why)
{
	char	*pin = tls_peer_pin_error(p->bev);

	log_debug("%s: %s: %s", __func__, p->member, pin ? pin : why);
	if (pin != NULL)
		api_error(p->req, 502, "%s", pin);
	else
		api_error(p->req, 502, "member %s %s", p->member, why);
	free(pin);
	tpeer_free(p);
}

/* 101: the client's connection is spliced to the member's. */
static void
tpeer_upgraded(struct tpeer *p)
{
	struct evhttp_connection	*evcon;

	evcon = evhttp_request_get_connection(p->req);
	if (evcon == NULL) {		/* the client went: the answer frees */
		api_error(p->req, 502, "its client has gone");
		tpeer_free(p);
		return;
	}
	log_debug("%s: %s: upgraded", __func__, p->member);
	term_splice_start(evhttp_connection_get_bufferevent(evcon), evcon,
	    p->bev, p->proto);
	p->bev = NULL;
	tpeer_free(p);
}

static void
tpeer_body_cb(const char *data, size_t len, void *arg)
{
	struct tpeer	*p = arg;

	if (evbuffer_get_length(p->body) + len <= PEER_BODY_MAX)
		evbuffer_add(p->body, data, len);
}

/* The member's refusal, whole: passed on to the client as it came. */
static void
tpeer_refused(struct tpeer *p)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(p->req);

	log_debug("%s: %s: %d", __func__, p->member, p->resp.status);
	if (p->ct != NULL)
		evhttp_add_header(h, "Content-Type", p->ct);
	api_send(p->req, p->resp.status, p->body);
	tpeer_free(p);
}

/* The head: its status line and headers (the bytes before the body). */
static int
tpeer_head(struct tpeer *p, struct evbuffer *in)
{
	struct evbuffer_ptr	 end;
	char			*head, *cause = NULL, *ct;
	size_t			 n;

	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos == -1) {
		if (evbuffer_get_length(in) > PEER_HEAD_MAX) {
			tpeer_fail(p, "answered no HTTP");
			return (-1);
		}
		return (0);
	}
	n = (size_t)end.pos + 4;
	head = xmalloc(n + 1);
	evbuffer_remove(in, head, n);
	head[n] = '\0';
	if ((p->done = http_resp_feed(&p->resp, head, n, tpeer_body_cb, p,
	    &cause)) < 0 || p->resp.status == 0) {
		free(head);
		free(cause);
		tpeer_fail(p, "answered no HTTP");
		return (-1);
	}
	if ((ct = strcasestr(head, "\r\nContent-Type: ")) != NULL)
		p->ct = xstrndup(ct + 16, strcspn(ct + 16, "\r\n"));
	free(head);
	p->head = 1;
	return (0);
}

static void
tpeer_read(struct bufferevent *bev, void *arg)
{
	struct tpeer	*p = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	char		 buf[4096], *cause = NULL;
	int		 n;

	if (!p->head && (tpeer_head(p, in) != 0 || !p->head))
		return;
	if (p->resp.status == 101) {
		tpeer_upgraded(p);	/* what came after it is spliced */
		return;
	}
	while (p->done == 0 && (n = evbuffer_remove(in, buf, sizeof buf)) > 0)
		p->done = http_resp_feed(&p->resp, buf, (size_t)n,
		    tpeer_body_cb, p, &cause);
	if (p->done < 0) {
		free(cause);
		tpeer_fail(p, "answered no HTTP");
	} else if (p->done == 1)
		tpeer_refused(p);
}

static void
tpeer_event(struct bufferevent *bev, short what, void *arg)
{
	struct tpeer	*p = arg;

	if (what & BEV_EVENT_CONNECTED)
		return;
	if (what & BEV_EVENT_TIMEOUT)
		tpeer_fail(p, "did not answer in time");
	else if (p->head && (what & BEV_EVENT_EOF))
		tpeer_refused(p);	/* a body up to its end */
	else if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR))
		tpeer_fail(p, "did not answer");
}

/*
 * Asks member for uri (a GET upgraded to proto) as who, and answers req
 * with what it answers: 101 and the two connections spliced, or its
 * refusal, or 502 if it does not answer.
 */
void
term_peer_relay(const char *member, const char *uri,
    const struct api_who *who, struct evhttp_request *req, const char *proto)
{
	struct timeval	 tv = { PEER_ANSWER_S, 0 };
	struct tpeer	*p;
	char		*host, *cause = NULL;
	u_int		 port;

	if (!cluster_peer_owner_ok(who->owner) || strpbrk(uri, " \r\n") !=
	    NULL) {
		api_error(req, 502, "member %s: cannot call it for '%s'",
		    member, who->owner);
		return;
	}
	p = xcalloc(1, sizeof *p);
	if ((p->bev = cluster_peer_bev(member, &host, &port,
	    &cause)) == NULL) {
		api_error(req, 502, "%s", cause);
		free(cause);
		free(p);
		return;
	}
	p->req = req;
	p->member = xstrdup(member);
	p->proto = xstrdup(proto);
	p->body = evbuffer_new();
	http_resp_init(&p->resp);
	bufferevent_setcb(p->bev, tpeer_read, NULL, tpeer_event, p);
	bufferevent_set_timeouts(p->bev, &tv, &tv);
	evbuffer_add_printf(bufferevent_get_output(p->bev),
	    "GET %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n%sUpgrade: %s\r\n"
	    "Connection: Upgrade\r\n\r\n", uri, host, PEER_OWNER_HEADER,
	    who->owner, who->admin ? PEER_ADMIN_HEADER ": 1\r\n" : "", proto);
	log_debug("%s: %s %s for %s", __func__, member, uri, who->owner);
	if (bufferevent_socket_connect_hostname(p->bev, NULL, AF_UNSPEC, host,
	    (int)port) != 0) {
		free(host);
		tpeer_fail(p, "cannot be connected to");
		return;
	}
	free(host);
	bufferevent_enable(p->bev, EV_READ|EV_WRITE);
}
