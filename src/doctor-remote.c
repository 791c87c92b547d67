/*
 * doctor-remote.c: this client's remotes, all asked at once: does each
 * answer, with the key its pin names, take the token, and run which
 * version.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "doctor-int.h"

#define DOCTOR_REMOTE_MS	3000

static void
doctor_remote_one(struct doctor *d, const struct remote *rm,
    const struct client_reply *r)
{
	const char	*v;
	char		*hp, *fix;

	hp = target_hostport(&rm->target);
	xasprintf(&fix, "check the line gmux serve --addr or gmux token add "
	    "printed on %s, then gmux remote rm %s; gmux remote add %s", hp,
	    rm->name, rm->name);
	if (r->error != NULL && strstr(r->error, "impostor") != NULL)
		doctor_add(d, rm->name, DOCTOR_FAIL, fix, "%s: pin: %s", hp,
		    r->error);
	else if (r->status == 401 || r->status == 403 || r->status == 429)
		doctor_add(d, rm->name, DOCTOR_FAIL, fix, "%s: token refused "
		    "(%ld): %s", hp, r->status, r->error ? r->error : "");
	else if (r->status != 200)
		doctor_add(d, rm->name, DOCTOR_FAIL, "start gmux serve --addr "
		    "there, or open its port", "%s: unreachable: %s", hp,
		    r->error != NULL ? r->error : "no answer");
	else {
		v = json_string_value(json_object_get(r->body, "version"));
		if (v != NULL && strcmp(v, GMUX_VERSION) == 0)
			doctor_add(d, rm->name, DOCTOR_OK, NULL, "%s: pin and "
			    "token good, gmux %s", hp, v);
		else
			doctor_add(d, rm->name, DOCTOR_WARN, "install the same "
			    "gmux on both", "%s: pin and token good, gmux %s "
			    "there, %s here", hp, v != NULL ? v : "?",
			    GMUX_VERSION);
	}
	free(fix);
	free(hp);
}

void
doctor_remotes(struct doctor *d)
{
	struct remotes	 rs;
	struct client_req *q;
	char		*path, *cause = NULL;
	u_int		 i;

	path = remotes_path();
	if (remotes_load(&rs, path, &cause) != 0) {
		doctor_add(d, "remotes", DOCTOR_FAIL, "correct or remove it",
		    "%s", cause);
		free(cause);
		free(path);
		return;
	}
	free(path);
	q = xcalloc(rs.n + 1, sizeof *q);
	for (i = 0; i < rs.n; i++)
		client_req_init(&q[i], &rs.v[i].target, "GET", "/v1/version");
	if (rs.n > 0)
		client_multi(q, rs.n, DOCTOR_REMOTE_MS);
	for (i = 0; i < rs.n; i++) {
		doctor_remote_one(d, &rs.v[i], &q[i].reply);
		client_reply_clear(&q[i].reply);
	}
	free(q);
	remotes_clear(&rs);
}
