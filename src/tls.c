/*
 * tls.c: the host's TLS identity and both ends of pinned TLS.  The only
 * file that sees OpenSSL's key, certificate and SSL APIs.
 *
 * The host makes an EC P-256 key and a self-signed certificate once, under
 * $GMUX_HOME/tls (mode 0600).  The pin is the SHA-256 of the key's DER
 * SubjectPublicKeyInfo, so a certificate re-issued with the same key keeps
 * the pin.  Clients never consult CAs: they compare the pin inside the
 * handshake (the certificate verification callback), so a host that cannot
 * show the pinned key never sees a byte of the request, token included.
 * The client's side is non-blocking (tls_client_open, tls_handshake,
 * tls_read, tls_write), so the CLI polls several hosts at once.  It
 * resumes the session of an earlier full handshake where it can, checked
 * against the pin before it is offered and after it is resumed.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gmux.h"

#define TLS_SESSION_MAX	(64 * 1024)	/* a session file's size */

struct tls_identity {
	EVP_PKEY	*key;
	X509		*cert;
	char		 pin[DIGEST_HEX];
	char		*keypath;
	char		*certpath;
};

/* Returns OpenSSL's last error as an allocated string. */
static char *
tls_error(const char *what)
{
	char		 buf[256];
	char		*s;
	unsigned long	 e = ERR_get_error();

	if (e == 0)
		xasprintf(&s, "%s failed", what);
	else {
		ERR_error_string_n(e, buf, sizeof buf);
		xasprintf(&s, "%s: %s", what, buf);
	}
	ERR_clear_error();
	return (s);
}

/* The pin of a public key: hex SHA-256 of its DER SubjectPublicKeyInfo. */
static int
tls_key_pin(EVP_PKEY *key, char *pin)
{
	u_char	*der = NULL;
	int	 len;

	if ((len = i2d_PUBKEY(key, &der)) <= 0)
		return (-1);
	digest_buf(der, (size_t)len, pin);
	OPENSSL_free(der);
	return (0);
}

/*
 * The same pin, of a certificate's key: its SubjectPublicKeyInfo encoded
 * again as it came (OpenSSL 3 re-encoding an EVP_PKEY through its encoder
 * framework costs a client a good part of a millisecond).
 */
static int
tls_cert_pin(X509 *x, char *pin)
{
	X509_PUBKEY	*pk;
	u_char		*der = NULL;
	int		 len;

	if (x == NULL || (pk = X509_get_X509_PUBKEY(x)) == NULL ||
	    (len = i2d_X509_PUBKEY(pk, &der)) <= 0)
		return (-1);
	digest_buf(der, (size_t)len, pin);
	OPENSSL_free(der);
	return (0);
}

/* Writes a PEM object through a memory BIO with write_file_atomic. */
static int
tls_write_pem(const char *path, EVP_PKEY *key, X509 *cert, char **cause)
{
	BIO	*b;
	char	*data;
	long	 len;
	int	 ok, rc;

	if ((b = BIO_new(BIO_s_mem())) == NULL)
		fatalx("BIO_new failed");
	if (key != NULL)
		ok = PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL,
		    NULL);
	else
		ok = PEM_write_bio_X509(b, cert);
	if (!ok) {
		*cause = tls_error("PEM_write");
		BIO_free(b);
		return (-1);
	}
	len = BIO_get_mem_data(b, &data);
	rc = write_file_atomic(path, data, (size_t)len, 0600, cause);
	BIO_free(b);
	return (rc);
}

/* Issues a self-signed certificate for key; it is valid for 100 years. */
static X509 *
tls_issue(EVP_PKEY *key, char **cause)
{
	X509		*x;
	X509_NAME	*name;
	u_char		 serial[16];
	BIGNUM		*bn;
	char		 host[256];

	if ((x = X509_new()) == NULL)
		fatalx("X509_new failed");
	random_bytes(serial, sizeof serial);
	serial[0] &= 0x7f;	/* positive */
	bn = BN_bin2bn(serial, sizeof serial, NULL);
	if (bn == NULL || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ==
	    NULL)
		fatalx("serial number failed");
	BN_free(bn);
	if (gethostname(host, sizeof host) != 0 || *host == '\0')
		snprintf(host, sizeof host, "gmux");
	host[63] = '\0';	/* an X.509 CN holds at most 64 */
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -86400) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), 36500, 0, NULL) ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
	    (const u_char *)"gmux", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (u_char *)host, -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, key) ||
	    !X509_sign(x, key, EVP_sha256())) {
		*cause = tls_error("issuing the certificate");
		X509_free(x);
		return (NULL);
	}
	return (x);
}

static EVP_PKEY *
tls_read_key(const char *path, char **cause)
{
	FILE		*f;
	EVP_PKEY	*key;

	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (key == NULL)
		*cause = tls_error(path);
	return (key);
}

/* Returns the certificate at path if it is there and matches key. */
static X509 *
tls_read_cert(const char *path, EVP_PKEY *key)
{
	FILE	*f;
	X509	*x;

	if ((f = fopen(path, "re")) == NULL)
		return (NULL);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (x != NULL && X509_check_private_key(x, key) != 1) {
		X509_free(x);
		x = NULL;
	}
	ERR_clear_error();
	return (x);
}

/* (Re-)issues the certificate for id->key and writes it. */
static int
tls_reissue_cert(struct tls_identity *id, char **cause)
{
	X509	*x;

	if ((x = tls_issue(id->key, cause)) == NULL)
		return (-1);
	if (tls_write_pem(id->certpath, NULL, x, cause) != 0) {
		X509_free(x);
		return (-1);
	}
	X509_free(id->cert);
	id->cert = x;
	return (0);
}

/*
 * Loads the identity in dir (key.pem, cert.pem), making the key when it is
 * missing and create is set, and the certificate when it is missing or does
 * not match the key.  The key is written first, so a crash between the two
 * leaves a key whose certificate the next start issues: the pin holds.
 * Returns the identity (free with tls_identity_free) or NULL with *cause.
 */
struct tls_identity *
tls_identity_load(const char *dir, int create, char **cause)
{
	struct tls_identity	*id;

	if (mkdir_p(dir, 0700) != 0) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (NULL);
	}
	id = xcalloc(1, sizeof *id);
	xasprintf(&id->keypath, "%s/key.pem", dir);
	xasprintf(&id->certpath, "%s/cert.pem", dir);
	if (access(id->keypath, F_OK) != 0 && errno == ENOENT && create) {
		id->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
		if (id->key == NULL) {
			*cause = tls_error("making the key");
			goto fail;
		}
		if (tls_write_pem(id->keypath, id->key, NULL, cause) != 0)
			goto fail;
		log_info("%s: made a new key in %s", __func__, id->keypath);
	} else if ((id->key = tls_read_key(id->keypath, cause)) == NULL)
		goto fail;
	if ((id->cert = tls_read_cert(id->certpath, id->key)) == NULL &&
	    tls_reissue_cert(id, cause) != 0)
		goto fail;
	if (tls_key_pin(id->key, id->pin) != 0) {
		*cause = tls_error("encoding the public key");
		goto fail;
	}
	return (id);
fail:
	tls_identity_free(id);
	return (NULL);
}

/* Issues a new certificate for the same key (the pin does not change). */
int
tls_identity_reissue(struct tls_identity *id, char **cause)
{
	return (tls_reissue_cert(id, cause));
}

void
tls_identity_free(struct tls_identity *id)
{
	if (id == NULL)
		return;
	EVP_PKEY_free(id->key);
	X509_free(id->cert);
	free(id->keypath);
	free(id->certpath);
	free(id);
}

const char *
tls_identity_pin(const struct tls_identity *id)
{
	return (id->pin);
}

/*
 * The identity's key as DER SubjectPublicKeyInfo (what the pin hashes).
 * The caller frees it; NULL on failure.
 */
u_char *
tls_identity_spki(const struct tls_identity *id, size_t *len)
{
	u_char	*der = NULL, *out;
	int	 n;

	if ((n = i2d_PUBKEY(id->key, &der)) <= 0) {
		ERR_clear_error();
		return (NULL);
	}
	out = xmalloc((size_t)n);
	memcpy(out, der, (size_t)n);
	*len = (size_t)n;
	OPENSSL_free(der);
	return (out);
}

/*
 * A signature (ECDSA over SHA-256, DER) of data with the identity's key:
 * an announcement proves its sender holds the pinned key.  The caller
 * frees it; NULL on failure.
 */
u_char *
tls_identity_sign(const struct tls_identity *id, const void *data,
    size_t len, size_t *siglen)
{
	EVP_MD_CTX	*md;
	u_char		*sig = NULL;

	if ((md = EVP_MD_CTX_new()) == NULL)
		return (NULL);
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, id->key) == 1 &&
	    EVP_DigestSign(md, NULL, siglen, data, len) == 1) {
		sig = xmalloc(*siglen);
		if (EVP_DigestSign(md, sig, siglen, data, len) != 1) {
			free(sig);
			sig = NULL;
		}
	}
	EVP_MD_CTX_free(md);
	ERR_clear_error();
	return (sig);
}

/*
 * Whether sig is spki's signature of data (ECDSA P-256, SHA-256); fills
 * pin with spki's pin.  Returns 0 if it is, -1 if not or if spki is not
 * a P-256 key.
 */
int
tls_spki_verify(const u_char *spki, size_t spkilen, const void *data,
    size_t len, const u_char *sig, size_t siglen, char *pin)
{
	const u_char	*p = spki;
	EVP_PKEY	*key;
	EVP_MD_CTX	*md = NULL;
	int		 rc = -1;

	if (spkilen > 1024 || (key = d2i_PUBKEY(NULL, &p, (long)spkilen)) ==
	    NULL || p != spki + spkilen) {
		ERR_clear_error();
		return (-1);
	}
	if (!EVP_PKEY_is_a(key, "EC") || EVP_PKEY_get_bits(key) != 256)
		goto out;
	digest_buf(spki, spkilen, pin);
	if ((md = EVP_MD_CTX_new()) != NULL &&
	    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
	    EVP_DigestVerify(md, sig, siglen, data, len) == 1)
		rc = 0;
out:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return (rc);
}

/*
 * Returns a server context (an SSL_CTX, opaque to callers) for the
 * identity, TLS 1.2 or later; free it with tls_server_free.
 */
void *
tls_server_create(const struct tls_identity *id, char **cause)
{
	SSL_CTX	*ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		*cause = tls_error("SSL_CTX_new");
		return (NULL);
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* One session ticket a handshake: a client keeps one (tls.c's client
	 * side).  The keys that seal tickets live and die with the daemon. */
	SSL_CTX_set_num_tickets(ctx, 1);
	if (SSL_CTX_use_certificate(ctx, id->cert) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, id->key) != 1) {
		*cause = tls_error("loading the identity");
		SSL_CTX_free(ctx);
		return (NULL);
	}
	return (ctx);
}

void
tls_server_free(void *ctx)
{
	SSL_CTX_free(ctx);
}

/*
 * Each server connection may carry the caller's data, freed with the
 * connection (its SSL) by the function given to tls_server_data_free.
 */
static int	  tls_data_index = -1;
static void	(*tls_data_free)(void *);

static char	*tls_pin_error(const struct tls_pin *, const char *);

static void
tls_data_exfree(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	if (ptr != NULL && tls_data_free != NULL)
		tls_data_free(ptr);
}

void
tls_server_data_free(void (*fn)(void *))
{
	tls_data_free = fn;
	if (tls_data_index == -1 && (tls_data_index = SSL_get_ex_new_index(0,
	    NULL, NULL, NULL, tls_data_exfree)) == -1)
		fatalx("SSL_get_ex_new_index failed");
}

/*
 * For the evhttp_set_bevcb() callback: an accepted TCP connection's OpenSSL
 * bufferevent, in the accepting state (evhttp sets its fd), with data (see
 * tls_server_data_free) riding on it.  ctx is from tls_server_create.
 * Never NULL: evhttp would make a plain socket of it, and serve HTTP
 * without TLS on the TLS port.
 */
struct bufferevent *
tls_server_bev(struct event_base *base, void *ctx, void *data)
{
	struct bufferevent	*bev;
	SSL			*ssl;

	if ((ssl = SSL_new(ctx)) == NULL)
		fatalx("SSL_new failed");
	if (data != NULL)
		SSL_set_ex_data(ssl, tls_data_index, data);
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		fatalx("bufferevent_openssl_socket_new failed");
	return (bev);
}

struct tls_conn {
	SSL		*ssl;
	struct tls_pin	 pin;
	char		*host;		/* for messages */
	char		*session;	/* where its session is kept, or NULL */
	int		 want;		/* POLLIN or POLLOUT */
};

/*
 * The whole certificate check of a pinned client: the leaf's key must hash
 * to the pin.  CAs, names and dates do not matter; the pin is the trust.
 * The pin rides on the connection (SSL app data), so one context serves
 * every host.
 */
static int
tls_pin_verify(X509_STORE_CTX *xs, void *arg)
{
	SSL		*ssl;
	struct tls_conn	*t;
	struct tls_pin	*p;

	ssl = X509_STORE_CTX_get_ex_data(xs,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	if (ssl == NULL || (t = SSL_get_app_data(ssl)) == NULL) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_UNSPECIFIED);
		return (0);
	}
	p = &t->pin;
	p->checked = 1;
	p->seen[0] = '\0';
	if (tls_cert_pin(X509_STORE_CTX_get0_cert(xs), p->seen) != 0) {
		ERR_clear_error();
		X509_STORE_CTX_set_error(xs, X509_V_ERR_UNSPECIFIED);
		p->mismatch = 1;
		return (0);
	}
	if (!digest_equal(p->seen, p->want)) {
		X509_STORE_CTX_set_error(xs,
		    X509_V_ERR_APPLICATION_VERIFICATION);
		p->mismatch = 1;
		return (0);
	}
	X509_STORE_CTX_set_error(xs, X509_V_OK);
	p->mismatch = 0;
	return (1);
}

/*
 * The directory of session files, made 0700 if it is not: a session file
 * read by someone else would let them answer as the host.  0 if it is ours
 * and private.
 */
static int
tls_session_dir(const char *path)
{
	struct stat	 st;
	char		*dir, *slash;
	int		 rc = -1;

	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		goto out;
	*slash = '\0';
	if (mkdir_p(dir, 0700) != 0 || lstat(dir, &st) != 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		goto out;
	if ((st.st_mode & 077) != 0 && chmod(dir, 0700) != 0)
		goto out;
	rc = 0;
out:
	free(dir);
	return (rc);
}

/*
 * A session ticket came after a full handshake, whose certificate showed
 * the pinned key: it is kept in t->session for the next command to resume.
 * A resumed session is not written again: its ticket serves until the host
 * stops taking it (the daemon restarted, or the ticket's lifetime is over),
 * and then a full handshake brings a new one.  No fsync: a torn file fails
 * to decode and costs one full handshake.
 */
static int
tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tls_conn	*t = SSL_get_app_data(ssl);
	u_char		*der = NULL;
	char		*cause = NULL;
	int		 len;

	if (t == NULL || t->session == NULL || SSL_session_reused(ssl) ||
	    !t->pin.checked || t->pin.mismatch)
		return (0);
	if (tls_session_dir(t->session) != 0) {
		log_debug("%s: %s: not a private directory", __func__,
		    t->session);
		return (0);
	}
	if ((len = i2d_SSL_SESSION(sess, &der)) <= 0) {
		ERR_clear_error();
		return (0);
	}
	if (write_file_replace(t->session, der, (size_t)len, 0600,
	    &cause) != 0) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
	}
	OPENSSL_cleanse(der, (size_t)len);
	OPENSSL_free(der);
	return (0);	/* OpenSSL keeps its reference */
}

/* A new client context: TLS 1.2 or later, the pin as the whole check. */
static SSL_CTX *
tls_pinned_ctx(char **cause)
{
	SSL_CTX	*ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		*cause = tls_error("SSL_CTX_new");
		return (NULL);
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* A peer closing without close_notify is an end of stream: HTTP's
	 * own framing tells a whole reply from a cut one. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
	    SSL_OP_NO_RENEGOTIATION);
	/* VERIFY_PEER: with NONE a failed check would be ignored. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, tls_pin_verify, NULL);
	return (ctx);
}

/* The client context, made once: TLS 1.2 or later, the pin as the check. */
static SSL_CTX *
tls_client_ctx(char **cause)
{
	static SSL_CTX	*ctx;

	if (ctx != NULL)
		return (ctx);
	/* The system's openssl.cnf has nothing to say to a pinned client,
	 * and reading it costs most of a millisecond per command; nor do the
	 * legacy name tables of every cipher and digest. */
	OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG|OPENSSL_INIT_NO_ATEXIT|
	    OPENSSL_INIT_NO_ADD_ALL_CIPHERS|OPENSSL_INIT_NO_ADD_ALL_DIGESTS,
	    NULL);
	if ((ctx = tls_pinned_ctx(cause)) == NULL)
		return (NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Sessions are kept in files (tls_new_session), not in memory. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, tls_new_session);
	return (ctx);
}

/*
 * Reads the session file at path: a regular file of ours that no one else
 * may read (a session's secret lets whoever holds it answer as the host).
 * Returns it decoded, or NULL.
 */
static SSL_SESSION *
tls_read_session(const char *path)
{
	struct stat	 st;
	SSL_SESSION	*sess = NULL;
	const u_char	*p;
	char		*buf = NULL;
	size_t		 len = 0;
	int		 fd;

	if ((fd = open(path, O_RDONLY|O_NOFOLLOW|O_CLOEXEC)) == -1)
		return (NULL);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 077) == 0)
		buf = confine_read_fd(fd, TLS_SESSION_MAX, &len);
	close(fd);
	if (buf == NULL)
		return (NULL);
	p = (const u_char *)buf;
	sess = d2i_SSL_SESSION(NULL, &p, (long)len);
	OPENSSL_cleanse(buf, len);
	free(buf);
	ERR_clear_error();
	return (sess);
}

/*
 * Offers the session kept in t->session, if there is a live one whose
 * certificate shows the pinned key.  One that does not (a file of another
 * host or pin) is refused and removed: it is never offered.
 */
static void
tls_offer_session(struct tls_conn *t)
{
	SSL_SESSION	*sess;
	char		 pin[DIGEST_HEX];

	if ((sess = tls_read_session(t->session)) == NULL)
		return;
	if (tls_cert_pin(SSL_SESSION_get0_peer(sess), pin) != 0 ||
	    !digest_equal(pin, t->pin.want)) {
		log_debug("%s: %s: session refused, not of the pinned key",
		    __func__, t->host);
		unlink(t->session);
	} else if (SSL_SESSION_is_resumable(sess) &&
	    SSL_SESSION_get_time(sess) + SSL_SESSION_get_timeout(sess) >
	    (long)time(NULL))
		SSL_set_session(t->ssl, sess);
	SSL_SESSION_free(sess);
	ERR_clear_error();
}

/*
 * A resumed session shows no certificate.  What it proves is that the host
 * holds the secret of an earlier session with this client, host and pin,
 * one whose full handshake showed the pinned key (tls_new_session keeps
 * no other), or that whoever answers has read our session file (0600 in a
 * 0700 directory, beside remotes.json and its token, which is worth more).
 * The session offered was checked against the pin (tls_offer_session);
 * the one resumed is checked again, as cheap as it is, so that no path
 * through OpenSSL lets a resumption skip the pin.  0 if it holds.
 */
static int
tls_resumed_ok(struct tls_conn *t)
{
	struct tls_pin	*p = &t->pin;

	p->checked = 1;
	p->mismatch = tls_cert_pin(SSL_get0_peer_certificate(t->ssl),
	    p->seen) != 0 || !digest_equal(p->seen, p->want);
	if (p->mismatch && t->session != NULL)
		unlink(t->session);
	return (p->mismatch ? -1 : 0);
}

/*
 * Starts a pinned TLS client on the connected (non-blocking) socket fd;
 * host names the peer in messages and SNI.  session (may be NULL) is the
 * file where this host's session is kept (0600, named by host, port and
 * pin): a live one there is offered for resumption, and a new one is
 * written there.  Returns the connection (free with tls_close; fd stays
 * the caller's) or NULL with *cause.  The handshake is driven by
 * tls_handshake.
 */
struct tls_conn *
tls_client_open(int fd, const char *pin, const char *host,
    const char *session, char **cause)
{
	struct tls_conn	*t;
	SSL_CTX		*ctx;

	if (!digest_valid(pin)) {
		xasprintf(cause, "the pin is not a SHA-256");
		return (NULL);
	}
	if ((ctx = tls_client_ctx(cause)) == NULL)
		return (NULL);
	t = xcalloc(1, sizeof *t);
	memcpy(t->pin.want, pin, DIGEST_HEX);
	t->host = xstrdup(host);
	t->want = POLLOUT;
	if ((t->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(t->ssl, fd) != 1) {
		*cause = tls_error("SSL_new");
		tls_close(t);
		return (NULL);
	}
	SSL_set_app_data(t->ssl, t);
	SSL_set_connect_state(t->ssl);
	if (session != NULL) {
		t->session = xstrdup(session);
		tls_offer_session(t);
	}
	return (t);
}

/* Notes what an SSL call that did not finish waits for; 1 if it waits. */
static int
tls_retry(struct tls_conn *t, int r)
{
	switch (SSL_get_error(t->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		t->want = POLLIN;
		errno = EAGAIN;
		return (1);
	case SSL_ERROR_WANT_WRITE:
		t->want = POLLOUT;
		errno = EAGAIN;
		return (1);
	}
	return (0);
}

/*
 * Advances the handshake.  Returns 0 when it is done (the host showed the
 * pinned key), 1 if it waits (poll for tls_want), -1 with *cause.  A key
 * that is not the pinned one fails here, before any byte of a request has
 * been written.
 */
int
tls_handshake(struct tls_conn *t, char **cause)
{
	unsigned long	 e;
	char		 buf[256];
	int		 r;

	ERR_clear_error();
	if ((r = SSL_do_handshake(t->ssl)) == 1) {
		t->want = POLLIN;
		log_debug("%s: %s: %s", __func__, t->host,
		    SSL_session_reused(t->ssl) ? "session resumed" :
		    "full handshake");
		if (!SSL_session_reused(t->ssl) || tls_resumed_ok(t) == 0)
			return (0);
		*cause = tls_pin_error(&t->pin, t->host);
		return (-1);
	}
	if (tls_retry(t, r))
		return (1);
	if ((*cause = tls_pin_error(&t->pin, t->host)) != NULL) {
		ERR_clear_error();
		return (-1);
	}
	if ((e = ERR_get_error()) != 0) {
		ERR_error_string_n(e, buf, sizeof buf);
		xasprintf(cause, "%s: TLS handshake failed: %s", t->host, buf);
	} else
		xasprintf(cause, "%s: TLS handshake failed: %s", t->host,
		    errno != 0 ? strerror(errno) : "the host closed the "
		    "connection");
	ERR_clear_error();
	return (-1);
}

/* What the last call that returned EAGAIN waits for: POLLIN or POLLOUT. */
int
tls_want(const struct tls_conn *t)
{
	return (t->want);
}

/* Bytes already decrypted and waiting: poll() would not see them. */
size_t
tls_pending(const struct tls_conn *t)
{
	return ((size_t)SSL_pending(t->ssl));
}

/*
 * Reads as read(2) does: >0 bytes, 0 at the end of the stream, -1 with
 * errno (EAGAIN: poll for tls_want, EIO: the stream is broken).
 */
ssize_t
tls_read(struct tls_conn *t, void *buf, size_t len)
{
	int	 r, e;

	ERR_clear_error();
	if ((r = SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len)) >
	    0)
		return (r);
	if (tls_retry(t, r))
		return (-1);
	e = SSL_get_error(t->ssl, r);
	ERR_clear_error();
	if (e == SSL_ERROR_ZERO_RETURN)
		return (0);
	if (e != SSL_ERROR_SYSCALL || errno == 0)
		errno = EIO;
	return (-1);
}

/* Writes as write(2) does (partial writes allowed); -1 with errno. */
ssize_t
tls_write(struct tls_conn *t, const void *buf, size_t len)
{
	int	 r, e;

	if (len == 0)
		return (0);
	ERR_clear_error();
	if ((r = SSL_write(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len)) >
	    0)
		return (r);
	if (tls_retry(t, r))
		return (-1);
	e = SSL_get_error(t->ssl, r);
	ERR_clear_error();
	if (e != SSL_ERROR_SYSCALL || errno == 0)
		errno = EIO;
	return (-1);
}

/* Frees the connection (the socket is the caller's to close). */
void
tls_close(struct tls_conn *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t->host);
	free(t->session);
	free(t);
}

/*
 * Returns the message for a failed pin check, or NULL if the pin did not
 * fail (the transport failed for another reason).  The caller frees it.
 */
static char *
tls_pin_error(const struct tls_pin *p, const char *host)
{
	char	*s;

	if (!p->checked || !p->mismatch)
		return (NULL);
	xasprintf(&s, "%s presented a key whose pin is %s, not the pinned %s: "
	    "it may be an impostor (or the host's key was made again); "
	    "nothing was sent", host, *p->seen ? p->seen : "unreadable",
	    p->want);
	return (s);
}

/*
 * Members calling members (docs/cluster.md): a member's server asks every
 * client for a certificate, and takes any, or none; what a certificate
 * stands for is decided per request from its pin (cluster-peer.c).  The
 * handshake has proved the client holds the certificate's key.
 */
static int
tls_any_client(X509_STORE_CTX *xs, void *arg)
{
	X509_STORE_CTX_set_error(xs, X509_V_OK);
	return (1);
}

void
tls_server_ask_certificates(void *ctx)
{
	static const u_char	 sid[] = "gmux";

	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, tls_any_client, NULL);
	/* Without it, OpenSSL refuses to resume a session it verified. */
	SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
}

/*
 * The pin of the certificate the client of a server connection (bev is
 * tls_server_bev's) showed, in pin; -1 if it showed none.
 */
int
tls_bev_client_pin(struct bufferevent *bev, char *pin)
{
	SSL	*ssl;

	if (bev == NULL || (ssl = bufferevent_openssl_get_ssl(bev)) == NULL)
		return (-1);
	if (tls_cert_pin(SSL_get0_peer_certificate(ssl), pin) != 0) {
		ERR_clear_error();
		return (-1);
	}
	return (0);
}

/* The peer client's tls_conn goes with its SSL. */
static int	tls_peer_index = -1;

static void
tls_peer_exfree(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	struct tls_conn	*t = ptr;

	if (t == NULL)
		return;
	free(t->host);
	free(t);
}

/* The context a member calls other members with: its identity shown. */
static SSL_CTX *
tls_peer_ctx(const struct tls_identity *id, char **cause)
{
	static SSL_CTX	*ctx;
	static char	 pin[DIGEST_HEX];

	if (ctx != NULL && strcmp(pin, id->pin) == 0)
		return (ctx);
	SSL_CTX_free(ctx);
	if ((ctx = tls_pinned_ctx(cause)) == NULL)
		return (NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_use_certificate(ctx, id->cert) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, id->key) != 1) {
		*cause = tls_error("loading the identity");
		SSL_CTX_free(ctx);
		ctx = NULL;
		return (NULL);
	}
	memcpy(pin, id->pin, DIGEST_HEX);
	if (tls_peer_index == -1 && (tls_peer_index = SSL_get_ex_new_index(0,
	    NULL, NULL, NULL, tls_peer_exfree)) == -1)
		fatalx("SSL_get_ex_new_index failed");
	return (ctx);
}

/*
 * A client bufferevent (no socket yet: evhttp connects it) that shows the
 * identity id and checks, inside the handshake, that the host (named in
 * messages) shows the key whose pin is pin.  NULL with *cause.
 */
struct bufferevent *
tls_peer_bev(struct event_base *base, const struct tls_identity *id,
    const char *pin, const char *host, char **cause)
{
	struct bufferevent	*bev;
	struct tls_conn		*t;
	SSL_CTX			*ctx;
	SSL			*ssl;

	if (!digest_valid(pin)) {
		xasprintf(cause, "%s: the pin is not a SHA-256", host);
		return (NULL);
	}
	if ((ctx = tls_peer_ctx(id, cause)) == NULL)
		return (NULL);
	if ((ssl = SSL_new(ctx)) == NULL)
		fatalx("SSL_new failed");
	t = xcalloc(1, sizeof *t);
	t->ssl = ssl;
	memcpy(t->pin.want, pin, DIGEST_HEX);
	t->host = xstrdup(host);
	SSL_set_ex_data(ssl, tls_peer_index, t);
	SSL_set_app_data(ssl, t);
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE|
	    BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		fatalx("bufferevent_openssl_socket_new failed");
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return (bev);
}

/*
 * Why a peer connection's handshake failed, if it was the pin (the caller
 * frees it); NULL otherwise.
 */
char *
tls_peer_pin_error(struct bufferevent *bev)
{
	SSL		*ssl;
	struct tls_conn	*t;

	if (bev == NULL || (ssl = bufferevent_openssl_get_ssl(bev)) == NULL ||
	    (t = SSL_get_ex_data(ssl, tls_peer_index)) == NULL)
		return (NULL);
	return (tls_pin_error(&t->pin, t->host));
}
