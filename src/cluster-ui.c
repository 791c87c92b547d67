/*
 * cluster-ui.c: the dashboard's cluster section (docs/ui.md).  The
 * dashboard asks for the cluster in its loop and cannot wait on etcd, so
 * the members are read every CLUSTER_UI_MS while someone looks (the
 * dashboard asked in the last CLUSTER_UI_IDLE_MS), and the last answer is
 * what it shows.  Nobody looking costs etcd nothing.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cluster-int.h"

#define CLUSTER_UI_MS		2000
#define CLUSTER_UI_IDLE_MS	10000

static struct event	*cluster_ui_ev;
static json_t		*cluster_ui_members;	/* the last answer, or NULL */
static int		 cluster_ui_busy;
static int64_t		 cluster_ui_asked;	/* mono ms; 0: never */

/* A member as the page lists it: name, address, cards, state. */
static json_t *
cluster_ui_member(json_t *m)
{
	json_t	*cards = json_object_get(m, "cards");

	return (json_pack("{s:O,s:O?,s:I,s:s}", "name",
	    json_object_get(m, "name"), "addr", json_object_get(m, "addr"),
	    "cards", (json_int_t)json_array_size(cards), "state", "up"));
}

static void
cluster_ui_members_cb(struct etcd_reply *r, const char *err, void *arg)
{
	json_t	*all, *m;
	size_t	 i;

	cluster_ui_busy = 0;
	if (err != NULL || cluster == NULL)
		return;		/* the last answer stays until one comes */
	all = cluster_members_json(r);
	json_decref(cluster_ui_members);
	cluster_ui_members = json_array();
	json_array_foreach(all, i, m)
		json_array_append_new(cluster_ui_members, cluster_ui_member(m));
	json_decref(all);
}

static void
cluster_ui_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	if (cluster == NULL || cluster_ui_busy || cluster_ui_asked == 0 ||
	    clock_mono_ms() - cluster_ui_asked > CLUSTER_UI_IDLE_MS)
		return;
	cluster_ui_busy = 1;
	etcd_range(cluster->etcd, cluster_key("m/"), 1, cluster_ui_members_cb,
	    NULL);
}

/* ui_cluster_json: {"id", "leader", "members"}, or NULL when alone. */
static json_t *
cluster_ui_json(void)
{
	if (cluster == NULL)
		return (NULL);
	if (cluster_ui_asked == 0) {
		cluster_ui_asked = clock_mono_ms();
		cluster_ui_timer_cb(-1, 0, NULL);
	}
	cluster_ui_asked = clock_mono_ms();
	return (json_pack("{s:s,s:O?,s:o}", "id", cluster->id, "leader",
	    json_object_get(cluster->leader, "name"), "members",
	    cluster_ui_members != NULL ? json_incref(cluster_ui_members) :
	    json_array()));
}

/* Feeds the dashboard's cluster section. */
void
cluster_ui_start(void)
{
	struct timeval	 tv = { CLUSTER_UI_MS / 1000, 0 };

	if (cluster_ui_ev != NULL)
		return;
	ui_cluster_json = cluster_ui_json;
	cluster_ui_ev = event_new(cluster->base, -1, EV_PERSIST,
	    cluster_ui_timer_cb, NULL);
	event_add(cluster_ui_ev, &tv);
}

void
cluster_ui_stop(void)
{
	if (cluster_ui_ev != NULL)
		event_free(cluster_ui_ev);
	cluster_ui_ev = NULL;
	ui_cluster_json = NULL;
	json_decref(cluster_ui_members);
	cluster_ui_members = NULL;
	cluster_ui_asked = 0;
	cluster_ui_busy = 0;
}
