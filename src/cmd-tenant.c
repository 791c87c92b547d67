/*
 * cmd-tenant.c: gmux tenant ls/quota/map/rm, on the GPU host: the
 * tenants' accounts and quotas (docs/tenants.md).  Always this machine's
 * daemon, over its Unix socket (the daemon refuses these routes over
 * TCP).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define TENANT_RM_WAIT_MS	(10 * 60 * 1000)

static int	cmd_tenant_exec(int, char **);

const struct cmd_entry cmd_tenant_entry = {
	.name = "tenant",
	.args = "ls [--json] | quota NAME [--share F] [--mem SIZE] "
	    "[--jobs N] [--disk SIZE] | map NAME USER | rm NAME",
	.help = "tenants' accounts, quotas and homes (on the GPU host)",
	.options =
	    "  --json               ls as JSON\n"
	    "  --share F            quota: guaranteed share, in cards (2, "
	    "0.5)\n"
	    "  --mem SIZE           quota: memory of its running jobs\n"
	    "  --jobs N             quota: its jobs running at once\n"
	    "  --disk SIZE          quota: its home's size\n"
	    "\nls shows each tenant: account, UID, home, disk used / limit, "
	    "jobs, last active,\nand whether accounts are made (root and "
	    "TENANT_ACCOUNTS=1).  quota sets limits\n(0 lifts one): a job "
	    "over them waits with the reason, or is refused if it\ncould "
	    "never fit.  map runs NAME's jobs as the existing account USER.  "
	    "rm revokes\nNAME's tokens, stops its jobs (with their grace), "
	    "then archives its home and\nremoves its account.\n",
	.exec = cmd_tenant_exec,
	.here = 1,
};

enum { OPT_JSON = 256, OPT_SHARE, OPT_MEM, OPT_JOBS, OPT_DISK };

static const struct option tenant_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "share", required_argument, NULL, OPT_SHARE },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "jobs", required_argument, NULL, OPT_JOBS },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static json_int_t
tenant_int(json_t *o, const char *a, const char *b)
{
	return (json_integer_value(json_object_get(json_object_get(o, a),
	    b)));
}

/* "1.2G / 50G", "-" if never measured. */
static char *
tenant_disk(json_t *e)
{
	json_int_t	 limit = json_integer_value(json_object_get(e,
			     "disk_limit"));
	char		*used, *lim, *s;

	if (tenant_int(e, "disk", "at") == 0)
		used = xstrdup("-");
	else
		used = format_size((uint64_t)tenant_int(e, "disk", "used"));
	lim = limit != 0 ? format_size((uint64_t)limit) : xstrdup("none");
	xasprintf(&s, "%s / %s", used, lim);
	free(used);
	free(lim);
	return (s);
}

static void
tenant_row(struct table *t, json_t *e)
{
	json_t		*uid = json_object_get(e, "uid");
	json_int_t	 active = json_integer_value(json_object_get(e,
			     "active"));
	char		 u[16], jobs[16], *disk, *age;
	const char	*user = json_string_value(json_object_get(e, "user"));

	if (json_is_integer(uid))
		snprintf(u, sizeof u, "%lld",
		    (long long)json_integer_value(uid));
	else
		snprintf(u, sizeof u, "-");
	snprintf(jobs, sizeof jobs, "%lld", (long long)json_integer_value(
	    json_object_get(e, "jobs")));
	disk = tenant_disk(e);
	age = active != 0 ? format_age(clock_ms() - active) : xstrdup("-");
	table_add(t, json_string_value(json_object_get(e, "name")),
	    user != NULL ? user : json_string_value(json_object_get(e,
	    "account")), json_string_value(json_object_get(e, "state")), u,
	    json_string_value(json_object_get(e, "home")), disk, jobs, age);
	free(disk);
	free(age);
}

/* How the homes' usage is known: the kernel's, or gmux's walk. */
static void
tenant_ls_disk(json_t *o)
{
	const char	*m = json_string_value(json_object_get(o,
			     "disk_method"));

	if (m != NULL && strcmp(m, "quota") == 0)
		printf("disk: the filesystem's project quotas\n");
	else
		printf("disk: measured by a walk every TENANT_DISK_EVERY "
		    "seconds\n");
}

static int
tenant_ls(int json)
{
	static const char *const hdr[] = { "NAME", "ACCOUNT", "STATE", "UID",
	    "HOME", "DISK", "JOBS", "ACTIVE" };
	struct table	*t;
	json_t		*o, *e;
	const char	*why;
	size_t		 i;

	o = cmd_call_here(&cmd_tenant_entry, "GET", "/v1/tenants", NULL);
	if (json) {
		json_print(o, stdout);
		json_decref(o);
		return (0);
	}
	why = json_string_value(json_object_get(o, "why"));
	if (why != NULL)
		printf("accounts: off (%s)\n", why);
	else
		printf("accounts: on\n");
	tenant_ls_disk(o);
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(json_object_get(o, "tenants"), i, e)
		tenant_row(t, e);
	table_print(t, stdout);
	table_free(t);
	json_decref(o);
	return (0);
}

static char *
tenant_path(const char *name, const char *rest)
{
	char	*path;

	if (!token_owner_valid(name))
		cmd_usage_error(&cmd_tenant_entry, "NAME: '%s' is not an "
		    "owner's name", name);
	xasprintf(&path, "/v1/tenants/%s%s", name, rest);
	return (path);
}

/*
 * Has name a record still (its removal waits for its jobs' ends)?  If its
 * removal failed, says why and exits: the daemon tries it again.
 */
static int
tenant_listed(const char *name)
{
	json_t		*o, *e;
	const char	*error;
	size_t		 i;
	int		 found = 0;

	o = cmd_call_here(&cmd_tenant_entry, "GET", "/v1/tenants", NULL);
	json_array_foreach(json_object_get(o, "tenants"), i, e) {
		if (strcmp(json_string_value(json_object_get(e, "name")),
		    name) != 0)
			continue;
		found = 1;
		error = json_string_value(json_object_get(e, "error"));
		if (error != NULL) {
			fprintf(stderr, "gmux tenant: %s; the daemon tries "
			    "its removal again every minute\n", error);
			exit(1);
		}
	}
	json_decref(o);
	return (found);
}

static int
tenant_do(const char *method, const char *name, const char *rest,
    json_t *body, const char *done)
{
	char	*path = tenant_path(name, rest);
	json_t	*o;
	int64_t	 end = clock_mono_ms() + TENANT_RM_WAIT_MS;

	o = cmd_call_here(&cmd_tenant_entry, method, path, body);
	/* rm: its jobs stop with their grace, then it goes. */
	if (json_is_false(json_object_get(o, "removed"))) {
		while (tenant_listed(name)) {
			if (clock_mono_ms() > end) {
				fprintf(stderr, "gmux tenant: %s's jobs have "
				    "not all ended yet; its removal goes on\n",
				    name);
				exit(1);
			}
			usleep(50000);
		}
	}
	printf("%s %s\n", done, name);
	json_decref(o);
	json_decref(body);
	free(path);
	return (0);
}

static int
cmd_tenant_exec(int argc, char **argv)
{
	const char	*sub, *name = NULL;
	json_t		*q;
	char		*end;
	long		 n;
	int		 ch, json = 0;

	if (argc < 2 || argv[1][0] == '-') {
		while (cmd_getopt(&cmd_tenant_entry, argc, argv, "h",
		    tenant_opts) != -1)
			;
		cmd_usage_error(&cmd_tenant_entry, "ls, quota, map or rm?");
	}
	sub = argv[1];
	argc--;
	argv++;
	/* quota NAME --jobs N: the name before the options */
	if (strcmp(sub, "ls") != 0 && argc >= 2 && argv[1][0] != '-') {
		name = argv[1];
		argc--;
		argv++;
	}
	q = json_object();
	while ((ch = cmd_getopt(&cmd_tenant_entry, argc, argv, "h",
	    tenant_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
		else if (ch == OPT_SHARE) {
			if (strtod(optarg, &end) < 0 || end == optarg ||
			    *end != '\0')
				cmd_usage_error(&cmd_tenant_entry, "--share: "
				    "'%s' is not a number of cards", optarg);
			json_object_set_new(q, "share", json_string(optarg));
		} else if (ch == OPT_MEM || ch == OPT_DISK) {
			cmd_arg_size(&cmd_tenant_entry, ch == OPT_MEM ?
			    "--mem" : "--disk", optarg);
			json_object_set_new(q, ch == OPT_MEM ? "mem" : "disk",
			    json_string(optarg));
		}
		else if (ch == OPT_JOBS) {
			n = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || n < 0 ||
			    n > 1000000)
				cmd_usage_error(&cmd_tenant_entry, "--jobs: "
				    "'%s' is not a count", optarg);
			json_object_set_new(q, "jobs", json_integer(n));
		}
	}
	argc -= optind;
	argv += optind;
	if (hosts_fixed())
		cmd_usage_error(&cmd_tenant_entry, "tenants are managed on the "
		    "host itself, not with --remote");
	if (strcmp(sub, "quota") == 0 && name != NULL && argc == 0) {
		if (json_object_size(q) == 0)
			cmd_usage_error(&cmd_tenant_entry, "quota: --share, "
			    "--mem, --jobs or --disk?");
		return (tenant_do("PATCH", name, "", q, "quota set for"));
	}
	if (json_object_size(q) != 0)
		cmd_usage_error(&cmd_tenant_entry, "--share, --mem, --jobs "
		    "and --disk go with quota");
	json_decref(q);
	if (strcmp(sub, "ls") == 0 && argc == 0)
		return (tenant_ls(json));
	if (strcmp(sub, "map") == 0 && name != NULL && argc == 1)
		return (tenant_do("PUT", name, "/user", json_pack("{s:s}",
		    "user", argv[0]), "mapped"));
	if (strcmp(sub, "rm") == 0 && name != NULL && argc == 0)
		return (tenant_do("DELETE", name, "", NULL, "removed"));
	cmd_usage_error(&cmd_tenant_entry, "ls, quota NAME, map NAME USER or "
	    "rm NAME");
}
