/*
 * tenant.c: the tenants' records, kept in $GMUX_HOME/tenants.json (0600,
 * replaced atomically), their names and their UIDs' derivation
 * (docs/tenants.md).  The loop's alone: read once, then kept.
 */

#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#define TENANT_FILE_MAX		(16 * 1024 * 1024)
#define TENANT_NAME_MAX		32	/* an account name, as useradd's */
#define TENANT_PREFIX_DEFAULT	"gmux-"
#define TENANT_RANGE_DEFAULT	"200000-299999"
#define TENANT_HOME_DEFAULT	"/srv/gmux/home"

static struct tenants	 tenant_list = TAILQ_HEAD_INITIALIZER(tenant_list);
static int		 tenant_loaded;

static char *
tenant_path(void)
{
	char	*path;

	xasprintf(&path, "%s/tenants.json", path_home());
	return (path);
}

static const char *
tenant_prefix(void)
{
	const char	*p = config_get("TENANT_ACCOUNT_PREFIX");

	return (p != NULL ? p : TENANT_PREFIX_DEFAULT);
}

const char *
tenant_home_root(void)
{
	const char	*p = config_get("TENANT_HOME_ROOT");

	return (p != NULL && *p == '/' ? p : TENANT_HOME_DEFAULT);
}

/* Owner's account name (the caller frees it). */
static char *
tenant_account_name(const char *owner)
{
	char	*s;

	xasprintf(&s, "%s%s", tenant_prefix(), owner);
	return (s);
}

/*
 * Can owner have an account?  Its name with the prefix must be one
 * Debian's useradd takes (NAME_REGEX's default, 32 characters).
 */
static int
tenant_account_ok(const char *acct)
{
	size_t	 i, n = strlen(acct);
	int	 ok = n > 0 && n <= TENANT_NAME_MAX &&
		     (islower((u_char)acct[0]) || acct[0] == '_');

	for (i = 1; ok && i < n; i++) {
		if (!islower((u_char)acct[i]) && !isdigit((u_char)acct[i]) &&
		    acct[i] != '_' && acct[i] != '-')
			ok = 0;
	}
	return (ok);
}

int
tenant_name_check(const char *owner, char **cause)
{
	char	*acct = tenant_account_name(owner);
	size_t	 n = strlen(acct);
	int	 ok = tenant_account_ok(acct);

	if (!ok) {
		xasprintf(cause, "tenant: '%.64s' cannot be an account name: "
		    "%s (%.80s)", owner, n > TENANT_NAME_MAX ? "32 characters "
		    "at most with its prefix" : "lower-case letters, digits, "
		    "'_' and '-' only, from a letter", acct);
	}
	free(acct);
	return (ok ? 0 : -1);
}

/*
 * May owner be a tenant here?  With accounts on, its name must make an
 * account's (the daemon's own user and mapped tenants need none).
 */
int
tenant_owner_ok(const char *owner, char **cause)
{
	struct tenant	*t;
	const char	*why;

	if (!tenant_accounts_on(&why) || strcmp(owner, api_me()) == 0 ||
	    ((t = tenant_find(owner)) != NULL && t->user != NULL))
		return (0);
	return (tenant_name_check(owner, cause));
}

/*
 * At the daemon's start: fn(uid, gid, home, arg) for each account gmux
 * made here (active, not a mapped user's), whose container store is
 * swept of orphans.  fn returns 1 if it started a sweep, which calls
 * tenant_swept when it is over; else the account is swept at once.
 */
void
tenant_accounts_each(int (*fn)(uid_t, gid_t, const char *, void *),
    void *arg)
{
	struct tenant	*t;
	const char	*why;

	if (!tenant_accounts_on(&why))
		return;
	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (t->state == TENANT_ACTIVE && t->user == NULL &&
		    t->has_uid && fn(t->uid, t->gid, t->home, arg) == 0)
			tenant_swept(t->uid);
	}
}

/*
 * The account uid's store was swept at start: whatever is left of it
 * (a pause process of before a kill -9) goes once it has no job
 * (tenant_idle_tick), not while the sweep's podman runs.
 */
void
tenant_swept(uid_t uid)
{
	struct tenant	*t;

	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (t->has_uid && t->uid == uid && t->user == NULL)
			t->busy = 1;
	}
}

/* Are accounts made?  If not, *why says why. */
int
tenant_accounts_on(const char **why)
{
	if (config_uint("TENANT_ACCOUNTS", 0, 0, 1) == 0) {
		*why = "TENANT_ACCOUNTS=0";
		return (0);
	}
	if (geteuid() != 0) {
		*why = "the daemon is not root";
		return (0);
	}
	*why = NULL;
	return (1);
}

/* TENANT_UID_RANGE as [lo, hi]; -1 (and the default) if it is bad. */
int
tenant_uid_range(uid_t *lo, uid_t *hi)
{
	const char	*v = config_get("TENANT_UID_RANGE");
	unsigned long	 a, b;
	char		*end;

	if (v == NULL)
		v = TENANT_RANGE_DEFAULT;
	a = strtoul(v, &end, 10);
	if (*end == '-' && isdigit((u_char)end[1]))
		b = strtoul(end + 1, &end, 10);
	else
		b = 0;
	if (*end != '\0' || a < 1000 || b < a || b >= 0x7fffffffUL) {
		log_warnx("TENANT_UID_RANGE: '%s' is not LO-HI above 999; "
		    "using %s", v, TENANT_RANGE_DEFAULT);
		*lo = 200000;
		*hi = 299999;
		return (-1);
	}
	*lo = (uid_t)a;
	*hi = (uid_t)b;
	return (0);
}

/* The first UID tried for name: FNV-1a into [lo, hi]. */
uid_t
tenant_uid_derive(const char *name, uid_t lo, uid_t hi)
{
	uint32_t	 h = 2166136261u;

	for (; *name != '\0'; name++) {
		h ^= (u_char)*name;
		h *= 16777619u;
	}
	return (lo + (uid_t)(h % ((uint32_t)(hi - lo) + 1)));
}

/* Is uid another tenant's, or any account's or group's on this host? */
int
tenant_uid_taken(uid_t uid, const struct tenant *self)
{
	struct tenant	*t;

	TAILQ_FOREACH(t, &tenant_list, entry) {
		if (t != self && t->has_uid && t->uid == uid)
			return (1);
	}
	return (getpwuid(uid) != NULL || getgrgid((gid_t)uid) != NULL);
}

uint64_t
tenant_disk_limit(const struct tenant *t)
{
	const char	*v;
	uint64_t	 n = 0;
	char		*cause = NULL;

	if (t->q_disk != 0)
		return (t->q_disk);
	if ((v = config_get("USER_DISK_LIMIT")) != NULL &&
	    parse_size(v, &n, &cause) != 0) {
		log_warnx("USER_DISK_LIMIT: %s", cause);
		free(cause);
		n = 0;
	}
	return (n);
}

static const char *const tenant_states[] = { "none", "active", "archived" };

static const char *
tenant_state_name(const struct tenant *t)
{
	if (t->user != NULL)
		return ("mapped");
	return (tenant_states[t->state]);
}

json_t *
tenant_to_json(const struct tenant *t)
{
	json_t	*o;

	o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:{s:I, s:I, s:I, "
	    "s:I}, s:{s:I, s:I}}", "name", t->name, "account", t->account,
	    "home", t->home, "state", tenant_state_name(t),
	    "created", (json_int_t)t->created, "active",
	    (json_int_t)t->active, "quota", "share", (json_int_t)t->q_share,
	    "mem", (json_int_t)t->q_mem, "jobs", (json_int_t)t->q_jobs,
	    "disk", (json_int_t)t->q_disk, "disk", "used",
	    (json_int_t)t->disk_used, "at", (json_int_t)t->disk_at);
	json_object_set_new(o, "user", t->user != NULL ?
	    json_string(t->user) : json_null());
	json_object_set_new(o, "uid", t->has_uid ?
	    json_integer(t->uid) : json_null());
	json_object_set_new(o, "gid", t->has_uid ?
	    json_integer(t->gid) : json_null());
	return (o);
}

static struct tenant *
tenant_new(const char *name)
{
	struct tenant	*t;

	t = xcalloc(1, sizeof *t);
	t->name = xstrdup(name);
	t->account = tenant_account_name(name);
	xasprintf(&t->home, "%s/%s", tenant_home_root(), t->account);
	t->created = clock_ms();
	TAILQ_INSERT_TAIL(&tenant_list, t, entry);
	return (t);
}

/* One entry of the file; a malformed one is left out, with a warning. */
static void
tenant_load_one(json_t *o)
{
	struct tenant	*t;
	const char	*name, *acct, *home, *state;
	json_t		*uid, *user;
	json_int_t	 cr = 0, ac = 0, qs = 0, qm = 0, qj = 0, qd = 0;
	json_int_t	 du = 0, da = 0;
	u_int		 i;

	if (json_unpack(o, "{s:s, s:s, s:s, s:s, s?I, s?I, s?{s?I, s?I, s?I, "
	    "s?I}, s?{s?I, s?I}}", "name", &name, "account", &acct, "home",
	    &home, "state", &state, "created", &cr, "active", &ac, "quota",
	    "share", &qs, "mem", &qm, "jobs", &qj, "disk", &qd, "disk", "used",
	    &du, "at", &da) != 0 || !token_owner_valid(name) || *home != '/' ||
	    strstr(home, "/..") != NULL || !tenant_account_ok(acct) ||
	    tenant_find(name) != NULL || qs < 0 || qm < 0 || qj < 0 ||
	    qd < 0 || du < 0) {
		log_warnx("%s: a malformed entry is left out", __func__);
		return;
	}
	t = tenant_new(name);
	free(t->account);
	t->account = xstrdup(acct);
	free(t->home);
	t->home = xstrdup(home);
	for (i = 0; i < nitems(tenant_states); i++) {
		if (strcmp(state, tenant_states[i]) == 0)
			t->state = (enum tenant_state)i;
	}
	if (strcmp(state, "mapped") == 0)
		t->state = TENANT_NONE;
	if ((user = json_object_get(o, "user")) != NULL &&
	    json_is_string(user))
		t->user = xstrdup(json_string_value(user));
	if ((uid = json_object_get(o, "uid")) != NULL &&
	    json_is_integer(uid) && json_integer_value(uid) > 0) {
		t->has_uid = 1;
		t->uid = (uid_t)json_integer_value(uid);
		t->gid = (gid_t)json_integer_value(json_object_get(o, "gid"));
	}
	t->created = cr;
	t->active = ac;
	t->q_share = (u_int)qs;
	t->q_mem = (uint64_t)qm;
	t->q_jobs = (u_int)qj;
	t->q_disk = (uint64_t)qd;
	t->disk_used = (uint64_t)du;
	t->disk_at = da;
}

/*
 * Adds the records of a tenants file's text; -1 if it is not one (what
 * was read before a malformed entry stays, the entry does not).
 */
int
tenants_parse(const char *text, size_t len)
{
	json_t		*root, *a, *o;
	json_error_t	 err;
	size_t		 i;
	int		 rc = -1;

	tenant_loaded = 1;
	if ((root = json_loadb(text, len, 0, &err)) != NULL &&
	    json_is_array(a = json_object_get(root, "tenants"))) {
		json_array_foreach(a, i, o)
			tenant_load_one(o);
		rc = 0;
	}
	json_decref(root);
	return (rc);
}

/* Forgets every record (the fuzzer's; the daemon keeps them). */
void
tenants_reset(void)
{
	struct tenant	*t;

	while ((t = TAILQ_FIRST(&tenant_list)) != NULL)
		tenant_forget(t);
	tenant_loaded = 0;
}

static void
tenants_load(void)
{
	char	*path, *text, *cause = NULL;
	size_t	 len;

	tenant_loaded = 1;
	path = tenant_path();
	if ((text = read_file(path, TENANT_FILE_MAX, &len, &cause)) == NULL) {
		free(cause);
		free(path);
		return;
	}
	if (tenants_parse(text, len) != 0)
		log_warnx("%s: %s: not a tenants file", __func__, path);
	free(text);
	free(path);
}

struct tenants *
tenants_all(void)
{
	if (!tenant_loaded)
		tenants_load();
	return (&tenant_list);
}

struct tenant *
tenant_find(const char *name)
{
	struct tenant	*t;

	TAILQ_FOREACH(t, tenants_all(), entry) {
		if (strcmp(t->name, name) == 0)
			return (t);
	}
	return (NULL);
}

/* name's record, made if it has none (not saved until tenants_save). */
struct tenant *
tenant_get(const char *name)
{
	struct tenant	*t;

	if ((t = tenant_find(name)) == NULL)
		t = tenant_new(name);
	return (t);
}

/* Drops t's record (saved by the caller). */
void
tenant_forget(struct tenant *t)
{
	TAILQ_REMOVE(&tenant_list, t, entry);
	free(t->name);
	free(t->account);
	free(t->home);
	free(t->user);
	free(t->make_error);
	free(t->end_error);
	free(t->subid_error);
	free(t);
}

void
tenants_save(void)
{
	struct tenant	*t;
	json_t		*a, *root;
	char		*path, *text, *cause = NULL;

	a = json_array();
	TAILQ_FOREACH(t, tenants_all(), entry)
		json_array_append_new(a, tenant_to_json(t));
	root = json_pack("{s:o}", "tenants", a);
	text = json_dumps(root, JSON_INDENT(1));
	path = tenant_path();
	if (write_file_atomic(path, text, strlen(text), 0600, &cause) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
	}
	free(path);
	free(text);
	json_decref(root);
}
