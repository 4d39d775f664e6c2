/* The reference's --ws-auth flags, checked as it checks them and mapped onto conf. */
#ifndef EXECD_WS_AUTH_H
#define EXECD_WS_AUTH_H

struct ws_auth_opts {
	const char	*mode;		/* --ws-auth */
	const char	*token_file;	/* --ws-token-file */
	const char	*token_sha256;	/* --ws-token-sha256 */
	const char	*secret_file;	/* --ws-shared-secret-file */
	const char	*issuer;	/* --ws-issuer */
	const char	*audience;	/* --ws-audience */
	const char	*skew;		/* --ws-max-clock-skew-seconds */
};

/*
 * Exits with the reference's message on a bad combination.  A capability
 * token file becomes *token_file (execd's --token-file); a signed-bearer
 * configuration becomes conf.jwt.
 */
void	ws_auth_setup(const struct ws_auth_opts *o, const char **token_file);

#endif
