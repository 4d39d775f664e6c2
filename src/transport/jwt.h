/*
 * Signed bearer tokens (HS256 JWT) on the WebSocket upgrade, as the
 * reference's --ws-auth signed-bearer-token checks them.
 */
#ifndef EXECD_JWT_H
#define EXECD_JWT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define JWT_SECRET_MIN	32

struct jwt_conf {
	unsigned char	*secret;
	size_t		 secret_len;
	const char	*issuer;	/* NULL: any */
	const char	*audience;	/* NULL: any */
	uint64_t	 skew;		/* seconds, default 30 */
};

/*
 * Check the token (not NUL-terminated) at time now.  NULL when it is good,
 * otherwise the reference's refusal text for the 401 body.
 */
const char	*jwt_check(const struct jwt_conf *c, const char *tok, size_t len,
		    time_t now);

#endif
