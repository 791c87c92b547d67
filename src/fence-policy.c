/*
 * fence-policy.c: the network fence's policy (--allow HOST[:PORT],
 * --deny-net, --add-host NAME=ADDR) as flags and as fields of a job
 * request, and the address test the supervisor decides with.
 */

#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gmux.h"
#include "fence-int.h"

#define FENCE_MAX_SPEC	300

/* Returns a new, empty policy: no rule, so the fence is off until one comes. */
struct fence *
fence_create(void)
{
	return (xcalloc(1, sizeof (struct fence)));
}

/*
 * Returns the fence of a remote job that asked for none: every address is
 * allowed; what it holds the job to is its AF_UNIX rule.
 */
struct fence *
fence_open(void)
{
	struct fence	*f = fence_create();

	f->open = 1;
	return (f);
}

void
fence_free(struct fence *f)
{
	u_int	 i;

	if (f == NULL)
		return;
	for (i = 0; i < f->nrules; i++) {
		free(f->rules[i].name);
		free(f->rules[i].path);
		free(f->rules[i].text);
	}
	for (i = 0; i < f->npins; i++)
		free(f->pins[i].name);
	free(f->rules);
	free(f->pins);
	free(f);
}

/* Returns a deep copy (the caller frees it with fence_free), NULL for NULL. */
struct fence *
fence_copy(const struct fence *f)
{
	struct fence	*c;
	u_int		 i;

	if (f == NULL)
		return (NULL);
	c = fence_create();
	c->deny_net = f->deny_net;
	c->open = f->open;
	c->nrules = f->nrules;
	c->rules = xcalloc(f->nrules, sizeof *c->rules);
	for (i = 0; i < f->nrules; i++) {
		c->rules[i] = f->rules[i];
		if (f->rules[i].name != NULL)
			c->rules[i].name = xstrdup(f->rules[i].name);
		if (f->rules[i].path != NULL)
			c->rules[i].path = xstrdup(f->rules[i].path);
		c->rules[i].text = xstrdup(f->rules[i].text);
	}
	c->npins = f->npins;
	c->pins = xcalloc(f->npins, sizeof *c->pins);
	for (i = 0; i < f->npins; i++) {
		c->pins[i] = f->pins[i];
		c->pins[i].name = xstrdup(f->pins[i].name);
	}
	return (c);
}

/* A port or a range of ports, "443" or "8000-8100". */
static int
parse_ports(const char *s, struct fence_rule *r, char **cause)
{
	u_long	 lo, hi;
	char	*end;

	if (!isdigit((u_char)*s))
		goto bad;
	lo = strtoul(s, &end, 10);
	hi = lo;
	if (*end == '-') {
		if (!isdigit((u_char)end[1]))
			goto bad;
		hi = strtoul(end + 1, &end, 10);
	}
	if (*end != '\0')
		goto bad;
	if (lo < 1 || hi > 65535 || lo > hi || end - s > 11) {
		xasprintf(cause, "port %s is not from 1 to 65535", s);
		return (-1);
	}
	r->port_lo = (uint16_t)lo;
	r->port_hi = (uint16_t)hi;
	return (0);
bad:
	xasprintf(cause, "port '%s' is not a number or a range N-M", s);
	return (-1);
}

/* Parses an IPv4 or IPv6 address; returns its family or 0. */
int
fence_parse_addr(const char *s, u_char *addr)
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr) == 1)
		return (AF_INET);
	if (inet_pton(AF_INET6, s, addr) == 1)
		return (AF_INET6);
	return (0);
}

/*
 * A host name as DNS has it: labels of letters, digits, '-' and '_' (the
 * last seen in service names), 1 to 63 bytes each, 253 in all.  Lowers
 * its case and drops one trailing dot.  A name whose last label is all
 * digits is a mistyped address, not a name.
 */
static int
fence_check_name(char *name, char **cause)
{
	size_t	 len = strlen(name), label = 0, i;
	int	 digits = 1, last = 0;

	if (len > 0 && name[len - 1] == '.')
		name[--len] = '\0';
	if (len == 0 || len > 253)
		goto bad;
	for (i = 0; i <= len; i++) {
		if (name[i] == '.' || name[i] == '\0') {
			if (label == 0 || label > 63 || name[i - 1] == '-')
				goto bad;
			last = digits;
			label = 0;
			digits = 1;
			continue;
		}
		name[i] = (char)tolower((u_char)name[i]);
		if (!isalnum((u_char)name[i]) && name[i] != '-' &&
		    name[i] != '_')
			goto bad;
		if (label == 0 && name[i] == '-')
			goto bad;
		if (!isdigit((u_char)name[i]))
			digits = 0;
		label++;
	}
	if (last) {
		xasprintf(cause, "'%s' is not a valid IPv4 address", name);
		return (-1);
	}
	return (0);
bad:
	xasprintf(cause, "'%s' is not a host name or an address", name);
	return (-1);
}

/* "/N" after an address: N bits, and no host bits set past them. */
static int
parse_prefix(const char *s, struct fence_rule *r, char **cause)
{
	u_int	 max = r->family == AF_INET ? 32 : 128, bits, i;
	char	*end;
	u_long	 n;

	if (!isdigit((u_char)*s) || strlen(s) > 3)
		goto bad;
	n = strtoul(s, &end, 10);
	if (*end != '\0' || n > max)
		goto bad;
	bits = (u_int)n;
	for (i = bits; i < max; i++) {
		if (r->addr[i / 8] & (0x80 >> (i % 8))) {
			xasprintf(cause, "host bits are set after /%u", bits);
			return (-1);
		}
	}
	r->prefix = bits;
	return (0);
bad:
	xasprintf(cause, "prefix '/%s' is not from /0 to /%u", s, max);
	return (-1);
}

/* Fills r->text, the canonical spelling used in ps, JSON and the ledger. */
static void
rule_text(struct fence_rule *r)
{
	char	 a[INET6_ADDRSTRLEN], host[FENCE_MAX_SPEC], port[16];
	u_int	 full = r->family == AF_INET ? 32 : 128;

	if (r->name != NULL)
		snprintf(host, sizeof host, "%s", r->name);
	else {
		inet_ntop(r->family, r->addr, a, sizeof a);
		if (r->prefix != full)
			snprintf(host, sizeof host, "%s/%u", a, r->prefix);
		else
			snprintf(host, sizeof host, "%s", a);
	}
	port[0] = '\0';
	if (r->port_lo != 0 && r->port_lo == r->port_hi)
		snprintf(port, sizeof port, ":%u", r->port_lo);
	else if (r->port_lo != 0)
		snprintf(port, sizeof port, ":%u-%u", r->port_lo, r->port_hi);
	if (r->family == AF_INET6 && *port != '\0')
		xasprintf(&r->text, "[%s]%s", host, port);
	else
		xasprintf(&r->text, "%s%s", host, port);
}

/* Splits "[v6]:port", "v6", "host:port", "host" into host and port. */
static int
split_spec(char *s, char **host, char **port, int *bracket, char **cause)
{
	char	*close, *colon;

	*port = NULL;
	*bracket = 0;
	if (*s == '[') {
		if ((close = strchr(s, ']')) == NULL) {
			xasprintf(cause, "no ']' after '['");
			return (-1);
		}
		*close = '\0';
		*host = s + 1;
		*bracket = 1;
		if (close[1] == ':')
			*port = close + 2;
		else if (close[1] != '\0') {
			xasprintf(cause, "':PORT' or nothing must follow ']'");
			return (-1);
		}
		return (0);
	}
	*host = s;
	colon = strchr(s, ':');
	if (colon != NULL && strchr(colon + 1, ':') == NULL) {
		*colon = '\0';
		*port = colon + 1;
	}
	return (0);
}

/*
 * An --allow unix:PATH: the one socket file a job may connect to besides
 * those it bound, named by an absolute path (sun_path's bound).  Or
 * unix:dgram: the job may make AF_UNIX datagram sockets, whose sendmsg()
 * addresses no filter can read (a rule with no path).
 */
static int
parse_unix(const char *spec, struct fence_rule *r, char **cause)
{
	const char	*path = spec + 5;

	r->family = AF_UNIX;
	if (strcmp(path, FENCE_UNIX_DGRAM) == 0) {
		xasprintf(&r->text, "unix:%s", path);
		return (0);
	}
	if (*path != '/' || strlen(path) >= FENCE_UNIX_PATH_MAX) {
		xasprintf(cause, "'%s': unix: takes dgram or an absolute path "
		    "shorter than %d bytes", spec, FENCE_UNIX_PATH_MAX);
		return (-1);
	}
	r->path = xstrdup(path);
	xasprintf(&r->text, "unix:%s", path);
	return (0);
}

/*
 * Parses one --allow value: a host name, an address or a CIDR range, each
 * with an optional port or port range (IPv6 in brackets when it has one).
 * On success fills r (the caller frees r->name and r->text).
 */
int
fence_parse_allow(const char *spec, struct fence_rule *r, char **cause)
{
	char	*s, *host, *port, *slash, *why = NULL;
	int	 bracket, rc = -1;

	memset(r, 0, sizeof *r);
	if (*spec == '\0' || strlen(spec) > FENCE_MAX_SPEC) {
		xasprintf(cause, "'%.40s' is empty or too long", spec);
		return (-1);
	}
	/* Any case: a host "UNIX" with a port would print as unix:PORT. */
	if (strncasecmp(spec, "unix:", 5) == 0)
		return (parse_unix(spec, r, cause));
	s = xstrdup(spec);
	if (split_spec(s, &host, &port, &bracket, &why) != 0)
		goto out;
	if ((slash = strchr(host, '/')) != NULL)
		*slash++ = '\0';
	if ((r->family = fence_parse_addr(host, r->addr)) == 0) {
		if (bracket || slash != NULL || strchr(host, ':') != NULL) {
			xasprintf(&why, "'%s' is not an address", host);
			goto out;
		}
		if (fence_check_name(host, &why) != 0)
			goto out;
		r->name = xstrdup(host);
	} else if (bracket && r->family != AF_INET6) {
		xasprintf(&why, "only IPv6 addresses go in brackets");
		goto out;
	}
	if (r->family != 0)
		r->prefix = r->family == AF_INET ? 32 : 128;
	if (slash != NULL && parse_prefix(slash, r, &why) != 0)
		goto out;
	r->port_lo = 0;
	r->port_hi = 65535;
	if (port != NULL && parse_ports(port, r, &why) != 0)
		goto out;
	if (port == NULL)
		r->port_lo = 0;
	rule_text(r);
	rc = 0;
out:
	if (rc != 0) {
		xasprintf(cause, "'%s': %s", spec, why);
		free(r->name);
		r->name = NULL;
	}
	free(why);
	free(s);
	return (rc);
}

/* Adds an --allow value to the policy. */
int
fence_allow(struct fence *f, const char *spec, char **cause)
{
	struct fence_rule	 r;

	if (f->nrules >= FENCE_MAX_RULES) {
		xasprintf(cause, "more than %d rules", FENCE_MAX_RULES);
		return (-1);
	}
	if (fence_parse_allow(spec, &r, cause) != 0)
		return (-1);
	f->rules = xreallocarray(f->rules, f->nrules + 1, sizeof *f->rules);
	f->rules[f->nrules++] = r;
	return (0);
}

/* Adds an --add-host NAME=ADDR (docker's NAME:ADDR also) to the policy. */
int
fence_add_host(struct fence *f, const char *spec, char **cause)
{
	struct fence_pin	 p;
	char			*s, *eq, *addr, *why = NULL;
	size_t			 len;

	memset(&p, 0, sizeof p);
	if (f->npins >= FENCE_MAX_RULES || strlen(spec) > FENCE_MAX_SPEC) {
		xasprintf(cause, "too many or too long");
		return (-1);
	}
	s = xstrdup(spec);
	if ((eq = strchr(s, '=')) == NULL && (eq = strchr(s, ':')) == NULL) {
		xasprintf(&why, "not NAME=ADDR");
		goto bad;
	}
	*eq = '\0';
	addr = eq + 1;
	len = strlen(addr);
	if (len > 2 && addr[0] == '[' && addr[len - 1] == ']') {
		addr[len - 1] = '\0';
		addr++;
	}
	if ((p.family = fence_parse_addr(addr, p.addr)) == 0) {
		xasprintf(&why, "'%s' is not an IPv4 or IPv6 address", addr);
		goto bad;
	}
	if (fence_check_name(s, &why) != 0)
		goto bad;
	p.name = xstrdup(s);
	f->pins = xreallocarray(f->pins, f->npins + 1, sizeof *f->pins);
	f->pins[f->npins++] = p;
	free(s);
	return (0);
bad:
	xasprintf(cause, "'%s': %s", spec, why);
	free(why);
	free(s);
	return (-1);
}

/* Returns the first rule naming name, or NULL. */
static const struct fence_rule *
fence_find_name(const struct fence *f, const char *name)
{
	u_int	 i;

	for (i = 0; i < f->nrules; i++) {
		if (f->rules[i].name != NULL &&
		    strcmp(f->rules[i].name, name) == 0)
			return (&f->rules[i]);
	}
	return (NULL);
}

/*
 * Checks the policy as a whole: --deny-net takes no --allow, and a pinned
 * name must also be allowed (a pin says where a name goes, not that the
 * job may go there).  The cause names the field.
 */
int
fence_check(const struct fence *f, char **cause)
{
	u_int	 i;

	for (i = 0; f->deny_net && i < f->nrules; i++) {
		if (f->rules[i].family != AF_UNIX) {
			xasprintf(cause, "allow: only unix: rules can be "
			    "combined with deny_net");
			return (-1);
		}
	}
	for (i = 0; i < f->npins; i++) {
		if (fence_find_name(f, f->pins[i].name) == NULL) {
			xasprintf(cause, "add_host[%u]: %s is not allowed "
			    "(allow it too)", i, f->pins[i].name);
			return (-1);
		}
	}
	return (0);
}

/* Whether the policy has a unix: rule (a host job's, never a remote one). */
int
fence_has_unix(const struct fence *f)
{
	u_int	 i;

	for (i = 0; f != NULL && i < f->nrules; i++) {
		if (f->rules[i].family == AF_UNIX)
			return (1);
	}
	return (0);
}

/* Whether the policy lets the job make AF_UNIX datagram sockets. */
int
fence_unix_dgram(const struct fence *f)
{
	u_int	 i;

	for (i = 0; f != NULL && i < f->nrules; i++) {
		if (f->rules[i].family == AF_UNIX && f->rules[i].path == NULL)
			return (1);
	}
	return (0);
}

/* Whether a rule's port range holds port. */
int
fence_rule_port(const struct fence_rule *r, uint16_t port)
{
	if (r->port_lo == 0)
		return (1);
	return (port >= r->port_lo && port <= r->port_hi);
}

/*
 * Whether an address is in an address rule's range.  IPv4-mapped IPv6
 * addresses are the caller's to turn into IPv4 first.
 */
static int
rule_holds(const struct fence_rule *r, int family, const u_char *addr)
{
	u_int	 full = r->prefix / 8, rest = r->prefix % 8;

	if (r->name != NULL || r->family != family)
		return (0);
	if (memcmp(r->addr, addr, full) != 0)
		return (0);
	if (rest == 0)
		return (1);
	return (((r->addr[full] ^ addr[full]) & (0xff00 >> rest)) == 0);
}

/* Returns the index of the address rule allowing addr:port, or -1. */
int
fence_match_addr(const struct fence *f, int family, const u_char *addr,
    uint16_t port)
{
	u_int	 i;

	for (i = 0; i < f->nrules; i++) {
		if (rule_holds(&f->rules[i], family, addr) &&
		    fence_rule_port(&f->rules[i], port))
			return ((int)i);
	}
	return (-1);
}

/*
 * Whether a connect to addr (IPv4-mapped addresses already IPv4) lands on
 * this host's loopback: 127.0.0.0/8, ::1, and the unspecified 0.0.0.0 and
 * ::, which Linux connects to the host itself.
 */
int
fence_loopback(int family, const u_char *addr)
{
	static const u_char	 zero[16];

	if (family == AF_INET)
		return (addr[0] == 127 || memcmp(addr, zero, 4) == 0);
	if (family != AF_INET6 || memcmp(addr, zero, 15) != 0)
		return (0);
	return (addr[15] == 0 || addr[15] == 1);
}

/*
 * The --allow rules and --add-host names of f that lead only to this
 * host's loopback (127.0.0.1:8080, localhost, [::1], db=127.0.0.1), as
 * the user spelled them: what a host that keeps its loopback closed to
 * remote jobs will refuse.  NULL if none; the caller frees the vector.
 */
char **
fence_loopback_rules(const struct fence *f)
{
	const struct fence_rule	*r;
	char			**v = NULL;
	u_int			  i, bits;

	for (i = 0; i < f->nrules; i++) {
		r = &f->rules[i];
		bits = r->family == AF_INET ? 8 : 128;
		if (r->name != NULL ? strcmp(r->name, "localhost") == 0 :
		    fence_loopback(r->family, r->addr) && r->prefix >= bits)
			strv_add(&v, r->text);
	}
	for (i = 0; i < f->npins; i++) {
		if (fence_loopback(f->pins[i].family, f->pins[i].addr))
			strv_add(&v, f->pins[i].name);
	}
	return (v);
}

static int
strings_from_json(json_t *a, const char *field, struct fence *f,
    int (*add)(struct fence *, const char *, char **), char **cause)
{
	size_t	 i;
	json_t	*s;
	char	*why;

	if (!json_is_array(a)) {
		xasprintf(cause, "%s: must be an array of strings", field);
		return (-1);
	}
	json_array_foreach(a, i, s) {
		if (!json_is_string(s) ||
		    strlen(json_string_value(s)) != json_string_length(s)) {
			xasprintf(cause, "%s[%zu]: must be a string", field, i);
			return (-1);
		}
		if (add(f, json_string_value(s), &why) != 0) {
			xasprintf(cause, "%s[%zu]: %s", field, i, why);
			free(why);
			return (-1);
		}
	}
	return (0);
}

/*
 * Reads "allow", "deny_net" and "add_host" from a job request object
 * (absent or null: not asked).  Sets *out to the policy (the caller frees
 * it) or to NULL when the request asks for no fence.
 */
int
fence_from_json(json_t *o, struct fence **out, char **cause)
{
	struct fence	*f = fence_create();
	json_t		*v;
	int		 closed;

	*out = NULL;
	if ((v = json_object_get(o, "allow")) != NULL && !json_is_null(v) &&
	    strings_from_json(v, "allow", f, fence_allow, cause) != 0)
		goto bad;
	closed = json_is_array(v) && json_array_size(v) == 0;
	if ((v = json_object_get(o, "add_host")) != NULL && !json_is_null(v) &&
	    strings_from_json(v, "add_host", f, fence_add_host, cause) != 0)
		goto bad;
	if ((v = json_object_get(o, "deny_net")) != NULL && !json_is_null(v)) {
		if (!json_is_boolean(v)) {
			xasprintf(cause, "deny_net: must be true or false");
			goto bad;
		}
		f->deny_net = json_is_true(v);
	}
	if (closed)	/* an empty list allows nothing: closed, not none */
		f->deny_net = 1;
	if (fence_check(f, cause) != 0)
		goto bad;
	if (!f->deny_net && f->nrules == 0) {
		fence_free(f);
		return (0);
	}
	*out = f;
	return (0);
bad:
	fence_free(f);
	return (-1);
}

/* Returns "NAME=ADDR" for a pin; the caller frees it. */
static char *
pin_text(const struct fence_pin *p)
{
	char	 a[INET6_ADDRSTRLEN], *s;

	inet_ntop(p->family, p->addr, a, sizeof a);
	xasprintf(&s, "%s=%s", p->name, a);
	return (s);
}

/* Sets the policy's fields in a job request object; nothing for NULL. */
void
fence_to_json(const struct fence *f, json_t *o)
{
	json_t	*a;
	u_int	 i;
	char	*s;

	if (f == NULL)
		return;
	if (f->deny_net)
		json_object_set_new(o, "deny_net", json_true());
	if (f->nrules != 0) {
		a = json_array();
		for (i = 0; i < f->nrules; i++)
			json_array_append_new(a, json_string(f->rules[i].text));
		json_object_set_new(o, "allow", a);
	}
	if (f->npins != 0) {
		a = json_array();
		for (i = 0; i < f->npins; i++) {
			s = pin_text(&f->pins[i]);
			json_array_append_new(a, json_string(s));
			free(s);
		}
		json_object_set_new(o, "add_host", a);
	}
}

/*
 * Returns the fence in one line for ps, the ledger and logs: "none",
 * "deny-net" or "allow A,B (add-host N=ADDR)"; the caller frees it.
 */
char *
fence_text(const struct fence *f)
{
	char	*s, *t, *p;
	u_int	 i;

	if (f == NULL)
		return (xstrdup("none"));
	if (f->deny_net && f->nrules == 0)
		return (xstrdup("deny-net"));
	if (f->open)
		return (xstrdup("open"));
	s = xstrdup(f->deny_net ? "deny-net, allow " : "allow ");
	for (i = 0; i < f->nrules; i++) {
		xasprintf(&t, "%s%s%s", s, i ? "," : "", f->rules[i].text);
		free(s);
		s = t;
	}
	for (i = 0; i < f->npins; i++) {
		p = pin_text(&f->pins[i]);
		xasprintf(&t, "%s%s%s", s, i ? "," : " (add-host ", p);
		free(p);
		free(s);
		s = t;
	}
	if (f->npins != 0) {
		xasprintf(&t, "%s)", s);
		free(s);
		s = t;
	}
	return (s);
}
