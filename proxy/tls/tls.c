/*
 * HTTPS inspection's start and end: the CA and its bundle (ca.c), the
 * leaf cache (mint.c), the TLS contexts (session.c).  Inspection is
 * available only when all of them are.
 */
#include "config.h"

#include "log.h"
#include "tls/tls.h"

static int	ready;

/* 0: inspection available, or not asked for; -1: asked for and off. */
int
tls_init(const struct proxy_conf *conf)
{
	if (!conf->inspect)
		return 0;
	if (ca_init(conf) == -1 || mint_init(conf->leaf_cache) == -1 ||
	    session_init(conf) == -1) {
		log_warnx("HTTPS inspection is off: limited mode refuses HTTPS");
		tls_shutdown();
		return -1;
	}
	ready = 1;
	log_info("HTTPS inspection ready, clients trust %s", ca_bundle_path());
	return 0;
}

void
tls_shutdown(void)
{
	ready = 0;
	session_shutdown();
	mint_shutdown();
	ca_shutdown();
}

int
tls_ready(void)
{
	return ready;
}

const char *
tls_bundle_path(void)
{
	return ready ? ca_bundle_path() : NULL;
}

/* the CA's private key: execd hides it from the sandboxes it gives the bundle to */
const char *
tls_key_path(void)
{
	return ready ? ca_key_path() : NULL;
}
