/*
 * digest.c: SHA-256 as gmux uses it (blob addresses, certificate pins,
 * token hashes, the ledger's chain), lowercase hex, constant-time
 * comparison and random bytes.  OpenSSL's digest API stays behind these
 * few calls.  A digest is DIGEST_LEN bytes; its hex form fills DIGEST_HEX
 * (64 lowercase hex digits and a NUL).
 */

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "gmux.h"

static EVP_MD	*digest_md;

/* Fetched once: an implicit fetch on every init costs more than hashing. */
static const EVP_MD *
digest_sha256(void)
{
	if (digest_md != NULL)
		return (digest_md);
	/* No openssl.cnf (nothing in it for a digest), no cleanup at exit
	 * (freeing OpenSSL's tables costs a CLI command a millisecond), and
	 * not the legacy name tables of every cipher and digest: algorithms
	 * are fetched from the provider by name, and the first fetch would
	 * copy all those names into its own map. */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG|OPENSSL_INIT_NO_ATEXIT|
	    OPENSSL_INIT_NO_ADD_ALL_CIPHERS|OPENSSL_INIT_NO_ADD_ALL_DIGESTS,
	    NULL);
	if ((digest_md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		fatalx("SHA-256 is not available from OpenSSL");
	return (digest_md);
}

void
digest_init(struct digest *d)
{
	if ((d->ctx = EVP_MD_CTX_new()) == NULL)
		fatalx("EVP_MD_CTX_new failed");
	if (EVP_DigestInit_ex(d->ctx, digest_sha256(), NULL) != 1)
		fatalx("EVP_DigestInit_ex failed");
}

void
digest_update(struct digest *d, const void *buf, size_t len)
{
	if (EVP_DigestUpdate(d->ctx, buf, len) != 1)
		fatalx("EVP_DigestUpdate failed");
}

/* Writes the hex digest to hex (DIGEST_HEX bytes) and frees the context. */
void
digest_final(struct digest *d, char *hex)
{
	u_char	 md[DIGEST_LEN];
	u_int	 n;

	if (EVP_DigestFinal_ex(d->ctx, md, &n) != 1 || n != DIGEST_LEN)
		fatalx("EVP_DigestFinal_ex failed");
	EVP_MD_CTX_free(d->ctx);
	d->ctx = NULL;
	hex_encode(md, sizeof md, hex);
}

void
digest_abort(struct digest *d)
{
	EVP_MD_CTX_free(d->ctx);
	d->ctx = NULL;
}

/* Hashes len bytes at buf into out[DIGEST_LEN]. */
void
digest_bytes(const void *buf, size_t len, u_char *out)
{
	u_int	 n = DIGEST_LEN;

	if (EVP_Digest(buf, len, out, &n, digest_sha256(), NULL) != 1 ||
	    n != DIGEST_LEN)
		fatalx("%s: EVP_Digest failed", __func__);
}

/* Hashes len bytes at buf into hex[DIGEST_HEX]. */
void
digest_buf(const void *buf, size_t len, char *hex)
{
	u_char	 md[DIGEST_LEN];

	digest_bytes(buf, len, md);
	hex_encode(md, sizeof md, hex);
}

/*
 * Hashes what is left to read on fd; *size gets the byte count.  Returns 0,
 * or -1 with *cause if a read fails.
 */
int
digest_fd(int fd, char *hex, uint64_t *size, char **cause)
{
	static char	 buf[128 * 1024];
	struct digest	 d;
	ssize_t		 n;
	uint64_t	 total = 0;

	digest_init(&d);
	for (;;) {
		n = read(fd, buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			xasprintf(cause, "read: %s", strerror(errno));
			digest_abort(&d);
			return (-1);
		}
		if (n == 0)
			break;
		digest_update(&d, buf, (size_t)n);
		total += (uint64_t)n;
	}
	digest_final(&d, hex);
	if (size != NULL)
		*size = total;
	return (0);
}

void
hex_encode(const u_char *in, size_t len, char *out)
{
	static const char	 xd[] = "0123456789abcdef";
	size_t			 i;

	for (i = 0; i < len; i++) {
		out[2 * i] = xd[in[i] >> 4];
		out[2 * i + 1] = xd[in[i] & 0xf];
	}
	out[2 * len] = '\0';
}

static int
digest_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* Parses a hex digest into out[DIGEST_LEN]; -1 if s is not one. */
int
digest_from_hex(const char *s, u_char *out)
{
	u_int	 i;
	int	 hi, lo;

	if (s == NULL || strlen(s) != DIGEST_HEX - 1)
		return (-1);
	for (i = 0; i < DIGEST_LEN; i++) {
		hi = digest_nibble(s[i * 2]);
		lo = digest_nibble(s[i * 2 + 1]);
		if (hi < 0 || lo < 0)
			return (-1);
		out[i] = (u_char)(hi << 4 | lo);
	}
	return (0);
}

/*
 * A digest as gmux writes it: exactly 64 lowercase hex digits.  (Checked
 * for every entry of a stat cache and a manifest: the loop has no branch,
 * so the compiler can do it several bytes at a time.)
 */
int
digest_valid(const char *s)
{
	size_t	 i;
	u_int	 bad = 0;
	u_char	 c;

	if (strnlen(s, DIGEST_HEX) != DIGEST_HEX - 1)
		return (0);
	for (i = 0; i < DIGEST_HEX - 1; i++) {
		c = (u_char)s[i];
		bad |= (u_int)((u_char)(c - '0') > 9) &
		    (u_int)((u_char)(c - 'a') > 5);
	}
	return (bad == 0);
}

/* Compares two equal-length secrets (or their hashes) in constant time. */
int
digest_equal(const char *a, const char *b)
{
	return (CRYPTO_memcmp(a, b, DIGEST_HEX - 1) == 0);
}

/* Fills buf from the system's CSPRNG; dies if there is none. */
void
random_bytes(void *buf, size_t len)
{
	if (RAND_bytes(buf, (int)len) != 1)
		fatalx("no random bytes from OpenSSL");
}

/* base64url without padding (RFC 4648 section 5); out holds 4n/3+1. */
void
base64url_encode(const u_char *in, size_t len, char *out)
{
	static const char	 a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t			 i;
	uint32_t		 v;
	char			*o = out;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
		    in[i + 2];
		*o++ = a[v >> 18];
		*o++ = a[(v >> 12) & 63];
		*o++ = a[(v >> 6) & 63];
		*o++ = a[v & 63];
	}
	if (len - i == 1) {
		v = (uint32_t)in[i] << 16;
		*o++ = a[v >> 18];
		*o++ = a[(v >> 12) & 63];
	} else if (len - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		*o++ = a[v >> 18];
		*o++ = a[(v >> 12) & 63];
		*o++ = a[(v >> 6) & 63];
	}
	*o = '\0';
}
