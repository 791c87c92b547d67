/*
 * cmd-remote.c: gmux remote add/ls/default/rm, the hosts this machine runs
 * jobs on (remotes.c keeps them).  A target holds a token, so add prefers
 * to read it from stdin; one given on the command line is taken, with a
 * warning, and wiped from our argv at once.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "gmux.h"
#include "cmd-int.h"

#define REMOTE_CHECK_MS	3000
#define REMOTE_LINE_MAX	2048

static int	cmd_remote_exec(int, char **);

const struct cmd_entry cmd_remote_entry = {
	.name = "remote",
	.args = "[add [--no-check] NAME [TARGET|-] | ls [--json] | "
	    "default NAME | rm NAME |\n"
	    "             discover [--wait DURATION] [--first] [--json] "
	    "[--add NAME [--host HOST]]]",
	.help = "the GPU hosts this machine runs jobs on",
	.options =
	    "  --no-check           add without asking the host (it may be "
	    "down)\n"
	    "  --json               ls or discover as a JSON array\n"
	    "  --wait DURATION      discover: listen this long (default "
	    "3s)\n"
	    "  --first              discover: stop at the first host heard\n"
	    "  --add NAME           discover: add the host heard as NAME, "
	    "its invite on stdin\n"
	    "  --host HOST          discover --add: the one of that name\n"
	    "\nls asks every host at once what is free there (cards, share "
	    "and memory free,\nrunning jobs), its version and the round "
	    "trip.\n"
	    "\nTARGET is INVITE@HOST:PORT#PIN, as gmux serve --addr or gmux "
	    "token add print\nit: add checks the host's key against PIN, "
	    "then trades the invite for a\ntoken of this machine's own, "
	    "which never goes on a command line.  A\nTOKEN@HOST:PORT#PIN is "
	    "best given on stdin (without TARGET, or with -): on\nthe "
	    "command line it would be visible to other users (ps).\nThe "
	    "first remote added is the default; with several, gmux run "
	    "picks the one\nwith the most room and the default breaks "
	    "ties.\n"
	    "\ndiscover lists the hosts that gmux serve --announce makes "
	    "known on this\nLAN (name, address, pin), each announcement "
	    "checked against its own pin's\nkey; --add still checks the pin "
	    "on the TLS handshake.  Compare the pin with\nthe one the host "
	    "printed before adding it.\n",
	.exec = cmd_remote_exec,
	.here = 1,
};

enum { OPT_JSON = 256, OPT_NOCHECK, OPT_WAIT, OPT_FIRST, OPT_ADD, OPT_HOST };

static const struct option remote_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "no-check", no_argument, NULL, OPT_NOCHECK },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "first", no_argument, NULL, OPT_FIRST },
	{ "add", required_argument, NULL, OPT_ADD },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void
remote_load(struct remotes *rs)
{
	char	*path, *cause = NULL;

	path = remotes_path();
	if (remotes_load(rs, path, &cause) != 0) {
		fprintf(stderr, "gmux remote: %s\n", cause);
		exit(1);
	}
	free(path);
}

static void
remote_save(struct remotes *rs)
{
	char	*cause = NULL;

	if (remotes_save(rs, &cause) != 0) {
		fprintf(stderr, "gmux remote: %s\n", cause);
		exit(1);
	}
}

/*
 * Reads the target from stdin: a prompt without echo on a terminal.  The
 * caller frees it (NULL: none).
 */
char *
remote_read_target(void)
{
	struct termios	 old, quiet;
	char		*line, *p, *last;
	int		 tty = isatty(STDIN_FILENO);

	line = xmalloc(REMOTE_LINE_MAX);
	if (tty) {
		fprintf(stderr, "TOKEN@HOST:PORT#PIN (not shown): ");
		tcgetattr(STDIN_FILENO, &old);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	p = fgets(line, REMOTE_LINE_MAX, stdin);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fprintf(stderr, "\n");
	}
	if (p == NULL) {
		free(line);
		return (NULL);
	}
	line[strcspn(line, "\r\n")] = '\0';
	/* The whole line serve printed may be pasted: its last word. */
	while ((p = strrchr(line, ' ')) != NULL && p[1] == '\0')
		*p = '\0';
	last = strrchr(line, ' ');
	p = xstrdup(last != NULL ? last + 1 : line);
	explicit_bzero(line, REMOTE_LINE_MAX);
	free(line);
	return (p);
}

/*
 * One request to the host being added (3 s at most), into q.  Returns -1,
 * said, if the host showed the wrong key or refused the token: it will
 * never work, or worse.
 */
static int
remote_ask(const struct target *t, const char *method, const char *path,
    struct client_req *q)
{
	struct client_reply	*r = &q->reply;
	char			*hp;

	client_req_init(q, t, method, path);
	client_multi(q, 1, REMOTE_CHECK_MS);
	if (r->error != NULL && strstr(r->error, "impostor") != NULL) {
		fprintf(stderr, "gmux remote: %s\n", r->error);
		return (-1);
	}
	if (r->status == 401 || r->status == 429 || r->status == 403) {
		hp = target_hostport(t);
		fprintf(stderr, "gmux remote: %s refused the token: %s\n", hp,
		    r->error);
		free(hp);
		return (-1);
	}
	return (0);
}

/*
 * Asks the host before keeping it: a wrong pin or token is refused; a
 * host that does not answer is kept with a warning.
 */
static int
remote_check(const char *name, const struct target *t)
{
	struct client_req	 q;
	struct client_reply	*r = &q.reply;
	const char		*v;
	char			*hp;
	int			 rc;

	if ((rc = remote_ask(t, "GET", "/v1/version", &q)) == 0) {
		hp = target_hostport(t);
		v = json_string_value(json_object_get(r->body, "version"));
		if (r->status != 200)
			fprintf(stderr, "gmux remote: could not ask %s (%s); "
			    "added %s anyway\n", hp, r->error ? r->error :
			    "no answer", name);
		else
			printf("added %s: %s, gmux %s\n", name, hp, v ? v :
			    "?");
		free(hp);
	}
	client_reply_clear(r);
	return (rc);
}

/*
 * Trades an invite (what the line serve and token add print carries) for
 * a token of this machine's own, which replaces it in t.  Returns 1 if
 * traded, 0 if t holds a token already (or the host cannot say), -1 if
 * the host refused it (printed).
 */
static int
remote_join(const struct target *t, char **token)
{
	struct client_req	 q;
	struct client_reply	*r = &q.reply;
	const char		*v;
	int			 rc;

	*token = NULL;
	rc = remote_ask(t, "POST", "/v1/join", &q);
	v = json_string_value(json_object_get(r->body, "token"));
	if (rc == 0 && r->status == 201 && v != NULL) {
		*token = xstrdup(v);
		rc = 1;
	}
	if (v != NULL)
		explicit_bzero((char *)v, strlen(v));
	client_reply_clear(r);
	return (rc);
}

/* The target as given (argv or stdin), parsed; NULL if there is none. */
static char *
remote_add_target(int argc, char **argv, int *argv_given)
{
	char	*text;

	*argv_given = argc == 2 && strcmp(argv[1], "-") != 0;
	if (*argv_given) {
		text = xstrdup(argv[1]);
		explicit_bzero(argv[1], strlen(argv[1]));
	} else if ((text = remote_read_target()) == NULL)
		fprintf(stderr, "gmux remote: no target on stdin\n");
	return (text);
}

/* Keeps name's target t in rs (saved), once the host has said yes. */
static int
remote_add_keep(struct remotes *rs, const char *name, struct target *t,
    int check)
{
	char	*text, *cause = NULL;
	int	 rc = 0;

	text = target_format(t);
	if (remotes_add(rs, name, text, &cause) != 0) {
		fprintf(stderr, "gmux remote: %s\n", cause);
		free(cause);
		rc = 1;
	} else if (check && remote_check(name, t) != 0)
		rc = 1;
	else {
		remote_save(rs);
		if (!check)
			printf("added %s\n", name);
	}
	explicit_bzero(text, strlen(text));
	free(text);
	return (rc);
}

static int
remote_add(int argc, char **argv, int check)
{
	char	*text;
	int	 rc, in_argv;

	if (argc < 1 || argc > 2)
		cmd_usage_error(&cmd_remote_entry, "add needs NAME [TARGET|-]");
	if ((text = remote_add_target(argc, argv, &in_argv)) == NULL)
		return (1);
	rc = remote_add_text(argv[0], text, in_argv, check);
	explicit_bzero(text, strlen(text));
	free(text);
	return (rc);
}

/*
 * Adds the host of target text as name: checks its pin, trades an invite
 * for a token, keeps it.  in_argv: the text came on the command line.
 * Returns 0 or 1 (said on stderr).
 */
int
remote_add_text(const char *name, const char *text, int in_argv, int check)
{
	struct remotes	 rs;
	struct target	 t;
	char		*cause = NULL, *token = NULL;
	int		 rc = 1, joined = 0;

	remote_load(&rs);
	memset(&t, 0, sizeof t);
	if (target_parse(text, &t, &cause) != 0) {
		fprintf(stderr, "gmux remote: %s\n", cause);
		free(cause);
		goto out;
	}
	if (check && (joined = remote_join(&t, &token)) == -1)
		goto out;
	if (joined) {
		explicit_bzero(t.token, strlen(t.token));
		free(t.token);
		t.token = token;
	} else if (in_argv)
		fprintf(stderr, "gmux remote: warning: the token was on the "
		    "command line, where other users can see it (ps) and the "
		    "shell keeps it; next time give it on stdin (gmux remote "
		    "add %s), or paste the line of an invite (gmux token "
		    "add)\n", name);
	rc = remote_add_keep(&rs, name, &t, check);
out:
	target_clear(&t);
	remotes_clear(&rs);
	return (rc);
}

/* Adds what a host said of itself to its entry of remote ls --json. */
static void
remote_ls_json(json_t *e, const struct remote_probe *p)
{
	struct remote_free	 f;

	if (p->error != NULL) {
		json_object_set_new(e, "error", json_string(p->error));
		return;
	}
	remote_probe_free(p, &f);
	json_object_set_new(e, "version", json_incref(json_object_get(
	    p->version, "version")));
	json_object_set_new(e, "cards", json_integer(f.cards));
	json_object_set_new(e, "share_free", json_real(f.share_free));
	json_object_set_new(e, "mem_free", json_integer((json_int_t)
	    f.mem_free));
	json_object_set_new(e, "memory", json_integer((json_int_t)f.memory));
	json_object_set_new(e, "jobs", json_integer(f.jobs));
	json_object_set_new(e, "rtt_ms", json_real(p->rtt_us / 1000.0));
}

/* One row of remote ls: what is free there, its version, its RTT. */
static void
remote_ls_row(struct table *t, const struct remote *rm, int dflt,
    const struct remote_probe *p)
{
	struct remote_free	 f;
	const char		*v = NULL;
	char			*hp, pin[16], cards[16], share[24], rtt[16];
	char			 jobs[16], *mem = NULL, *all = NULL;
	char			*memf = NULL;

	hp = target_hostport(&rm->target);
	snprintf(pin, sizeof pin, "%.8s..", rm->target.pin);
	if (p->error == NULL) {
		remote_probe_free(p, &f);
		snprintf(cards, sizeof cards, "%u", f.cards);
		snprintf(share, sizeof share, "%.2f", f.share_free);
		mem = format_size(f.mem_free);
		all = format_size(f.memory);
		xasprintf(&memf, "%s/%s", mem, all);
		snprintf(jobs, sizeof jobs, "%u", f.jobs);
		snprintf(rtt, sizeof rtt, "%.1fms", p->rtt_us / 1000.0);
		if ((v = json_string_value(json_object_get(p->version,
		    "version"))) == NULL)
			v = "?";
	}
	/* A host that did not answer: dashes (table_add's NULL). */
	table_add(t, rm->name, hp, pin, dflt ? "*" : "", v ? cards : NULL,
	    v ? share : NULL, memf, v ? jobs : NULL, v, v ? rtt : NULL);
	free(hp);
	free(mem);
	free(all);
	free(memf);
}

/*
 * gmux remote ls: the hosts, and what each says of itself now (asked of
 * all at once): its cards, the share and memory free on them, its running
 * jobs, its version, the round trip.  One that does not answer is listed
 * with dashes and skipped with a warning.
 */
static int
remote_ls(int json)
{
	static const char *const hdr[] = { "NAME", "HOST", "PIN", "DEFAULT",
	    "CARDS", "SHARE FREE", "MEM FREE", "JOBS", "VERSION", "RTT" };
	struct remote_probe	 p[REMOTES_MAX];
	struct client_reply	 r;
	struct remotes		 rs;
	struct table		*t;
	json_t			*a, *e;
	size_t			 i;
	u_int			 n;

	remote_load(&rs);
	a = remotes_to_json(&rs);
	memset(p, 0, sizeof p);
	n = rs.n < REMOTES_MAX ? rs.n : REMOTES_MAX;
	for (i = 0; i < n; i++)
		p[i].rm = &rs.v[i];
	remote_probe(p, n, 1);
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, e) {
		if (i >= n)
			break;
		if (p[i].error != NULL) {
			memset(&r, 0, sizeof r);
			r.error = p[i].error;
			hosts_skipped(p[i].rm, &r);
		}
		if (json)
			remote_ls_json(e, &p[i]);
		else
			remote_ls_row(t, &rs.v[i], json_is_true(
			    json_object_get(e, "default")), &p[i]);
	}
	if (json)
		json_print(a, stdout);
	else
		table_print(t, stdout);
	table_free(t);
	remote_probe_clear(p, n);
	json_decref(a);
	remotes_clear(&rs);
	return (0);
}

/* default NAME and rm NAME: one change to the list. */
static int
remote_change(const char *sub, int argc, char **argv)
{
	struct remotes	 rs;
	char		*cause = NULL;
	int		 rc;

	if (argc != 1)
		cmd_usage_error(&cmd_remote_entry, "%s needs one NAME", sub);
	remote_load(&rs);
	if (strcmp(sub, "rm") == 0)
		rc = remotes_rm(&rs, argv[0], &cause);
	else
		rc = remotes_set_default(&rs, argv[0], &cause);
	if (rc != 0) {
		fprintf(stderr, "gmux remote: %s\n", cause);
		free(cause);
	} else
		remote_save(&rs);
	remotes_clear(&rs);
	return (rc == 0 ? 0 : 1);
}

static int
cmd_remote_exec(int argc, char **argv)
{
	struct discover	 d;
	const char	*sub;
	int		 ch, json = 0, check = 1;

	if (argc == 1)
		return (remote_ls(0));	/* as git remote does */
	if (argv[1][0] == '-') {
		while ((ch = cmd_getopt(&cmd_remote_entry, argc, argv, "h",
		    remote_opts)) != -1)
			;
		cmd_usage_error(&cmd_remote_entry, "add, ls, default, rm or "
		    "discover?");
	}
	sub = argv[1];
	argc--;
	argv++;
	memset(&d, 0, sizeof d);
	d.wait_ms = 3000;
	while ((ch = cmd_getopt(&cmd_remote_entry, argc, argv, "h",
	    remote_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
		else if (ch == OPT_NOCHECK)
			check = 0;
		else if (discover_option(&d, ch - OPT_WAIT, optarg) != 0)
			cmd_usage_error(&cmd_remote_entry, "--wait: a duration "
			    "(like 5s)");
	}
	argc -= optind;
	argv += optind;
	if (strcmp(sub, "discover") == 0) {
		if (argc != 0)
			cmd_usage_error(&cmd_remote_entry, "discover takes no "
			    "argument (--add NAME names the remote)");
		return (remote_discover(&d, json));
	}
	if (strcmp(sub, "add") == 0)
		return (remote_add(argc, argv, check));
	if (strcmp(sub, "ls") == 0) {
		if (argc != 0)
			cmd_usage_error(&cmd_remote_entry, "ls takes no NAME");
		return (remote_ls(json));
	}
	if (strcmp(sub, "default") == 0 || strcmp(sub, "rm") == 0)
		return (remote_change(sub, argc, argv));
	cmd_usage_error(&cmd_remote_entry, "unknown subcommand '%s'", sub);
}
