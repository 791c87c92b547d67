/*
 * cmd-token.c: gmux token add/ls/revoke, on the GPU host: the bearer
 * tokens remote clients present.  Always this machine's daemon, over its
 * Unix socket (the daemon refuses these routes over TCP).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_token_exec(int, char **);

const struct cmd_entry cmd_token_entry = {
	.name = "token",
	.args = "add OWNER | ls [--json] | revoke ID [CLUSTER] | grant ID "
	    "CLUSTER",
	.help = "the tokens remote clients use (on the GPU host)",
	.options =
	    "  --json               ls as a JSON array\n"
	    "\nadd makes an invite for OWNER (whose name the jobs and the "
	    "books record) and\nshows it once, in the line to paste on each "
	    "client: for 24h, each machine\nthat pastes it trades it for a "
	    "token of its own.  Only hashes are kept.\nrevoke ID stops a "
	    "token or an invite at once (ls shows the ids).\ngrant ID CLUSTER "
	    "lets the token see and submit to cluster CLUSTER; revoke ID\n"
	    "CLUSTER takes that back (a token made on a member is granted "
	    "its cluster).\n",
	.exec = cmd_token_exec,
	.here = 1,
};

enum { OPT_JSON = 256 };

static const struct option token_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
token_add(const char *owner)
{
	json_t		*body, *o;
	const char	*invite, *secret;

	body = json_pack("{s:s}", "owner", owner);
	o = cmd_call_here(&cmd_token_entry, "POST", "/v1/tokens", body);
	json_decref(body);
	invite = json_string_value(json_object_get(o, "invite"));
	secret = json_string_value(json_object_get(o, "token"));
	fprintf(stderr, "invite %s for %s (shown this once; good for 24h, on "
	    "as many machines as paste it):\n",
	    json_string_value(json_object_get(o, "id")), owner);
	if (invite != NULL)
		printf("%s\n", invite);
	else {
		printf("%s\n", secret ? secret : "?");
		fprintf(stderr, "(this daemon serves no TCP address: start it "
		    "with gmux serve --addr to be reached)\n");
	}
	json_decref(o);
	return (0);
}

/* revoked, valid, or for an invite: invite, or expired. */
static const char *
token_state(json_t *e)
{
	json_int_t	 expires;

	if (json_is_true(json_object_get(e, "revoked")))
		return ("revoked");
	if (!json_is_true(json_object_get(e, "invite")))
		return ("valid");
	expires = json_integer_value(json_object_get(e, "expires"));
	return (expires > clock_ms() ? "invite" : "expired invite");
}

/* A token's clusters, comma-separated, "-" for none (the caller frees). */
static char *
token_clusters(json_t *a)
{
	json_t	*v;
	size_t	 i;
	char	*s = NULL, *n;

	json_array_foreach(a, i, v) {
		xasprintf(&n, "%s%s%s", s != NULL ? s : "", s != NULL ? "," :
		    "", json_string_value(v));
		free(s);
		s = n;
	}
	return (s != NULL ? s : xstrdup("-"));
}

/* grant ID CLUSTER, or revoke ID CLUSTER (on 0). */
static int
token_grant(const char *id, const char *cid, int on)
{
	json_t	*body, *o;
	char	*path;

	if (strchr(id, '/') != NULL || strchr(id, '?') != NULL)
		cmd_usage_error(&cmd_token_entry, "ID: '%s' is not a token id",
		    id);
	if (!token_cluster_valid(cid))
		cmd_usage_error(&cmd_token_entry, "CLUSTER: '%s' is not a "
		    "cluster id (letters, digits, '_' and '-')", cid);
	xasprintf(&path, "/v1/tokens/%s/%s", id, on ? "grant" : "revoke");
	body = json_pack("{s:s}", "cluster", cid);
	o = cmd_call_here(&cmd_token_entry, "POST", path, body);
	printf("%s %s %s\n", id, on ? "granted" : "no longer granted", cid);
	json_decref(o);
	json_decref(body);
	free(path);
	return (0);
}

static int
token_ls(int json)
{
	static const char *const hdr[] = { "ID", "OWNER", "CREATED",
	    "STATE", "CLUSTERS" };
	struct table	*t;
	json_t		*a, *e;
	char		*age, *cl;
	size_t		 i;

	a = cmd_call_here(&cmd_token_entry, "GET", "/v1/tokens", NULL);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, e) {
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(e, "created")));
		cl = token_clusters(json_object_get(e, "clusters"));
		table_add(t, json_string_value(json_object_get(e, "id")),
		    json_string_value(json_object_get(e, "owner")), age,
		    token_state(e), cl);
		free(cl);
		free(age);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(a);
	return (0);
}

static int
cmd_token_exec(int argc, char **argv)
{
	const char	*sub;
	char		*path;
	json_t		*o;
	int		 ch, json = 0;

	if (argc < 2 || argv[1][0] == '-') {
		while ((ch = cmd_getopt(&cmd_token_entry, argc, argv, "h",
		    token_opts)) != -1)
			;
		cmd_usage_error(&cmd_token_entry, "add, ls, revoke or grant?");
	}
	sub = argv[1];
	argc--;
	argv++;
	while ((ch = cmd_getopt(&cmd_token_entry, argc, argv, "h",
	    token_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	argc -= optind;
	argv += optind;
	if (hosts_fixed())
		cmd_usage_error(&cmd_token_entry, "tokens are managed on the "
		    "host itself, not with --remote");
	if (strcmp(sub, "add") == 0 && argc == 1)
		return (token_add(argv[0]));
	if (strcmp(sub, "ls") == 0 && argc == 0)
		return (token_ls(json));
	if (strcmp(sub, "grant") == 0 && argc == 2)
		return (token_grant(argv[0], argv[1], 1));
	if (strcmp(sub, "revoke") == 0 && argc == 2)
		return (token_grant(argv[0], argv[1], 0));
	if (strcmp(sub, "revoke") == 0 && argc == 1) {
		xasprintf(&path, "/v1/tokens/%s/revoke", argv[0]);
		o = cmd_call_here(&cmd_token_entry, "POST", path, NULL);
		printf("revoked %s\n", argv[0]);
		json_decref(o);
		free(path);
		return (0);
	}
	cmd_usage_error(&cmd_token_entry, "add OWNER, ls, revoke ID [CLUSTER] "
	    "or grant ID CLUSTER");
}
