#!/bin/sh
# Fresh Debian 12, as root: install the build dependencies, build, and start
# execd-proxy (built-in configuration) and execd on loopback. Prints the URL
# a client connects to; Ctrl-C stops both.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/install-deps.sh
[ -x configure ] || autoreconf -fi
# an in-tree configuration (older checkouts made one) would stop every
# out-of-tree build: clean it away first
[ ! -f config.status ] || make distclean >/dev/null
# built out of tree, in a folder of its own: contrib/run-tests.sh uses others
build=$top/_build/quickstart
mkdir -p "$build"
(cd "$build" && { [ -f Makefile ] || "$top/configure" -q; } && make -j2 >/dev/null)
state=${EXECD_STATE:-/run/execd}
mkdir -p "$state"
chmod 0700 "$state"
"$build/proxy/execd-proxy" -s "$state/proxy.sock" 2>>"$state/proxy.log" &
proxy=$!
trap 'kill $proxy 2>/dev/null' EXIT INT TERM
# wait (bounded) for the control socket before execd registers processes
i=0
while [ ! -S "$state/proxy.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
echo "execd-proxy: audit and log in $state/proxy.log" >&2
"$build/src/execd" --listen "${EXECD_LISTEN:-ws://127.0.0.1:8765}" --state-dir "$state" \
	--proxy-control "$state/proxy.sock"
