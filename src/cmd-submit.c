/*
 * cmd-submit.c: gmux submit, a job file (#GMUX and #SBATCH directives) as
 * a job or an array; with --payloads, one element per JSON payload, fed on
 * its stdin, whose last line of output is its result (gpumesh's submit).
 */

#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"

#define SUBMIT_MAX_FILE		(1024 * 1024)
#define SUBMIT_MAX_PAYLOADS	(256 * 1024 * 1024)

static int	cmd_submit_exec(int, char **);

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.args = "[--payloads FILE] [--wait] [DIRECTIVES...] SCRIPT [ARGS...]",
	.help = "submit a job file (#GMUX and #SBATCH directives)",
	.options =
	    "  --payloads FILE      a JSON array: one element per payload, "
	    "fed on its stdin;\n"
	    "                       its last line of output is its result\n"
	    "  --wait               wait for every element, show progress, "
	    "then each one's\n"
	    "                       state, host and result\n"
	    "  DIRECTIVES           any request flag of gmux run (--gpus, "
	    "--array, --time,\n"
	    "                       ...); they win over the file's\n"
	    "\nThe script's first comment lines may hold directives: #GMUX "
	    "takes the flags\nof gmux run, #SBATCH the common Slurm ones "
	    "(--job-name, --gres=gpu[:TYPE]:N,\n--gpus, --mem, "
	    "--cpus-per-task, --nodes, --array, --time, --output, --error,\n"
	    "--chdir, --partition).  They are read up to the first command; "
	    "each bad one\nis an error naming its line.  The script is "
	    "copied when it is submitted (to a\nremote host it goes with "
	    "this directory, as gmux run sends it; --wait is\nfor this "
	    "machine's daemon and a cluster).  To a cluster's member the "
	    "job or the\narray is the cluster's (--server NAME pins a "
	    "member): from a remote in the tree\nsent, on a member in this "
	    "directory and the file where it is (shared storage).\nPrints "
	    "the job's id; an array's elements are ID_N.  Exit code 2 for a "
	    "bad\nfile, 1 if a waited element failed.\n",
	.exec = cmd_submit_exec,
};

enum { OPT_PAYLOADS = 256, OPT_WAIT };

static const struct option submit_own_opts[] = {
	{ "payloads", required_argument, NULL, OPT_PAYLOADS },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "help", no_argument, NULL, 'h' },
};

static const struct option *
submit_opts(void)
{
	static struct option	 all[64];

	return (runopt_options(all, nitems(all), submit_own_opts,
	    nitems(submit_own_opts)));
}

/* Prints f's errors, each naming the file and its line. */
static void
submit_bad_file(const char *path, struct jobfile *f)
{
	u_int	 i;

	for (i = 0; f->errors[i] != NULL; i++)
		fprintf(stderr, "gmux submit: %s: %s\n", path, f->errors[i]);
}

/*
 * The script's copy, made once by its digest under $GMUX_HOME/scripts, so
 * an edit after submitting changes no job.  Allocated.
 */
static char *
submit_copy(const char *text, size_t len)
{
	char	 hex[65], *dir, *path, *cause = NULL;

	digest_buf(text, len, hex);
	xasprintf(&dir, "%s/scripts", path_home());
	if (mkdir_p(dir, 0700) != 0) {
		fprintf(stderr, "gmux submit: %s: %s\n", dir, strerror(errno));
		exit(EXIT_FAILURE_GMUX);
	}
	xasprintf(&path, "%s/%s", dir, hex);
	free(dir);
	if (access(path, R_OK|X_OK) != 0 &&
	    write_file_atomic(path, text, len, 0700, &cause) != 0) {
		fprintf(stderr, "gmux submit: %s\n", cause);
		exit(EXIT_FAILURE_GMUX);
	}
	return (path);
}

static json_t *
submit_payloads(const char *path)
{
	json_error_t	 err;
	json_t		*v;

	if ((v = json_load_file(path, JSON_DECODE_ANY, &err)) == NULL)
		cmd_usage_error(&cmd_submit_entry, "--payloads: %s: line %d: "
		    "%s", path, err.line, err.text);
	if (!json_is_array(v) || json_array_size(v) == 0)
		cmd_usage_error(&cmd_submit_entry, "--payloads: %s: must be "
		    "a JSON array of one or more payloads", path);
	return (v);
}

/*
 * submit's own flags after SCRIPT, as gpumesh writes them ("submit x.py
 * --payloads p.json --wait"), are taken out of the script's arguments;
 * "--" ends them.  Returns the arguments left.
 */
static int
submit_own_late(int argc, char **argv, const char **payloads, int *wait)
{
	int	 i = optind + 1, n = optind + 1;

	for (; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0)
			*wait = 1;
		else if (strcmp(argv[i], "--payloads") == 0 && i + 1 < argc)
			*payloads = argv[++i];
		else if (strncmp(argv[i], "--payloads=", 11) == 0)
			*payloads = argv[i] + 11;
		else
			break;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	while (i < argc)
		argv[n++] = argv[i++];
	return (n);
}

/*
 * The job file as its job runs it, as its #! line says: for a remote host,
 * in the synced tree (under the job's directory, which is the tree; sent
 * at submission, so this is the copy too); for the cluster of this host,
 * where it is, on the storage the members share (a member's jobs run in
 * their directory there).  Allocated.
 */
static char **
submit_file_argv(const char *path, const char *text, json_t *o, int tree)
{
	const char	*cwd = json_string_value(json_object_get(o, "cwd"));
	char		**v = NULL, *file, *line, *p, *q, *rel;
	size_t		  n;

	if ((file = realpath(path, NULL)) == NULL)
		cmd_usage_error(&cmd_submit_entry, "%s: %s", path,
		    strerror(errno));
	n = cwd != NULL ? strlen(cwd) : 0;
	if (tree && (cwd == NULL || strncmp(file, cwd, n) != 0 ||
	    file[n] != '/'))
		cmd_usage_error(&cmd_submit_entry, "%s: for a remote host the "
		    "job file must be under the directory that is sent (%s)",
		    path, cwd != NULL ? cwd : "?");
	/* As the kernel reads #!: the interpreter, and the rest as one. */
	line = xstrndup(text, strcspn(text, "\n"));
	p = strncmp(line, "#!", 2) == 0 ? line + 2 + strspn(line + 2, " \t") :
	    line + strlen(line);
	q = p + strcspn(p, " \t");
	if (*q != '\0')
		*q++ = '\0';
	strv_add(&v, *p != '\0' ? p : "/bin/sh");
	if (*p != '\0' && *(q = strtrim(q)) != '\0')
		strv_add(&v, q);
	free(line);
	if (tree) {
		xasprintf(&rel, "./%s", file + n + 1);
		strv_add(&v, rel);
		free(rel);
	} else
		strv_add(&v, file);
	free(file);
	return (v);
}

/*
 * Is the daemon asked (this host's, or the remote's) a cluster's member
 * (the job, or the array, is then the cluster's)?  --payloads stay the
 * host's.
 */
static int
submit_to_cluster(json_t *o)
{
	return (json_object_get(o, "payloads") == NULL &&
	    cmd_cluster_member(&cmd_submit_entry));
}

/* The request: the file's directives, then the command line's. */
static json_t *
submit_request(int argc, char **argv, int *wait, const char **path)
{
	const struct cmd_entry	*c = &cmd_submit_entry;
	struct jobfile		 f;
	json_t			*o, *cli, *v;
	const char		*payloads = NULL, *k;
	char			*text, *cause = NULL, *base, **cmd;
	size_t			 len;
	int			 ch, i, cluster;

	cli = json_object();
	while ((ch = cmd_getopt(c, argc, argv, "h", submit_opts())) != -1) {
		if (ch == OPT_PAYLOADS)
			payloads = optarg;
		else if (ch == OPT_WAIT)
			*wait = 1;
		else if (runopt_apply(cli, ch - RUNOPT_BASE, optarg,
		    &cause) != 0)
			cmd_usage_error(c, "%s", cause);
	}
	if (optind >= argc)
		cmd_usage_error(c, "a job file is needed");
	*path = argv[optind];
	argc = submit_own_late(argc, argv, &payloads, wait);
	if ((text = read_file(argv[optind], SUBMIT_MAX_FILE, &len,
	    &cause)) == NULL)
		cmd_usage_error(c, "%s", cause);
	o = json_object();
	jobfile_init(&f);
	/* Every bad line is told: what parsed is applied all the same. */
	jobfile_parse(text, len, &f);
	if (jobfile_apply(&f, o) != 0) {
		submit_bad_file(argv[optind], &f);
		jobfile_free(&f);
		json_decref(o);
		json_decref(cli);
		free(text);
		exit(EXIT_USAGE);
	}
	jobfile_free(&f);
	json_object_foreach(cli, k, v) {
		if (json_is_array(v) && json_is_array(json_object_get(o, k)))
			json_array_extend(json_object_get(o, k), v);
		else
			json_object_set(o, k, v);
	}
	json_decref(cli);
	if (json_object_get(o, "name") == NULL) {
		base = xstrdup(argv[optind]);
		json_object_set_new(o, "name", json_string(basename(base)));
		free(base);
	}
	if (payloads != NULL)
		json_object_set_new(o, "payloads", submit_payloads(payloads));
	/*
	 * The job runs the copy, with the ARGS; on a remote host, the file in
	 * the tree sent (cwd is known once run_request_here has run).
	 */
	run_request_here(c, o, 0, NULL);
	cluster = submit_to_cluster(o);
	if (cluster)
		json_object_set_new(o, "cluster", json_true());
	if (hosts_remote() || cluster)
		cmd = submit_file_argv(*path, text, o, hosts_remote());
	else {
		cmd = xcalloc(2, sizeof *cmd);
		cmd[0] = submit_copy(text, len);
	}
	for (i = optind + 1; i < argc; i++)
		strv_add(&cmd, argv[i]);
	free(text);
	run_request_here(c, o, (int)strv_len(cmd), cmd);
	strv_free(cmd);
	return (o);
}

/* The request as the daemon will check it: a mistake is exit 2 here. */
static void
submit_check(json_t *o, const char *path)
{
	struct jobreq	 r;
	char		*cause = NULL;

	jobreq_init(&r);
	if (jobreq_from_json(o, &r, &cause) != 0) {
		fprintf(stderr, "gmux submit: %s: %s\n", path, cause);
		exit(EXIT_USAGE);
	}
	jobreq_clear(&r);
}

/*
 * To a remote host (synced as gmux run does, detached): one job; an array
 * is the host's own (it refuses one over TCP), so it is refused here.
 */
static int
submit_remote(json_t *req, const char *path, int wait)
{
	int	 rc;

	if (json_object_get(req, "array") != NULL ||
	    json_object_get(req, "payloads") != NULL) {
		fprintf(stderr, "gmux submit: %s: an array is submitted on "
		    "its host (over TCP it is not supported yet)\n", path);
		json_decref(req);
		return (EXIT_USAGE);
	}
	if (wait) {
		fprintf(stderr, "gmux submit: --wait is for this machine's "
		    "daemon; follow a remote job with gmux logs -f\n");
		json_decref(req);
		return (EXIT_USAGE);
	}
	rc = run_remote(req, 1, NULL);
	json_decref(req);
	return (rc);
}

/*
 * A job for the cluster (an array: one record, elements ID_N): from a
 * client, in this directory's tree (synced as gmux cluster submit does).
 */
static int
submit_cluster(json_t *req, int wait)
{
	json_t		*o;
	const char	*id;
	int		 rc = 0;

	if (hosts_remote())	/* on a member: in this directory there */
		cmd_cluster_tree(req);
	o = cmd_call(&cmd_submit_entry, "POST", "/v1/cluster/jobs", req);
	id = json_string_value(json_object_get(o, "id"));
	printf("%s\n", id != NULL ? id : "?");
	fflush(stdout);
	if (wait && id != NULL)
		rc = status_wait(id);
	json_decref(o);
	json_decref(req);
	return (rc);
}

static int
cmd_submit_exec(int argc, char **argv)
{
	struct client_reply	 r;
	json_t			*req;
	const char		*id, *path;
	int			 wait = 0, rc = 0;

	req = submit_request(argc, argv, &wait, &path);
	if (json_is_true(json_object_get(req, "cluster"))) {
		json_object_del(req, "cluster");
		submit_check(req, path);
		return (submit_cluster(req, wait));
	}
	submit_check(req, path);
	if (hosts_remote())
		return (submit_remote(req, path, wait));
	if (client_call("POST", "/v1/jobs", req, &r) != 0 ||
	    client_ok(&r, "submit") != 0) {
		client_reply_clear(&r);
		json_decref(req);
		return (EXIT_FAILURE_GMUX);
	}
	json_decref(req);
	id = json_string_value(json_object_get(r.body, "id"));
	printf("%s\n", id ? id : "?");
	fflush(stdout);
	if (wait && id != NULL)
		rc = status_wait(id);
	client_reply_clear(&r);
	return (rc);
}
