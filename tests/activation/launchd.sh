#!/bin/sh
# contrib/launchd on Linux: the plists are well-formed and say what execd
# expects (inetdCompatibility with --inetd; a "Listeners" socket for
# launch_activate_socket), execd takes their arguments, and the __APPLE__
# code of src/transport/activate.c, compiled against a fake launchd, takes its sockets.
. "$top_srcdir/tests/lib/act.sh"

watchdog 60
dir="$top_srcdir/contrib/launchd"
name=$(sed -n 's/^#define ACTIVATE_LAUNCHD_SOCKETS[[:space:]]*"\(.*\)"/\1/p' \
	"$top_srcdir/src/transport/activate.h")

# plist FILE: its ProgramArguments, one per line, after checking its shape
plist() {
	"$PYTHON3" - "$1" "$2" "$name" <<'EOF'
import plistlib, sys
path, kind, sockname = sys.argv[1:]
p = plistlib.load(open(path, "rb"))
args = p["ProgramArguments"]
assert p["Label"].startswith("org.execd."), "Label"
assert args[0] == "/usr/local/sbin/execd", "ProgramArguments[0]"
sock = p["Sockets"][sockname]
assert sock["SockNodeName"] == "127.0.0.1" and sock["SockType"] == "stream", "Sockets"
if kind == "inetd":
    assert p["inetdCompatibility"] == {"Wait": False}, "inetdCompatibility"
    assert "--inetd" in args, "--inetd"
else:
    assert "inetdCompatibility" not in p, "no inetdCompatibility"
    assert "--inetd" not in args and "--stdio" not in args, "socket activation: no mode flag"
    assert p.get("StandardErrorPath"), "StandardErrorPath for the log"
print("\n".join(args[1:]))
EOF
}

for kind in inetd listen; do
	case $kind in
	inetd) f="$dir/org.execd.execd.plist" ;;
	listen) f="$dir/org.execd.execd-listen.plist" ;;
	esac
	plist "$f" $kind >"$tmp/args" 2>"$tmp/err"
	ok $? "$(basename "$f"): well-formed, $kind shape, socket \"$name\" on 127.0.0.1" "$tmp/err"
	# shellcheck disable=SC2046
	"$EXECD" $(cat "$tmp/args") --version >"$tmp/out" 2>&1
	ok $? "$(basename "$f"): execd accepts its ProgramArguments" "$tmp/out"
done

stub="$top_builddir/tests/activate_launchd"
if [ -x "$stub" ]; then
	for case in none nokey error two many; do
		"$stub" $case >"$tmp/out" 2>&1
		rc=$?
		case $case in
		none | nokey) [ -s "$tmp/out" ] && rc=1 ;;
		error) grep -q 'launch_activate_socket Listeners: ' "$tmp/out" || rc=1 ;;
		esac
		case $case in
		none) what="not under launchd (ESRCH): no sockets, nothing logged" ;;
		nokey) what="plist without \"$name\" (ENOENT): no sockets, nothing logged" ;;
		error) what="launch_activate_socket fails: no sockets, a warning" ;;
		two) what="two listeners (IPv4, IPv6): both taken, close-on-exec, array freed" ;;
		many) what="more than 16: 16 taken, the rest closed" ;;
		esac
		ok $rc "launchd socket activation, $what" "$tmp/out"
	done
else
	skip "launchd socket activation" "$stub not built"
fi

finish
