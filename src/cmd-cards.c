/* cmd-cards.c: gmux cards, what the host has and what is free on it. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_cards_exec(int, char **);

const struct cmd_entry cmd_cards_entry = {
	.name = "cards",
	.args = "[--json]",
	.help = "list the cards, what is free on each and what is enforced",
	.options =
	    "  --json               a JSON array of card objects\n",
	.exec = cmd_cards_exec,
};

enum { OPT_JSON = 256 };

static const struct option cards_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void
cards_row(struct table *t, json_t *c, int hosts)
{
	json_t	*e = json_object_get(c, "enforce");
	char	 idx[16], *mem, *share, *memfree, *enf;

	snprintf(idx, sizeof idx, "%lld",
	    (long long)json_integer_value(json_object_get(c, "index")));
	mem = format_size((uint64_t)json_integer_value(json_object_get(c,
	    "memory")));
	share = format_share((u_int)(json_number_value(json_object_get(c,
	    "share_free")) * 100 + 0.5));
	memfree = format_size((uint64_t)json_integer_value(json_object_get(c,
	    "mem_free")));
	xasprintf(&enf, "memory=%s compute=%s",
	    json_string_value(json_object_get(e, "memory")),
	    json_string_value(json_object_get(e, "compute")));
	if (hosts)
		table_add(t, json_string_value(json_object_get(c, "host")), idx,
		    json_string_value(json_object_get(c, "vendor")),
		    json_string_value(json_object_get(c, "model")),
		    json_string_value(json_object_get(c, "uuid")), mem, share,
		    memfree, enf);
	else
		table_add(t, idx, json_string_value(json_object_get(c,
		    "vendor")), json_string_value(json_object_get(c, "model")),
		    json_string_value(json_object_get(c, "uuid")), mem, share,
		    memfree, enf);
	free(mem);
	free(share);
	free(memfree);
	free(enf);
}

/* One line per host of what a job with --image gets there. */
static void
cards_containers(json_t *a)
{
	json_t		*c, *ct, *net;
	const char	*host, *last = "";
	size_t		 i;

	json_array_foreach(a, i, c) {
		host = json_string_value(json_object_get(c, "host"));
		ct = json_object_get(c, "containers");
		if (!json_is_object(ct) || (i > 0 && strcmp(host ? host : "",
		    last) == 0))
			continue;
		last = host ? host : "";
		net = json_object_get(ct, "network");
		if (json_is_true(json_object_get(ct, "podman")))
			printf("%s%scontainers: podman, runtime %s, network "
			    "%s (--deny-net) or %s (unfenced)\n",
			    host ? host : "", host ? " " : "",
			    json_string_value(json_object_get(ct, "runtime")),
			    json_string_value(json_array_get(net, 0)),
			    json_string_value(json_array_get(net, 1)));
		else
			printf("%s%scontainers: none (%s)\n", host ? host : "",
			    host ? " " : "", json_string_value(
			    json_object_get(ct, "why")));
	}
}

static int
cmd_cards_exec(int argc, char **argv)
{
	static const char *const hdr[] = { "HOST", "INDEX", "VENDOR", "MODEL",
	    "UUID", "MEMORY", "SHARE_FREE", "MEM_FREE", "ENFORCED" };
	struct table	*t;
	json_t		*a, *c;
	size_t		 i;
	int		 ch, json = 0, hosts;

	while ((ch = cmd_getopt(&cmd_cards_entry, argc, argv, "h",
	    cards_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_cards_entry, "unexpected argument '%s'",
		    argv[optind]);
	a = cmd_call(&cmd_cards_entry, "GET", "/v1/cards", NULL);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	if (json_array_size(a) == 0)
		printf("no cards: jobs run with --share 0 (CPU only)\n");
	else {
		/* Merged from several hosts (hosts.c): a HOST column. */
		hosts = json_is_string(json_object_get(json_array_get(a, 0),
		    "host"));
		t = table_create(hdr + !hosts, nitems(hdr) - !hosts);
		json_array_foreach(a, i, c)
			cards_row(t, c, hosts);
		table_print(t, stdout);
		table_free(t);
	}
	json_array_foreach(a, i, c) {
		json_t *why = json_object_get(json_object_get(c, "enforce"),
		    "why");
		const char *host = json_string_value(json_object_get(c,
		    "host"));
		if (json_is_string(why))
			printf("%s%scard %lld: %s\n", host ? host : "", host ?
			    " " : "", (long long)json_integer_value(
			    json_object_get(c, "index")),
			    json_string_value(why));
	}
	cards_containers(a);
	json_decref(a);
	return (0);
}
