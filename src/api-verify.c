/*
 * api-verify.c: GET /v1/usage/verify, the books' chain checked on the
 * host that keeps them.  Checking every interval may take seconds, and
 * the loop must not stop for it (DESIGN.md decision 1), so a helper
 * thread does it on a connection of its own to the database (SQLite's
 * WAL lets it read one snapshot while the loop writes) and says it is
 * done through an eventfd the loop watches.  One check runs at a time;
 * a client that leaves meanwhile is not answered.
 */

#include <sys/eventfd.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"

static struct verify {
	struct evhttp_request	*req;	/* NULL once its client has gone */
	pthread_t		 thread;
	int			 efd;
	struct event		*ev;
	char			*db;	/* the thread's copy of the path */
	int64_t			 n;
	int			 rc;
	char			*cause;
} *verify_running;

/* The thread: the chain from its own connection; touches v only. */
static void *
verify_main(void *arg)
{
	struct verify	*v = arg;
	struct ledger	*l;
	uint64_t	 one = 1;

	if ((l = ledger_open(v->db, &v->cause)) == NULL)
		v->rc = -1;
	else {
		v->rc = ledger_verify(l, &v->n, &v->cause);
		ledger_close(l);
	}
	if (write(v->efd, &one, sizeof one) == -1)
		fatal("eventfd");
	return (NULL);
}

static void
verify_closed(struct evhttp_connection *evcon, void *arg)
{
	struct verify	*v = arg;

	log_debug("%s: client gone", __func__);
	v->req = NULL;
}

/* In the loop: the thread is done; its client (if still there) hears. */
static void
verify_done(evutil_socket_t fd, short events, void *arg)
{
	struct verify	*v = arg;
	json_t		*o;

	pthread_join(v->thread, NULL);
	if (v->req != NULL) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    v->req), NULL, NULL);
		if (v->rc == 0)
			o = json_pack("{s:b, s:I}", "intact", 1, "intervals",
			    (json_int_t)v->n);
		else
			o = json_pack("{s:b, s:I, s:s}", "intact", 0,
			    "intervals", (json_int_t)v->n, "problem",
			    v->cause != NULL ? v->cause : "unknown");
		api_reply(v->req, 200, o);
		json_decref(o);
	}
	log_debug("%s: %s, %lld intervals", __func__, v->rc == 0 ? "intact" :
	    "broken", (long long)v->n);
	event_free(v->ev);
	close(v->efd);
	free(v->db);
	free(v->cause);
	free(v);
	verify_running = NULL;
}

/* GET /v1/usage/verify: 200 {"intact", "intervals"[, "problem"]}. */
void
api_usage_verify(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct verify	*v;
	int		 e;

	if (verify_running != NULL) {
		api_error(req, 409, "the books are being checked already; "
		    "ask again when that is done");
		return;
	}
	v = xcalloc(1, sizeof *v);
	v->req = req;
	v->db = xstrdup(path_db());
	if ((v->efd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC)) == -1)
		fatal("eventfd");
	v->ev = event_new(server_base, v->efd, EV_READ, verify_done, v);
	if (v->ev == NULL || event_add(v->ev, NULL) != 0)
		fatalx("%s: event_new", __func__);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    verify_closed, v);
	if ((e = thread_start(&v->thread, verify_main, v)) != 0) {
		errno = e;
		fatal("pthread_create");
	}
	verify_running = v;
}
