/*
 * token.c: the host's bearer tokens.  Only SHA-256 hashes are stored (a
 * JSON file, mode 0600, replaced atomically under a lock so the daemon and
 * `gmux token` can both change it); a presented token is hashed and
 * compared with every stored hash in constant time.  Each token has an id
 * (to list and revoke it without showing it) and an owner name, which is
 * what the host's jobs and ledger record for requests that carry it.
 *
 * An invite is a token that is good for one thing only: trading it, over
 * the pinned connection, for a token of its own (POST /v1/join), as many
 * times as machines join, until it expires.  It is what the line a new
 * holder pastes carries, so that the token a machine keeps is never in a
 * command line (argv is readable by every user of that machine).
 *
 * File: {"tokens":[{"id":"t1","owner":"alice","sha256":HEX,
 *        "created":MS,"revoked":false[,"expires":MS][,"clusters":[...]]},
 *        ...]}
 * (expires: an invite, until then; clusters: token-grant.c).
 */

#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define TOKENS_MAX_FILE	(16 * 1024 * 1024)
#define TOKEN_BYTES	32
#define TOKEN_INVITE_MS	(24 * 3600 * 1000LL)	/* as kubeadm's bootstrap */

void
tokens_clear(struct tokens *t)
{
	u_int	 i;

	for (i = 0; i < t->n; i++) {
		free(t->v[i].id);
		free(t->v[i].owner);
		token_grants_clear(&t->v[i]);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* An owner is a user name: 1 to 64 of [A-Za-z0-9._-], not starting with -. */
int
token_owner_valid(const char *s)
{
	size_t	 i;

	for (i = 0; s[i] != '\0'; i++) {
		if (i >= 64 || !(isalnum((u_char)s[i]) || s[i] == '.' ||
		    s[i] == '_' || (s[i] == '-' && i != 0)))
			return (0);
	}
	return (i != 0);
}

static int
tokens_parse_one(json_t *o, struct token *tk, char **cause)
{
	const char	*id, *owner, *hash;
	char		*why = NULL;
	json_int_t	 created, expires = 0;
	int		 revoked;

	if (json_unpack(o, "{s:s, s:s, s:s, s:I, s:b, s?I}", "id", &id,
	    "owner", &owner, "sha256", &hash, "created", &created, "revoked",
	    &revoked, "expires", &expires) != 0 || expires < 0) {
		xasprintf(cause, "a token entry lacks a field");
		return (-1);
	}
	if (!digest_valid(hash) || !token_owner_valid(owner) ||
	    *id == '\0' || strlen(id) > 32) {
		xasprintf(cause, "token entry '%.32s' is malformed", id);
		return (-1);
	}
	if (token_grants_parse(o, tk, &why) != 0) {
		xasprintf(cause, "token entry '%.32s': %s", id, why);
		free(why);
		return (-1);
	}
	tk->id = xstrdup(id);
	tk->owner = xstrdup(owner);
	memcpy(tk->hash, hash, DIGEST_HEX);
	tk->created = created;
	tk->revoked = revoked;
	tk->expires = expires;
	return (0);
}

/* Parses the file's text into t (emptied first).  Returns 0 or -1. */
int
tokens_parse(const char *buf, size_t len, struct tokens *t, char **cause)
{
	json_t		*root, *arr, *o;
	json_error_t	 err;
	size_t		 i;
	int		 rc = -1;

	tokens_clear(t);
	if ((root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err)) ==
	    NULL) {
		xasprintf(cause, "line %d: %s", err.line, err.text);
		return (-1);
	}
	if ((arr = json_object_get(root, "tokens")) == NULL ||
	    !json_is_array(arr)) {
		xasprintf(cause, "no \"tokens\" array");
		goto out;
	}
	t->v = xcalloc(json_array_size(arr), sizeof *t->v);
	json_array_foreach(arr, i, o) {
		if (tokens_parse_one(o, &t->v[t->n], cause) != 0)
			goto out;
		t->n++;
	}
	rc = 0;
out:
	if (rc != 0)
		tokens_clear(t);
	json_decref(root);
	return (rc);
}

/* Notes which file was read, to notice when another replaces it. */
static void
tokens_note(struct tokens *t, const struct stat *st)
{
	t->dev = (uint64_t)st->st_dev;
	t->ino = (uint64_t)st->st_ino;
	t->size = (uint64_t)st->st_size;
	t->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
	    st->st_mtim.tv_nsec;
}

/* Reads the file (a missing file is no tokens) and notes its identity. */
static int
tokens_read(struct tokens *t, char **cause)
{
	struct stat	 st;
	char		*buf, *why = NULL;
	size_t		 len;
	int		 rc;

	if (stat(t->path, &st) != 0) {
		memset(&st, 0, sizeof st);
		tokens_note(t, &st);
		if (errno != ENOENT) {
			xasprintf(cause, "%s: %s", t->path, strerror(errno));
			return (-1);
		}
		tokens_clear(t);
		return (0);
	}
	tokens_note(t, &st);
	if ((buf = read_file(t->path, TOKENS_MAX_FILE, &len, cause)) == NULL)
		return (-1);
	rc = tokens_parse(buf, len, t, &why);
	free(buf);
	if (rc != 0) {
		xasprintf(cause, "%s: %s", t->path, why);
		free(why);
	}
	return (rc);
}

/* Opens the store at path; free it with tokens_free. */
struct tokens *
tokens_open(const char *path, char **cause)
{
	struct tokens	*t;

	t = xcalloc(1, sizeof *t);
	t->path = xstrdup(path);
	if (tokens_read(t, cause) != 0) {
		tokens_free(t);
		return (NULL);
	}
	return (t);
}

void
tokens_free(struct tokens *t)
{
	if (t == NULL)
		return;
	tokens_clear(t);
	free(t->path);
	free(t);
}

/* Rereads the file if someone (gmux token ...) replaced it. */
int
tokens_refresh(struct tokens *t, char **cause)
{
	struct stat	 st;
	struct tokens	 now;

	if (stat(t->path, &st) != 0)
		memset(&st, 0, sizeof st);
	tokens_note(&now, &st);
	if (now.dev == t->dev && now.ino == t->ino && now.size == t->size &&
	    now.mtime_ns == t->mtime_ns)
		return (0);
	return (tokens_read(t, cause));
}

static int
tokens_write(struct tokens *t, char **cause)
{
	struct stat	 st;
	json_t		*arr, *root, *o;
	char		*s;
	u_int		 i;
	int		 rc;

	arr = json_array();
	for (i = 0; i < t->n; i++) {
		o = json_pack("{s:s, s:s, s:s, s:I, s:b}", "id", t->v[i].id,
		    "owner", t->v[i].owner, "sha256", t->v[i].hash, "created",
		    (json_int_t)t->v[i].created, "revoked", t->v[i].revoked);
		if (t->v[i].expires != 0)
			json_object_set_new(o, "expires",
			    json_integer(t->v[i].expires));
		token_grants_json(&t->v[i], o);
		json_array_append_new(arr, o);
	}
	root = json_pack("{s:o}", "tokens", arr);
	s = json_dumps(root, JSON_INDENT(1));
	json_decref(root);
	rc = write_file_atomic(t->path, s, strlen(s), 0600, cause);
	free(s);
	if (rc == 0 && stat(t->path, &st) == 0)
		tokens_note(t, &st);
	return (rc);
}

/* Takes the store's lock and rereads it; returns the lock fd or -1. */
static int
tokens_lock(struct tokens *t, char **cause)
{
	char	*lock;
	int	 fd;

	xasprintf(&lock, "%s.lock", t->path);
	fd = open(lock, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
	if (fd == -1 || flock(fd, LOCK_EX) != 0) {
		xasprintf(cause, "%s: %s", lock, strerror(errno));
		if (fd != -1)
			close(fd);
		free(lock);
		return (-1);
	}
	free(lock);
	if (tokens_read(t, cause) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * Makes a token for owner, an invite if expires is not 0, granted the
 * clusters like is (if not NULL).  *secret gets the token itself
 * (allocated; it is shown once and never stored) and *id its id.
 * Returns 0 or -1.
 */
static int
tokens_make(struct tokens *t, const char *owner, int64_t expires,
    const struct token *like, char **secret, char **id, char **cause)
{
	u_char		 raw[TOKEN_BYTES];
	char		 text[TOKEN_BYTES * 2];
	struct token	*tk;
	u_int		 i, next = 1;
	int		 fd, rc;

	if (!token_owner_valid(owner)) {
		xasprintf(cause, "owner '%.64s' is not a user name (letters, "
		    "digits, '.', '_' and '-')", owner);
		return (-1);
	}
	if ((fd = tokens_lock(t, cause)) == -1)
		return (-1);
	for (i = 0; i < t->n; i++) {
		if (t->v[i].id[0] == 't' && (u_int)atoi(t->v[i].id + 1) >= next)
			next = (u_int)atoi(t->v[i].id + 1) + 1;
	}
	random_bytes(raw, sizeof raw);
	base64url_encode(raw, sizeof raw, text);
	t->v = xreallocarray(t->v, t->n + 1, sizeof *t->v);
	tk = &t->v[t->n++];
	memset(tk, 0, sizeof *tk);
	xasprintf(&tk->id, "t%u", next);
	tk->owner = xstrdup(owner);
	digest_buf(text, strlen(text), tk->hash);
	tk->created = clock_ms();
	tk->expires = expires;
	if (like != NULL)
		token_grants_copy(tk, like);
	if ((rc = tokens_write(t, cause)) == 0) {
		*secret = xstrdup(text);
		*id = xstrdup(tk->id);
	}
	explicit_bzero(raw, sizeof raw);
	explicit_bzero(text, sizeof text);
	close(fd);
	return (rc);
}

/* Makes a token for owner (see tokens_make). */
int
tokens_add(struct tokens *t, const char *owner, char **secret, char **id,
    char **cause)
{
	return (tokens_make(t, owner, 0, NULL, secret, id, cause));
}

/* Makes an invite for owner, good for TOKEN_INVITE_MS (tokens_make). */
int
tokens_invite(struct tokens *t, const char *owner, char **secret,
    char **id, char **cause)
{
	return (tokens_make(t, owner, clock_ms() + TOKEN_INVITE_MS, NULL,
	    secret, id, cause));
}

/*
 * Trades invite inv (as tokens_check found it) for a token of its owner's
 * own (tokens_make), granted the invite's clusters.  The invite stays good
 * for other machines until it expires or is revoked.
 */
int
tokens_join(struct tokens *t, const struct token *inv, char **secret,
    char **id, char **cause)
{
	struct token	 like;
	char		*owner;
	int		 rc;

	if (inv->expires == 0) {
		xasprintf(cause, "this is a token, not an invite: nothing to "
		    "trade");
		return (-1);
	}
	/* t is read again under the lock: inv goes */
	owner = xstrdup(inv->owner);
	memset(&like, 0, sizeof like);
	token_grants_copy(&like, inv);
	rc = tokens_make(t, owner, 0, &like, secret, id, cause);
	token_grants_clear(&like);
	free(owner);
	return (rc);
}

static struct token *
tokens_find(struct tokens *t, const char *id, char **cause)
{
	u_int	 i;

	for (i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].id, id) == 0)
			return (&t->v[i]);
	}
	xasprintf(cause, "no token %.32s", id);
	return (NULL);
}

/* Revokes token id; it stays listed (and its id is not reused). */
int
tokens_revoke(struct tokens *t, const char *id, char **cause)
{
	struct token	*tk;
	int		 fd, rc = -1;

	if ((fd = tokens_lock(t, cause)) == -1)
		return (-1);
	if ((tk = tokens_find(t, id, cause)) != NULL) {
		tk->revoked = 1;
		rc = tokens_write(t, cause);
	}
	close(fd);
	return (rc);
}

/*
 * Grants token id cluster cid (on), or takes the grant back, under the
 * file's lock (token_grants_set; own: the asking host's cluster or NULL).
 */
int
tokens_grant(struct tokens *t, const char *id, const char *cid, int on,
    const char *own, char **cause)
{
	struct token	*tk;
	int		 fd, rc = -1;

	if ((fd = tokens_lock(t, cause)) == -1)
		return (-1);
	if ((tk = tokens_find(t, id, cause)) != NULL &&
	    token_grants_set(tk, cid, on, own, cause) == 0)
		rc = tokens_write(t, cause);
	close(fd);
	return (rc);
}

/*
 * Returns [{"id","owner","created","revoked",...,"clusters"}...]: never
 * the hashes.  clusters: the list, or [own] for an entry without one
 * (own: the host's cluster; NULL: [] for those).
 */
json_t *
tokens_to_json(const struct tokens *t, const char *own)
{
	json_t	*arr = json_array(), *o;
	u_int	 i;

	for (i = 0; i < t->n; i++) {
		o = json_pack("{s:s, s:s, s:I, s:b, s:b, s:I, s:[]}", "id",
		    t->v[i].id, "owner", t->v[i].owner, "created",
		    (json_int_t)t->v[i].created, "revoked", t->v[i].revoked,
		    "invite", t->v[i].expires != 0, "expires",
		    (json_int_t)t->v[i].expires, "clusters");
		token_grants_json(&t->v[i], o);
		if (!t->v[i].granted && own != NULL)
			json_array_append_new(json_object_get(o, "clusters"),
			    json_string(own));
		json_array_append_new(arr, o);
	}
	return (arr);
}

/*
 * Returns the live token whose hash is the secret's, or NULL.  Every
 * stored hash is compared, in constant time, whichever matches.
 */
const struct token *
tokens_check(const struct tokens *t, const char *secret)
{
	char			 hash[DIGEST_HEX];
	const struct token	*found = NULL;
	int64_t			 now = clock_ms();
	u_int			 i;

	digest_buf(secret, strlen(secret), hash);
	for (i = 0; i < t->n; i++) {
		if (digest_equal(hash, t->v[i].hash) && !t->v[i].revoked &&
		    (t->v[i].expires == 0 || t->v[i].expires > now))
			found = &t->v[i];
	}
	return (found);
}

/*
 * The check at the top of every request that came over TCP.  peer is the
 * source address (see ratelimit_key), header the Authorization header or
 * NULL.  Returns 200 with *owner (allocated), or 401 or 429 with *cause
 * (and *retry_s for 429).  Failures count towards peer's limit; a blocked
 * peer is not even checked.
 */
int
tokens_authorize(struct tokens *t, struct ratelimit *rl, const char *peer,
    const char *header, int64_t now, char **owner, int *retry_s, char **cause)
{
	const struct token	*tk = NULL;
	char			*why = NULL;
	int64_t			 left;

	if ((left = ratelimit_check(rl, peer, now)) > 0) {
		*retry_s = (int)((left + 999) / 1000);
		xasprintf(cause, "too many failed attempts from %s; retry in "
		    "%ds", peer, *retry_s);
		return (429);
	}
	if (tokens_refresh(t, &why) != 0) {
		log_warnx("%s: %s", __func__, why);	/* keep the last good */
		free(why);
	}
	if (header != NULL && strncmp(header, "Bearer ", 7) == 0)
		tk = tokens_check(t, header + 7);
	if (tk == NULL) {
		ratelimit_fail(rl, peer, now);
		xasprintf(cause, "%s", header == NULL ? "a token is needed" :
		    "the token is wrong or revoked");
		return (401);
	}
	*owner = xstrdup(tk->owner);
	return (200);
}
