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
 * tls_read, tls_write), so the CLI polls several hosts at once.
 */

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
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
	struct tls_pin	*p;
	X509		*leaf = X509_STORE_CTX_get0_cert(xs);
	EVP_PKEY	*key;

	ssl = X509_STORE_CTX_get_ex_data(xs,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	if (ssl == NULL || (p = SSL_get_app_data(ssl)) == NULL) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_UNSPECIFIED);
		return (0);
	}
	p->checked = 1;
	p->seen[0] = '\0';
	if (leaf == NULL || (key = X509_get0_pubkey(leaf)) == NULL ||
	    tls_key_pin(key, p->seen) != 0) {
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
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return (ctx);
}

struct tls_conn {
	SSL		*ssl;
	struct tls_pin	 pin;
	char		*host;		/* for messages */
	int		 want;		/* POLLIN or POLLOUT */
};

/*
 * Starts a pinned TLS client on the connected (non-blocking) socket fd;
 * host names the peer in messages and SNI.  Returns the connection (free
 * with tls_close; fd stays the caller's) or NULL with *cause.  The
 * handshake is driven by tls_handshake.
 */
struct tls_conn *
tls_client_open(int fd, const char *pin, const char *host, char **cause)
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
	SSL_set_app_data(t->ssl, &t->pin);
	SSL_set_connect_state(t->ssl);
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
		return (0);
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
	free(t);
}

/*
 * Returns the message for a failed pin check, or NULL if the pin did not
 * fail (the transport failed for another reason).  The caller frees it.
 */
char *
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
