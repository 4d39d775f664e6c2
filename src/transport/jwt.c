/*
 * HS256 JWT bearer tokens, checked as the reference checks them: any fault
 * in the shape, the header, the signature or a claim's type is "invalid
 * websocket jwt"; a sound token outside its time window or for another
 * issuer or audience gets the matching refusal.  No libcrypto here: the
 * MAC comes from util/crypto.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "transport/jwt.h"
#include "util/crypto.h"

static const char JWT_INVALID[] = "invalid websocket jwt";
static const char JWT_EXPIRED[] = "expired websocket jwt";
static const char JWT_IMMATURE[] = "websocket jwt is not valid yet";
static const char JWT_ISSUER[] = "websocket jwt issuer mismatch";
static const char JWT_AUDIENCE[] = "websocket jwt audience mismatch";

static int
b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * Unpadded base64url, strictly: no '=', no stray characters, and the bits
 * past the last whole byte must be zero (one text, one encoding).  out must
 * hold len * 3 / 4 bytes.  Returns the byte count or -1.
 */
static ssize_t
b64url_decode(const char *s, size_t len, unsigned char *out)
{
	uint32_t	acc = 0;
	size_t		i, n = 0;
	int		bits = 0, v;

	if (len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		if ((v = b64url_value((unsigned char)s[i])) < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)
		return -1;
	return (ssize_t)n;
}

/*
 * The JSON text with every number that jansson cannot hold (an integer
 * outside int64_t, a real that overflows) replaced by 1.5: serde, in the
 * reference, skips such a number in a claim it does not read, and finds a
 * number that is no whole int64 in exp or nbf invalid; 1.5 is that, too.
 * out holds len bytes at least; its length is returned.
 */
static size_t
tame_numbers(const char *in, size_t len, char *out)
{
	size_t	 i = 0, o = 0, j;
	int	 instr = 0, real;
	char	 num[64], *end;

	while (i < len) {
		if (instr && in[i] == '\\' && i + 1 < len) {
			/* an escape and what it escapes, copied as they are */
			out[o++] = in[i++];
			out[o++] = in[i++];
			continue;
		}
		if (instr || (in[i] != '-' && (in[i] < '0' || in[i] > '9'))) {
			if (in[i] == '"')
				instr = !instr;
			out[o++] = in[i++];
			continue;
		}
		for (j = i, real = 0; j < len && strchr("0123456789+-.eE", in[j]) != NULL; j++)
			real |= in[j] == '.' || in[j] == 'e' || in[j] == 'E';
		errno = 0;
		if (j - i < sizeof(num)) {
			memcpy(num, in + i, j - i);
			num[j - i] = '\0';
			if (real)
				(void)strtod(num, &end);
			else
				(void)strtoll(num, &end, 10);
		}
		if (j - i >= sizeof(num) || errno == ERANGE) {
			memcpy(out + o, "1.5", 3);
			o += 3;
		} else {
			memcpy(out + o, in + i, j - i);
			o += j - i;
		}
		i = j;
	}
	return o;
}

/* JSON text into one object, numbers jansson cannot hold tamed; NULL when it is none. */
static json_t *
load_object(const char *buf, size_t n)
{
	json_error_t	 err;
	json_t		*o;
	char		*tamed;

	o = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &err);
	if (o == NULL && (strstr(err.text, "too big") != NULL ||
	    strstr(err.text, "overflow") != NULL) && (tamed = malloc(n + 1)) != NULL) {
		o = json_loadb(tamed, tame_numbers(buf, n, tamed), JSON_REJECT_DUPLICATES, NULL);
		free(tamed);
	}
	if (o != NULL && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* A base64url segment holding one JSON object; NULL when it is not. */
static json_t *
segment_object(const char *s, size_t len)
{
	unsigned char	*buf;
	ssize_t		 n;
	json_t		*o;

	if ((buf = malloc(len * 3 / 4 + 1)) == NULL)
		return NULL;
	if ((n = b64url_decode(s, len, buf)) < 0) {
		free(buf);
		return NULL;
	}
	o = load_object((const char *)buf, (size_t)n);
	free(buf);
	return o;
}

static int
signature_ok(const struct jwt_conf *c, const char *signed_part, size_t slen,
    const char *sig, size_t siglen)
{
	unsigned char	mac[SHA256_LEN], got[SHA256_LEN + 3];

	if (siglen * 3 / 4 > sizeof(got) ||
	    b64url_decode(sig, siglen, got) != SHA256_LEN)
		return 0;
	if (crypto_hmac_sha256(c->secret, c->secret_len, signed_part, slen, mac) == -1)
		return 0;
	return crypto_equal(mac, got, SHA256_LEN);
}

static int
header_ok(json_t *h)
{
	json_t	*alg = json_object_get(h, "alg");

	return json_is_string(alg) && strcmp(json_string_value(alg), "HS256") == 0;
}

/* A NumericDate claim: absent (0), a whole number of seconds (1), else -1. */
static int
numeric_date(json_t *claims, const char *name, int64_t *v)
{
	json_t	*j = json_object_get(claims, name);

	if (j == NULL || (json_is_null(j) && strcmp(name, "nbf") == 0))
		return 0;
	if (!json_is_integer(j))
		return -1;
	*v = json_integer_value(j);
	return 1;
}

/* now - skew and now + skew, held inside int64_t */
static void
window(time_t now, uint64_t skew, int64_t *lo, int64_t *hi)
{
	int64_t	t = (int64_t)now;

	if (skew > (uint64_t)INT64_MAX) {
		*lo = INT64_MIN;
		*hi = INT64_MAX;
		return;
	}
	*lo = t - (int64_t)skew;
	*hi = t > INT64_MAX - (int64_t)skew ? INT64_MAX : t + (int64_t)skew;
}

static const char *
check_times(const struct jwt_conf *c, json_t *claims, time_t now)
{
	int64_t	exp = 0, nbf = 0, lo, hi;
	int	has_nbf;

	if (numeric_date(claims, "exp", &exp) != 1 ||
	    (has_nbf = numeric_date(claims, "nbf", &nbf)) == -1)
		return JWT_INVALID;
	window(now, c->skew, &lo, &hi);
	if (exp < lo)
		return JWT_EXPIRED;
	if (has_nbf && nbf > hi)
		return JWT_IMMATURE;
	return NULL;
}

static const char *
check_issuer(const struct jwt_conf *c, json_t *claims)
{
	json_t	*iss = json_object_get(claims, "iss");

	if (iss != NULL && !json_is_string(iss) && !json_is_null(iss))
		return JWT_INVALID;
	if (c->issuer == NULL)
		return NULL;
	if (!json_is_string(iss) || strcmp(json_string_value(iss), c->issuer) != 0)
		return JWT_ISSUER;
	return NULL;
}

static const char *
check_audience(const struct jwt_conf *c, json_t *claims)
{
	json_t	*aud = json_object_get(claims, "aud"), *e;
	size_t	 i;
	int	 found = 0;

	if (json_is_array(aud)) {
		json_array_foreach(aud, i, e) {
			if (!json_is_string(e))
				return JWT_INVALID;
			if (c->audience != NULL &&
			    strcmp(json_string_value(e), c->audience) == 0)
				found = 1;
		}
	} else if (json_is_string(aud)) {
		found = c->audience != NULL &&
		    strcmp(json_string_value(aud), c->audience) == 0;
	} else if (aud != NULL && !json_is_null(aud))
		return JWT_INVALID;
	if (c->audience != NULL && !found)
		return JWT_AUDIENCE;
	return NULL;
}

static const char *
check_claims(const struct jwt_conf *c, json_t *claims, time_t now)
{
	const char	*err;
	json_t		*sub = json_object_get(claims, "sub");

	/*
	 * The reference reads sub as a string and lets a scalar of another
	 * type pass, but a structure breaks its reading of the claims.
	 */
	if (json_is_object(sub) || json_is_array(sub))
		return JWT_INVALID;
	if ((err = check_issuer(c, claims)) == JWT_INVALID ||
	    (err = check_audience(c, claims)) == JWT_INVALID)
		return JWT_INVALID;
	if ((err = check_times(c, claims, now)) != NULL)
		return err;
	if ((err = check_issuer(c, claims)) != NULL)
		return err;
	return check_audience(c, claims);
}

const char *
jwt_check(const struct jwt_conf *c, const char *tok, size_t len, time_t now)
{
	const char	*dot1, *dot2, *end = tok + len, *err = JWT_INVALID;
	json_t		*head = NULL, *claims = NULL;

	if ((dot1 = memchr(tok, '.', len)) == NULL ||
	    (dot2 = memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1))) == NULL ||
	    memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL)
		return JWT_INVALID;
	if ((head = segment_object(tok, (size_t)(dot1 - tok))) == NULL || !header_ok(head))
		goto done;
	if (!signature_ok(c, tok, (size_t)(dot2 - tok), dot2 + 1, (size_t)(end - dot2 - 1)))
		goto done;
	if ((claims = segment_object(dot1 + 1, (size_t)(dot2 - dot1 - 1))) == NULL)
		goto done;
	err = check_claims(c, claims, now);
done:
	json_decref(head);
	json_decref(claims);
	return err;
}
