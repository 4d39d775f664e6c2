#!/bin/sh
# Fresh Debian 12, as root: install the build dependencies, build, and start
# execd-proxy and execd on loopback. Prints the URL a client connects to.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/install-deps.sh
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure -q
make -j2 >/dev/null
state=${EXECD_STATE:-/run/execd}
mkdir -p "$state"
chmod 0700 "$state"
if [ -x proxy/execd-proxy ] && proxy/execd-proxy -n >/dev/null 2>&1; then
	proxy/execd-proxy --control "$state/proxy.sock" --audit "$state/audit.log" &
	proxy_args="--proxy-control $state/proxy.sock"
else
	proxy_args=
fi
exec src/execd --listen "${EXECD_LISTEN:-ws://127.0.0.1:8765}" $proxy_args
