#!/bin/sh
# contrib/inetd: the xinetd service file run by a real xinetd, the inetd.conf
# line by a real openbsd-inetd when one is unpacked (it conflicts with xinetd,
# see contrib/install-deps.sh), else checked for syntax.  Both launchers put
# the socket on stderr too: execd must log elsewhere, even at debug level.
. "$top_srcdir/tests/lib/act.sh"

watchdog 120
user=$(id -un)
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$token" >"$tmp/token"
mkdir "$tmp/run"
export RUNTIME_DIRECTORY="$tmp/run"

# session ADDR PORT WHO: what a client sees from one execd-per-connection launcher
session() {
	url="ws://$1:$2"
	client ws "$url/$token" >"$tmp/out" 2>&1
	ok $? "$3: WebSocket session with the token" "$tmp/out"
	client ws "$url/" --bearer "$token" --many 2 >"$tmp/out" 2>&1
	rc=$?
	n=$(sed -n 's/^session .* instance //p' "$tmp/out" | sort -u | wc -l)
	[ $rc -eq 0 ] && [ "$n" -eq 2 ]
	ok $? "$3: two clients at once (bearer token), two execd instances" "$tmp/out"
	client ws "$url/" --expect-status 401 >"$tmp/out" 2>&1
	ok $? "$3: no token, 401" "$tmp/out"
	client jsonl-tcp "$1" "$2" >"$tmp/out" 2>&1
	[ "$(wc -l <"$tmp/out")" -eq 1 ] && grep -q '^{"error":.*authentication required' "$tmp/out"
	ok $? "$3: newline JSON refused with one JSON line and nothing else (no log on the socket)" \
		"$tmp/out"
}

# --- xinetd with contrib/inetd/execd.xinetd
xinetd=$(command -v xinetd || echo /usr/sbin/xinetd)
if [ -x "$xinetd" ]; then
	addr=127.0.0.62
	port=$(free_port $addr)
	{
		echo "defaults"
		echo "{"
		echo "	log_type = FILE $tmp/xinetd.log"
		echo "}"
		sed -e "s|^\([[:space:]]*bind[[:space:]]*=\).*|\1 $addr|" \
			-e "s|^\([[:space:]]*port[[:space:]]*=\).*|\1 $port|" \
			-e "s|^\([[:space:]]*user[[:space:]]*=\).*|\1 $user|" \
			-e "s|/usr/local/sbin/execd|$EXECD|" \
			-e "s|/usr/local/etc/execd/token|$tmp/token --log-level debug|" \
			-e "s|^}|	env = RUNTIME_DIRECTORY=$tmp/run\\
}|" "$top_srcdir/contrib/inetd/execd.xinetd"
	} >"$tmp/xinetd.conf"
	spawn "$tmp/xinetd.out" "$xinetd" -dontfork -f "$tmp/xinetd.conf" -pidfile "$tmp/xinetd.pid"
	if client wait-port $addr "$port" 10; then
		session $addr "$port" "xinetd"
	else
		ok 1 "xinetd: listening on $addr:$port" "$tmp/xinetd.out"
	fi
	stop_group "$spawned"
else
	skip "xinetd" "xinetd not installed"
fi

# --- the inetd.conf line: syntax, and that execd takes its arguments
line=$(grep -v '^#' "$top_srcdir/contrib/inetd/execd.inetd.conf" | grep .)
set -- $line
[ $# -ge 8 ] && [ "$2" = stream ] && [ "$3" = tcp4 ] && [ "${4%%.*}" = nowait ] &&
	[ "${6#/}" != "$6" ] && [ "$7" = execd ] && [ "$8" = --inetd ]
ok $? "inetd.conf line: [addr:]port stream tcp4 nowait[.max] user program argv0 --inetd ..."
shift 7
"$EXECD" "$@" --version >"$tmp/out" 2>&1
ok $? "inetd.conf line: execd accepts its arguments" "$tmp/out"

# --- openbsd-inetd with the inetd.conf line
inetd=${EXECD_TEST_INETD:-/opt/execd-test/openbsd-inetd/usr/sbin/inetd}
if [ -x "$inetd" ]; then
	addr=127.0.0.63
	port=$(free_port $addr)
	sed -e "s|^127\.0\.0\.1:7681|$addr:$port|" -e "s|[[:space:]]root[[:space:]]|	$user	|" \
		-e "s|/usr/local/sbin/execd|$EXECD|" \
		-e "s|/usr/local/etc/execd/token|$tmp/token --log-level debug|" \
		"$top_srcdir/contrib/inetd/execd.inetd.conf" >"$tmp/inetd.conf"
	# -i: stay in the foreground; -E: keep RUNTIME_DIRECTORY for execd
	spawn "$tmp/inetd.out" "$inetd" -i -E "$tmp/inetd.conf"
	inetd_pid=$spawned
	if client wait-port $addr "$port" 10; then
		session $addr "$port" "openbsd-inetd"
	else
		ok 1 "openbsd-inetd: listening on $addr:$port" "$tmp/inetd.out"
	fi
	stop_group "$spawned"
	# it always writes /run/inetd.pid; leave no trace of this one
	[ "$(cat /run/inetd.pid 2>/dev/null)" = "$inetd_pid" ] && rm -f /run/inetd.pid
else
	skip "openbsd-inetd" "no unpacked openbsd-inetd at $inetd (contrib/install-deps.sh fetches it)"
fi

finish
