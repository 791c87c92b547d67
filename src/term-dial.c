/*
 * term-dial.c: a published port's connection made without the daemon's
 * loop waiting for it (docs/terminals.md, "Published ports").  On the
 * host's loopback the connect is started non-blocking and its end comes
 * as an event; a remote container's port is connected by a child of the
 * daemon's inside the container's network (term-netns.c), whose answer,
 * the socket, comes as an event too and is then waited for as the host's.
 * A port that accepts nothing (a full backlog drops the SYN) or a child
 * that hangs costs its own request its time, and no other request any.
 *
 * The request stays the daemon's until it is answered: if its client goes
 * meanwhile, libevent leaves it without a connection, and answering it
 * then frees it.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"
#include "term-int.h"

#define DIAL_ANSWER_MS	5000	/* for the child's socket */
#define DIAL_CONNECT_MS	5000	/* for the connect to end */

struct dial {
	struct evhttp_request	*req;
	char			*what;	/* "j3's port 8888", for errors */
	struct event		*ev;
	int			 sock;	/* the child's answer, or -1 */
	int			 fd;	/* the port's socket, or -1 */
};

static void
dial_free(struct dial *d)
{
	if (d->ev != NULL)
		event_free(d->ev);
	if (d->sock != -1)
		close(d->sock);
	if (d->fd != -1)
		close(d->fd);
	free(d->what);
	free(d);
}

/* Answers: 502 with why, or (why NULL) 101 and the port's splice. */
static void
dial_end(struct dial *d, const char *why)
{
	struct evhttp_connection	*evcon;

	evcon = evhttp_request_get_connection(d->req);
	if (why == NULL && evcon != NULL) {
		log_debug("%s: %s: connected", __func__, d->what);
		term_port_start(evhttp_connection_get_bufferevent(evcon), evcon,
		    d->fd);
		d->fd = -1;
	} else
		api_error(d->req, 502, "%s: %s", d->what, why != NULL ? why :
		    "its client has gone");
	dial_free(d);
}

/* Waits on the loop for ms, at most, for fd to be ready for what. */
static void
dial_wait(struct dial *d, int fd, short what, event_callback_fn cb, int ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	if (d->ev != NULL)
		event_free(d->ev);
	d->ev = event_new(server_base, fd, what, cb, d);
	if (d->ev == NULL || event_add(d->ev, &tv) != 0)
		fatalx("%s: event_new", __func__);
}

/* The connect has ended (fd is writable) or has taken too long. */
static void
dial_connected(evutil_socket_t fd, short events, void *arg)
{
	struct dial	*d = arg;
	socklen_t	 len = sizeof (int);
	int		 e = ETIMEDOUT;

	if ((events & EV_WRITE) &&
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
		e = errno;
	dial_end(d, e == 0 ? NULL : strerror(e));
}

/* The child has answered (or not in time): its socket, or why not. */
static void
dial_answered(evutil_socket_t sock, short events, void *arg)
{
	struct dial	*d = arg;
	char		*cause = NULL;

	if (!(events & EV_READ)) {
		dial_end(d, "no answer from its container's network");
		return;
	}
	d->fd = term_netns_answer(d->sock, &cause);
	close(d->sock);
	d->sock = -1;
	if (d->fd == -1) {
		dial_end(d, cause);
		free(cause);
		return;
	}
	dial_wait(d, d->fd, EV_WRITE, dial_connected, DIAL_CONNECT_MS);
}

/*
 * Connects req (an upgraded request for a port: what names it in errors)
 * to 127.0.0.1:port, on the host's loopback, or, if netns, inside the
 * network of the container of the job whose keeper is keeper, and answers
 * it when that has ended: 101 and the splice, or 502 and why.
 */
void
term_dial(struct evhttp_request *req, const char *what, int netns,
    pid_t keeper, u_int port)
{
	struct dial	*d;
	char		*cause = NULL;

	d = xcalloc(1, sizeof *d);
	d->req = req;
	d->what = xstrdup(what);
	d->sock = d->fd = -1;
	if (!netns) {
		if ((d->fd = term_port_open(port, &cause)) != -1)
			dial_wait(d, d->fd, EV_WRITE, dial_connected,
			    DIAL_CONNECT_MS);
	} else if ((d->sock = term_netns_start(keeper, port, &cause)) != -1)
		dial_wait(d, d->sock, EV_READ, dial_answered, DIAL_ANSWER_MS);
	if (cause != NULL) {
		dial_end(d, cause);
		free(cause);
	}
}
