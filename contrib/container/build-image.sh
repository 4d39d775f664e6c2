#!/bin/sh
# Build the execd container image from this project's own build, without a
# base image: a root filesystem holding execd, execd-proxy, the shared
# libraries they (and the few tools below) load, and the mount points a
# container and the per-request sandbox need; then `podman import`.
#
# usage: build-image.sh [-t TAG] [-o TARBALL] BUILDDIR
#   BUILDDIR  a configured and built tree (BUILDDIR/src/execd,
#             BUILDDIR/proxy/execd-proxy)
#   -t TAG    the image name (default localhost/execd:latest)
#   -o FILE   write the root filesystem tarball to FILE and do not import
#             it (for `docker import`, or a registry push done elsewhere)
#
# One image serves both containers of the Pod (see doc/deployment.md): execd and
# execd-proxy share libc, libcrypto and libjansson, so two images would
# carry those twice and be pulled twice by every node.
set -eu

tag=localhost/execd:latest
out=
while getopts t:o: opt; do
	case $opt in
	t) tag=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: $0 [-t TAG] [-o TARBALL] BUILDDIR" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-t TAG] [-o TARBALL] BUILDDIR" >&2; exit 2; }
build=$1
for b in src/execd proxy/execd-proxy; do
	[ -x "$build/$b" ] || { echo "$0: $build/$b is not built" >&2; exit 1; }
done
[ -n "$out" ] || command -v podman >/dev/null 2>&1 ||
	{ echo "$0: podman not found (or give -o TARBALL)" >&2; exit 1; }

# The commands the image offers: /bin/sh, execd's default shell and the one
# an agent's commands run under; curl, whose library execd links already
# (http/request), to reach the network through the proxy; and the handful of
# tools a `kubectl exec` needs to look around.  Nothing else: an agent's own
# tools (git, compilers) belong in a workspace image that copies these two
# binaries in, the same way.
tools="/bin/sh /usr/bin/curl /bin/cat /bin/ls /usr/bin/env /bin/sleep"

root=$(mktemp -d "${TMPDIR:-/tmp}/execd-rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT INT TERM HUP
chmod 755 "$root"

# put FILE DEST MODE: a regular file (symlinks resolved) at DEST in the image
put() {
	mkdir -p "$root$(dirname "$2")"
	cp -L "$1" "$root$2"
	chmod "$3" "$root$2"
}

put "$build/src/execd" /usr/sbin/execd 755
put "$build/proxy/execd-proxy" /usr/sbin/execd-proxy 755
# the debugging information stays in the build tree
if command -v strip >/dev/null 2>&1; then
	strip --strip-unneeded "$root/usr/sbin/execd" "$root/usr/sbin/execd-proxy"
fi
for t in $tools; do
	put "$t" "$t" 755
done

# Every library ldd names (at the path the loader looks for it) and the
# loader itself, at the path the binaries have as their interpreter.
for b in "$root/usr/sbin/execd" "$root/usr/sbin/execd-proxy" $(for t in $tools; do echo "$root$t"; done); do
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print "loader", $1 }'
done | sort -u | while read -r lib loader; do
	# the kernel executes the loader: it needs its x bits
	if [ -n "$loader" ]; then
		put "$loader" "$loader" 755
	else
		put "$lib" "$lib" 644
	fi
done

# What execd opens itself at first use, which ldd does not name: libyaml
# (skill metadata in capabilities/discoverV2).  libcurl and libcrypto are
# there already, for curl and execd-proxy.
for so in libyaml-0.so.2; do
	lib=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64/ { print $NF; exit }')
	[ -n "$lib" ] && put "$lib" "$lib" 644
done

# The CA bundle, for https through http/request and curl.
[ -f /etc/ssl/certs/ca-certificates.crt ] &&
	put /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt 644

# One unprivileged user, uid and gid 10001, for both daemons: execd-proxy
# answers its control socket only to its own uid (SO_PEERCRED), so both
# containers run as it.  Its home is the workspace volume.
mkdir -p "$root/etc"
printf 'root:x:0:0:root:/root:/bin/sh\nexecd:x:10001:10001:execd:/workspace:/bin/sh\n' \
	>"$root/etc/passwd"
printf 'root:x:0:\nexecd:x:10001:\n' >"$root/etc/group"
printf 'hosts: files dns\npasswd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
chmod 644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf"

# Mount points: the runtime mounts /proc, /dev, /sys, /etc/hosts and
# /etc/resolv.conf; the Pod mounts /tmp, /workspace, the proxy's control
# directory /run/execd-proxy, the token /etc/execd and the proxy's
# configuration /etc/execd-proxy.  The sandbox makes its namespaces from
# these (a managed network needs nothing more; a restricted file system
# binds and mounts tmpfs over paths that exist).
for d in proc dev sys tmp run/execd-proxy etc/execd etc/execd-proxy workspace root; do
	mkdir -p "$root/$d"
done
chmod 1777 "$root/tmp"
chmod 700 "$root/root"
: >"$root/etc/hosts"
: >"$root/etc/resolv.conf"
chmod 644 "$root/etc/hosts" "$root/etc/resolv.conf"

# Owned by root, but for the directories the unprivileged user writes in
# when no volume is mounted there.  Not as root, everything is root's in the
# tarball and those directories must come from volumes (as in the Pod).
tarball=${out:-$root.tar}
if [ "$(id -u)" -eq 0 ]; then
	chown -R 0:0 "$root"
	chown 10001:10001 "$root/workspace" "$root/run/execd-proxy"
	tar --numeric-owner -C "$root" -cf "$tarball" .
else
	tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$tarball" .
fi
if [ -n "$out" ]; then
	echo "$out"
	exit 0
fi
# USER 10001 as a number: a runtime checking runAsNonRoot cannot resolve names
podman import -q \
	--change 'USER=10001:10001' \
	--change 'WORKDIR=/workspace' \
	--change 'ENV=PATH=/usr/sbin:/usr/bin:/bin' \
	--change 'ENTRYPOINT=["/usr/sbin/execd"]' \
	--change 'EXPOSE=7681/tcp' \
	--message "execd and execd-proxy" \
	"$tarball" "$tag" >/dev/null
rm -f "$tarball"
echo "$tag"
