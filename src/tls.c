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
 */

#include <sys/stat.h>

#include <errno.h>
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
 * The evhttp_set_bevcb() callback: every accepted TCP connection gets an
 * OpenSSL bufferevent in the accepting state; evhttp sets its fd.  arg is
 * the context from tls_server_create.
 */
struct bufferevent *
tls_server_bev(struct event_base *base, void *arg)
{
	SSL	*ssl;

	if ((ssl = SSL_new(arg)) == NULL) {
		ERR_clear_error();
		return (NULL);
	}
	return (bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE));
}

/*
 * The whole certificate check of a pinned client: the leaf's key must hash
 * to the pin.  CAs, names and dates do not matter; the pin is the trust.
 */
static int
tls_pin_verify(X509_STORE_CTX *xs, void *arg)
{
	struct tls_pin	*p = arg;
	X509		*leaf = X509_STORE_CTX_get0_cert(xs);
	EVP_PKEY	*key;

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

/*
 * Makes a client context (an SSL_CTX) check the pin in p->want during the
 * handshake.  For libcurl's CURLOPT_SSL_CTX_FUNCTION (with
 * CURLOPT_SSL_VERIFYPEER and VERIFYHOST off: the pin replaces them), or
 * any OpenSSL client.  p must outlive the connections.
 */
int
tls_client_pin(void *sslctx, struct tls_pin *p)
{
	SSL_CTX	*ctx = sslctx;

	if (!digest_valid(p->want))
		return (-1);
	p->checked = p->mismatch = 0;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* VERIFY_PEER: with NONE a failed check would be ignored. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, tls_pin_verify, p);
	return (0);
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
