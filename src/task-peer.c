/*
 * task-peer.c: a @mesh worker that runs on this member for another
 * member's broker (docs/python.md, "Across a cluster").  Its job is a
 * cluster job that the entry member submitted for its caller
 * ("task_entry" in its record); the worker connects to this member's
 * workers' socket as any worker does, and this member relays its stream,
 * byte for byte, to the entry over the members' TLS: an upgraded
 * GET /v1/tasks/peer-worker with the job's owner in X-Gmux-Peer-Owner and
 * this member's certificate, never a token.  The entry leases that worker
 * only its owner's tasks of its pool.  The side that ends ends the other,
 * once what it said has gone out; an entry that refuses, or cannot be
 * reached, ends the worker's job (its caller starts others).
 */

#include <sys/socket.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gmux.h"
#include "task-int.h"

#define RELAY_HEAD_MAX	8192		/* the entry's 101 and its headers */
#define RELAY_HIGH	(4 * 1024 * 1024) /* a side waits past this queued */

struct relay {
	struct bufferevent	*local;		/* the worker's */
	struct bufferevent	*peer;		/* the entry's */
	char			*entry;
	u_int			 job;		/* the worker's, here */
	int			 up;		/* the entry's 101 came */
	int			 closing;	/* the last bytes go out */
};

static void
relay_free(struct relay *r)
{
	log_debug("%s: j%u for %s", __func__, r->job, r->entry);
	bufferevent_free(r->local);
	bufferevent_free(r->peer);
	free(r->entry);
	free(r);
}

/* The entry will not take the worker: its job ends, for why. */
static void
relay_refused(struct relay *r, const char *why)
{
	struct job	*j = job_find_id(r->job);

	log_warnx("tasks: worker j%u: member %s: %s", r->job, r->entry, why);
	if (j != NULL && !job_ended(j) && !j->stopping)
		job_stop(j, j->req.grace_ms, "its entry member cannot be "
		    "reached");
	relay_free(r);
}

static void
relay_drained(struct bufferevent *bev, void *arg)
{
	relay_free(arg);
}

static void
relay_drain_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR))
		relay_free(arg);	/* what was left cannot go out */
}

/*
 * One side ended: the relay goes once what that side said has reached
 * the other (the worker's last result, the entry's last lease).
 */
static void
relay_close(struct relay *r, struct bufferevent *to)
{
	if (r->closing)
		return;
	r->closing = 1;
	bufferevent_disable(r->local, EV_READ);
	bufferevent_disable(r->peer, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(to)) == 0) {
		relay_free(r);
		return;
	}
	bufferevent_setwatermark(to, EV_WRITE, 0, 0);
	bufferevent_setcb(r->local, NULL, NULL, NULL, r);
	bufferevent_setcb(r->peer, NULL, NULL, NULL, r);
	bufferevent_setcb(to, NULL, relay_drained, relay_drain_event, r);
}

/*
 * Moves what from said to to; past RELAY_HIGH queued there, from is not
 * read until to has sent half of it (a big value streamed through here:
 * docs/tasks.md, "Big values over TCP").
 */
static void
relay_move(struct bufferevent *from, struct bufferevent *to)
{
	struct evbuffer	*out = bufferevent_get_output(to);

	evbuffer_add_buffer(out, bufferevent_get_input(from));
	if (evbuffer_get_length(out) > RELAY_HIGH) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, RELAY_HIGH / 2, 0);
	}
}

/* to has sent enough: the side that writes to it is read again. */
static void
relay_written(struct bufferevent *to, void *arg)
{
	struct relay	*r = arg;

	if (r->closing)
		return;
	bufferevent_setwatermark(to, EV_WRITE, 0, 0);
	bufferevent_enable(to == r->peer ? r->local : r->peer, EV_READ);
}

static void
relay_local_read(struct bufferevent *bev, void *arg)
{
	struct relay	*r = arg;

	if (r->up)	/* before, the worker's hello waits here */
		relay_move(bev, r->peer);
}

/* The entry's answer: 101, then frames. -1 if it refused. */
static int
relay_head(struct relay *r, struct evbuffer *in)
{
	struct evbuffer_ptr	 p;
	char			 line[128], *nl;
	ev_ssize_t		 n;

	p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (p.pos == -1) {
		if (evbuffer_get_length(in) <= RELAY_HEAD_MAX)
			return (0);
		relay_refused(r, "its answer is no HTTP");
		return (-1);
	}
	if ((n = evbuffer_copyout(in, line, sizeof line - 1)) < 0)
		n = 0;
	line[n] = '\0';
	if ((nl = strpbrk(line, "\r\n")) != NULL)
		*nl = '\0';
	if (strncmp(line, "HTTP/1.1 101 ", 13) != 0) {
		relay_refused(r, line);
		return (-1);
	}
	evbuffer_drain(in, (size_t)p.pos + 4);
	r->up = 1;
	relay_local_read(r->local, r);
	return (0);
}

static void
relay_peer_read(struct bufferevent *bev, void *arg)
{
	struct relay	*r = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);

	if (!r->up && (relay_head(r, in) != 0 || !r->up))
		return;
	relay_move(bev, r->local);
}

static void
relay_local_event(struct bufferevent *bev, short what, void *arg)
{
	struct relay	*r = arg;

	if (what & (BEV_EVENT_EOF|BEV_EVENT_ERROR))
		relay_close(r, r->peer);
}

static void
relay_peer_event(struct bufferevent *bev, short what, void *arg)
{
	struct relay	*r = arg;
	char		*why;

	if (!(what & (BEV_EVENT_EOF|BEV_EVENT_ERROR)))
		return;
	if (r->up) {
		relay_close(r, r->local);
		return;
	}
	if ((why = tls_peer_pin_error(bev)) == NULL)
		xasprintf(&why, "it did not answer");
	relay_refused(r, why);
	free(why);
}

/* The entry's call: the worker's stream to its broker, for its owner. */
static int
relay_open(struct relay *r, struct job *j, const char *cid, char **cause)
{
	char	*host, card[32] = "", mem[48] = "";
	u_int	 port;

	if (!cluster_peer_owner_ok(j->owner) || !task_pool_valid(cid)) {
		xasprintf(cause, "owner '%s' or job '%s' cannot be said",
		    j->owner, cid);
		return (-1);
	}
	if (j->card >= 0)
		snprintf(card, sizeof card, "&card=%d", j->card);
	if (j->mem != 0 && (j->mem >> 20) <= INT32_MAX)
		snprintf(mem, sizeof mem, "&mem_mb=%llu",
		    (unsigned long long)(j->mem >> 20));
	if ((r->peer = cluster_peer_bev(r->entry, &host, &port,
	    cause)) == NULL)
		return (-1);
	bufferevent_setcb(r->peer, relay_peer_read, relay_written,
	    relay_peer_event, r);
	/* what it is here (its share, card and cap), for the listing */
	evbuffer_add_printf(bufferevent_get_output(r->peer),
	    "GET /v1/tasks/peer-worker?job=%s&seats=%u%s%s HTTP/1.1\r\n"
	    "Host: %s\r\n%s: %s\r\nUpgrade: gmux-tasks/1\r\n"
	    "Connection: Upgrade\r\n\r\n", cid, j->seats, card, mem, host,
	    PEER_OWNER_HEADER, j->owner);
	if (bufferevent_socket_connect_hostname(r->peer, NULL, AF_UNSPEC,
	    host, (int)port) != 0) {
		xasprintf(cause, "cannot connect to %s:%u", host, port);
		free(host);
		return (-1);
	}
	free(host);
	bufferevent_enable(r->peer, EV_READ|EV_WRITE);
	return (0);
}

/*
 * Relays the worker that connected on fd, of job j (cluster job cid),
 * to its broker on member entry.
 */
void
task_peer_relay(int fd, struct job *j, const char *entry, const char *cid)
{
	struct relay	*r;
	char		*cause = NULL;

	r = xcalloc(1, sizeof *r);
	r->entry = xstrdup(entry);
	r->job = j->id;
	r->local = bufferevent_socket_new(server_base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(r->local, relay_local_read, relay_written,
	    relay_local_event, r);
	bufferevent_enable(r->local, EV_READ|EV_WRITE);
	if (relay_open(r, j, cid, &cause) != 0) {
		if (r->peer == NULL)	/* relay_free frees both */
			r->peer = bufferevent_socket_new(server_base, -1,
			    BEV_OPT_CLOSE_ON_FREE);
		relay_refused(r, cause);
		free(cause);
		return;
	}
	log_debug("%s: %s (%s) to %s for %s", __func__, j->name, cid, entry,
	    j->owner);
}
