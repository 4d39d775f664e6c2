#!/bin/sh
# Install everything execd needs to build and to run its test suite on Debian 12.
# Usage (as root): sh contrib/install-deps.sh [--with-reference]
set -eu
export DEBIAN_FRONTEND=noninteractive
pkgs="build-essential autoconf automake pkg-config libwslay-dev libjansson-dev \
libc-ares-dev libcurl4-openssl-dev libseccomp-dev libssl-dev \
python3 python3-websockets socat curl mandoc procps iproute2 \
systemd xinetd openssh-server openssh-client dnsmasq-base tinyproxy clang libclang-rt-14-dev \
libbsd0 libevent-2.1-7 libtirpc3 libwrap0"
if ! dpkg -s $pkgs >/dev/null 2>&1; then
	apt-get update -q
	apt-get install -y -q --no-install-recommends $pkgs
fi
# openbsd-inetd conflicts with xinetd (both provide inet-superserver), so the
# inetd test runs it unpacked here, never installed (its libraries are above).
inetd_dir=/opt/execd-test/openbsd-inetd
if [ ! -x $inetd_dir/usr/sbin/inetd ]; then
	dl=$(mktemp -d)
	chmod 755 "$dl"
	if (cd "$dl" && apt-get download -q openbsd-inetd >/dev/null 2>&1); then
		mkdir -p $inetd_dir && dpkg-deb -x "$dl"/openbsd-inetd_*.deb $inetd_dir
	else
		echo "install-deps: openbsd-inetd not fetched; the inetd test checks only its syntax" >&2
	fi
	rm -rf "$dl"
fi
# The reference exec-server the differential tests and benchmarks compare with.
ref=/opt/codex-ref
if [ "${1:-}" = --with-reference ] && ! ls $ref/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex >/dev/null 2>&1; then
	if command -v npm >/dev/null 2>&1; then
		mkdir -p $ref && (cd $ref && npm install --no-audit --no-fund @openai/codex@0.169.0) ||
			echo "install-deps: the reference could not be installed; its tests will be skipped" >&2
	fi
fi
# inetd/xinetd/sshd/dnsmasq/tinyproxy are used by tests only: never leave them running as services.
for s in xinetd ssh tinyproxy; do
	service "$s" stop >/dev/null 2>&1 || true
done
