/* runtime/util/secret.c: the job secret and what is built on it: random
 * bytes from the kernel, HMAC-SHA256 (OpenSSL's libcrypto) and a
 * constant-time comparison. The rendezvous and the mesh (boot/) prove
 * knowledge of the key with these and encrypt what the rendezvous
 * answers (AES-256-GCM); shm names (transport/) are derived from the
 * key with them. docs/security.md has the threat model. */
#include "util/util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int loom_random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			LOOM_ERR("getrandom: %s", strerror(errno));
			return LOOM_ERR_SYSTEM;
		}
		p += r;
		n -= (size_t)r;
	}
	return LOOM_SUCCESS;
}

void loom_hmac(const uint8_t key[LOOM_KEY_LEN], const void *msg, size_t len,
	       uint8_t out[LOOM_MAC_LEN])
{
	unsigned int ol = LOOM_MAC_LEN;
	if (!HMAC(EVP_sha256(), key, LOOM_KEY_LEN, msg, len, out, &ol))
		memset(out, 0, LOOM_MAC_LEN); /* never matches a peer's MAC */
}

void loom_sha256(const void *msg, size_t len, uint8_t out[32])
{
	SHA256(msg, len, out);
}

/* one AES-256-GCM pass, in chunks of INT_MAX at most (EVP counts in int) */
static int aead(int seal, const uint8_t key[32], const uint8_t iv[12], const void *in, size_t len,
		void *out, uint8_t tag[LOOM_AEAD_TAG])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	const unsigned char *i = in;
	unsigned char *o = out, fin[16];
	int ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, key, iv, seal) == 1, n;
	while (ok && len) {
		int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
		ok = EVP_CipherUpdate(c, o, &n, i, chunk) == 1 && n == chunk;
		i += chunk;
		o += chunk;
		len -= (size_t)chunk;
	}
	if (ok && !seal)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, LOOM_AEAD_TAG, tag) == 1;
	if (ok)
		ok = EVP_CipherFinal_ex(c, fin, &n) == 1;
	if (ok && seal)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, LOOM_AEAD_TAG, tag) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

int loom_aead_seal(const uint8_t key[32], const uint8_t iv[12], const void *in, size_t len, void *out,
		   uint8_t tag[LOOM_AEAD_TAG])
{
	return aead(1, key, iv, in, len, out, tag);
}

int loom_aead_open(const uint8_t key[32], const uint8_t iv[12], const void *in, size_t len, void *out,
		   const uint8_t tag[LOOM_AEAD_TAG])
{
	uint8_t t[LOOM_AEAD_TAG];
	memcpy(t, tag, sizeof t);
	return aead(0, key, iv, in, len, out, t);
}

int loom_mac_equal(const uint8_t a[LOOM_MAC_LEN], const uint8_t b[LOOM_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, LOOM_MAC_LEN) == 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void loom_hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n; i++) {
		out[2 * i] = d[in[i] >> 4];
		out[2 * i + 1] = d[in[i] & 15];
	}
	out[2 * n] = 0;
}

size_t loom_hex_decode(const char *in, uint8_t *out, size_t n)
{
	size_t i;
	for (i = 0; i < 2 * n; i += 2) {
		int h = hexval(in[i]), l = h < 0 ? -1 : hexval(in[i + 1]);
		if (h < 0)
			return i;
		if (l < 0)
			return i + 1;
		out[i / 2] = (uint8_t)(h << 4 | l);
	}
	return (size_t)-1;
}

/* LOOM_JOB_SECRET: 32 to 128 hex digits (loom.so makes 32 per step). The
 * key is its SHA-256, so every accepted length gives a full-size key. */
int loom_job_key(uint8_t key[LOOM_KEY_LEN], int *have_secret)
{
	const char *v = getenv("LOOM_JOB_SECRET");
	uint8_t raw[64];
	size_t n, i;
	*have_secret = 0;
	if (!v || !*v) {
		/* a fixed, public key: the handshakes still run (one code path,
		 * framing and bounds checked), but they prove nothing */
		static const char pub[] = "loom: no LOOM_JOB_SECRET";
		SHA256((const unsigned char *)pub, sizeof pub - 1, key);
		return LOOM_SUCCESS;
	}
	n = strlen(v);
	if (n < 32 || n > 128 || n % 2) {
		LOOM_ERR("LOOM_JOB_SECRET has %zu characters: it must be 32 to 128 hex digits, an even number "
			 "(e.g. from: od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')", n);
		return LOOM_ERR_INVALID;
	}
	if ((i = loom_hex_decode(v, raw, n / 2)) != (size_t)-1) {
		LOOM_ERR("LOOM_JOB_SECRET: character %zu is not a hex digit", i + 1);
		return LOOM_ERR_INVALID;
	}
	SHA256(raw, n / 2, key);
	OPENSSL_cleanse(raw, sizeof raw);
	*have_secret = 1;
	return LOOM_SUCCESS;
}
