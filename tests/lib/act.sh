# Shared by tests/activation/*.sh: TAP output, a temporary directory, daemons
# started in their own process groups and all killed at the end, a watchdog
# bounding the whole test, loopback ports chosen at run time.
# Sourced with $top_builddir, $top_srcdir and $PYTHON3 set by `make check`.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
: "${PYTHON3:=/usr/bin/python3}"
export PYTHONPATH="$top_srcdir/tests/lib${PYTHONPATH:+:$PYTHONPATH}"

EXECD_BIN=$(cd "$top_builddir/src" 2>/dev/null && pwd)/execd
ACT_CLIENT="$top_srcdir/tests/lib/act_client.py"
tap_n=0
tap_failed=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/execd-act.XXXXXX") || exit 99
# Everything this test starts has $tmp in its command line (execd runs as
# $tmp/bin/execd), which is how leftovers are found at the end.
mkdir "$tmp/bin"
ln -s "$EXECD_BIN" "$tmp/bin/execd"
EXECD="$tmp/bin/execd"
: >"$tmp/pgids"

ok() {	# ok STATUS DESCRIPTION [DIAG-FILE]
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2"
	else
		tap_failed=$((tap_failed + 1))
		echo "not ok $tap_n - $2"
		if [ -n "${3:-}" ] && [ -f "$3" ]; then
			sed -e 's/^/# /' "$3" | tail -n 30
		fi
	fi
}

skip() {	# skip DESCRIPTION REASON
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
}

skip_all() {
	echo "1..0 # SKIP $1"
	cleanup
	exit 0
}

# spawn LOG CMD...: start CMD as the leader of its own process group (so it and
# everything it starts can be killed at once); sets $spawned to its pid.
spawn() {
	log=$1
	shift
	setsid "$@" >"$log" 2>&1 </dev/null &
	spawned=$!
	echo "$spawned" >>"$tmp/pgids"
}

# killpg SIGNAL PGID (the shell's kill may not take a negative pid after --)
killpg() {
	/bin/kill -s "$1" -- "-$2" 2>/dev/null
}

stop_group() {	# stop_group PGID: TERM, then KILL after 5 s
	killpg TERM "$1" || return 0
	i=0
	while killpg 0 "$1" && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	killpg KILL "$1" || true
}

# The processes left with $tmp in their command line (none once all is stopped).
leftovers() {
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] || [ "${p#/proc/}" = "${watchdog_pid:-}" ] && continue
		cmd=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)
		case $cmd in
		*"$tmp/"*) echo "${p#/proc/} $cmd" ;;
		esac
	done
}

cleanup() {
	trap - EXIT INT TERM HUP
	# on_cleanup: a command the test sets to undo what it changed outside $tmp
	if [ -n "${on_cleanup:-}" ]; then
		eval "$on_cleanup"
		on_cleanup=
	fi
	[ -n "${watchdog_pid:-}" ] && killpg KILL "$watchdog_pid"
	while read -r pg; do
		stop_group "$pg"
	done <"$tmp/pgids"
	# by pid, only what this test started (found by $tmp in the command line)
	leftovers | while read -r pid rest; do
		kill -KILL "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}

# finish: stop every daemon; whatever a launcher started outside its process
# group (inetd, sshd sessions) gets SIGTERM by pid and must end; print the plan.
finish() {
	while read -r pg; do
		stop_group "$pg"
	done <"$tmp/pgids"
	: >"$tmp/pgids"
	leftovers | while read -r pid rest; do
		kill -TERM "$pid" 2>/dev/null
	done
	i=0
	while [ -n "$(leftovers)" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	leftovers >"$tmp/leftovers"
	[ -s "$tmp/leftovers" ]
	ok $((1 - $?)) "everything this test started has ended" "$tmp/leftovers"
	echo "1..$tap_n"
	cleanup
	[ $tap_failed -eq 0 ]
	exit $?
}

# watchdog SECONDS: bail out (and clean up) if the test takes longer; if the
# test itself is gone by then (killed), kill what it left behind.
watchdog() {
	trap 'echo "Bail out! timed out"; cleanup; exit 1' USR1
	setsid sh -c "sleep $1; kill -USR1 $$ 2>/dev/null && exit 0
		while read -r pg; do /bin/kill -s KILL -- -\$pg; done <'$tmp/pgids'
		rm -rf '$tmp'" >/dev/null 2>&1 </dev/null &
	watchdog_pid=$!
}

trap 'cleanup; exit 1' INT TERM HUP PIPE
trap 'cleanup' EXIT

# free_port ADDR: a TCP port free on ADDR right now.
free_port() {
	"$PYTHON3" -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "$1"
}

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
	i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null; do
		[ $i -ge $(($3 * 10)) ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
}

client() {	# client ARGS...: act_client.py, bounded
	timeout -k 5 90 "$PYTHON3" "$ACT_CLIENT" "$@"
}

[ -x "$EXECD_BIN" ] || { echo "1..0 # SKIP $EXECD_BIN not built"; rm -rf "$tmp"; exit 0; }
"$PYTHON3" -c 'import websockets' 2>/dev/null ||
	{ echo "1..0 # SKIP $PYTHON3 has no websockets module (Debian: python3-websockets)"; rm -rf "$tmp"; exit 0; }
