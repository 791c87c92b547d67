/*
 * hash.c: SHA-256 for the rest of gmux, so that OpenSSL's headers stay in
 * one place.  Digests are 32 bytes; hex forms are 64 lower-case characters.
 */

#include <string.h>

#include <openssl/evp.h>

#include "gmux.h"

/* Hashes len bytes at buf into out[HASH_LEN]; a digest failure is fatal. */
void
hash_sha256(const void *buf, size_t len, u_char *out)
{
	u_int	 n = HASH_LEN;

	if (EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) != 1 ||
	    n != HASH_LEN)
		fatalx("%s: EVP_Digest failed", __func__);
}

/* Writes the 64-character hex form of h[HASH_LEN] and a NUL into out. */
void
hash_hex(const u_char *h, char *out)
{
	static const char	 digits[] = "0123456789abcdef";
	u_int			 i;

	for (i = 0; i < HASH_LEN; i++) {
		out[i * 2] = digits[h[i] >> 4];
		out[i * 2 + 1] = digits[h[i] & 0xf];
	}
	out[HASH_HEX_LEN] = '\0';
}

static int
hash_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* Parses a 64-character hex digest; returns -1 if s is not one. */
int
hash_from_hex(const char *s, u_char *out)
{
	u_int	 i;
	int	 hi, lo;

	if (s == NULL || strlen(s) != HASH_HEX_LEN)
		return (-1);
	for (i = 0; i < HASH_LEN; i++) {
		hi = hash_nibble(s[i * 2]);
		lo = hash_nibble(s[i * 2 + 1]);
		if (hi < 0 || lo < 0)
			return (-1);
		out[i] = (u_char)(hi << 4 | lo);
	}
	return (0);
}
