#include "config.h"

#include "http_req.h"

const struct rpc_method http_methods[] = {
	{ NULL, NULL, NULL },
};

void
http_req_init(void)
{
}

void
http_req_shutdown(void)
{
}
