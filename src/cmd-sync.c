/*
 * cmd-sync.c: gmux sync, a directory sent to a remote host as gmux run
 * sends its working directory (content-addressed, docs/remote.md "Sync"),
 * and the digest of its manifest printed: a job started there with
 * "manifest": DIGEST runs in that tree.  The Python package runs it before
 * it starts workers on a host, so the caller's own modules import there.
 */

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_sync_exec(int, char **);

const struct cmd_entry cmd_sync_entry = {
	.name = "sync",
	.args = "[--json] NAME [DIR]",
	.help = "send a directory to remote host NAME as run does; print its "
	    "manifest",
	.options =
	    "  --json               {\"remote\": NAME, \"dir\": DIR, "
	    "\"manifest\": DIGEST}\n"
	    "\n"
	    "What .gmuxignore and the defaults skip stays here.  An unchanged "
	    "tree costs\none request; a job started on NAME with \"manifest\": "
	    "DIGEST runs in it.\n",
	.exec = cmd_sync_exec,
};

enum { OPT_JSON = 256 };

static const struct option sync_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* NAME's entry of the remotes file, or exits saying why. */
static const struct remote *
sync_remote(struct remotes *rs, const char *name)
{
	const struct remote	*rm;
	char			*path, *cause = NULL;

	path = remotes_path();
	if (remotes_load(rs, path, &cause) != 0) {
		fprintf(stderr, "gmux sync: %s\n", cause);
		exit(1);
	}
	free(path);
	if ((rm = remotes_find(rs, name)) == NULL)
		cmd_usage_error(&cmd_sync_entry, "NAME: no remote '%s' (see "
		    "gmux remote ls)", name);
	return (rm);
}

static int
cmd_sync_exec(int argc, char **argv)
{
	struct remotes		 rs;
	const struct remote	*rm;
	char			 dir[PATH_MAX], mdigest[DIGEST_HEX];
	json_t			*o;
	int			 ch, json = 0;

	while ((ch = cmd_getopt(&cmd_sync_entry, argc, argv, "h",
	    sync_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind == argc)
		cmd_usage_error(&cmd_sync_entry, "NAME: name a remote host");
	if (argc - optind > 2)
		cmd_usage_error(&cmd_sync_entry, "unexpected argument '%s'",
		    argv[optind + 2]);
	if (realpath(argc - optind == 2 ? argv[optind + 1] : ".", dir) ==
	    NULL)
		cmd_usage_error(&cmd_sync_entry, "DIR: %s: not a directory",
		    argc - optind == 2 ? argv[optind + 1] : ".");
	memset(&rs, 0, sizeof rs);
	rm = sync_remote(&rs, argv[optind]);
	if (run_remote_sync(rm, dir, 1, "gmux sync", mdigest) != 0) {
		remotes_clear(&rs);
		return (1);
	}
	if (json) {
		o = json_pack("{s:s,s:s,s:s}", "remote", rm->name, "dir", dir,
		    "manifest", mdigest);
		json_print(o, stdout);
		json_decref(o);
	} else
		printf("%s\n", mdigest);
	remotes_clear(&rs);
	return (0);
}
