#!/bin/sh
# The systemd units in contrib/systemd: checked with systemd-analyze, and
# their ExecStart lines run under systemd-socket-activate in the three shapes
# systemd gives a service its socket, each spoken to as a client would.
. "$top_srcdir/tests/lib/act.sh"

command -v systemd-socket-activate >/dev/null 2>&1 ||
	skip_all "systemd-socket-activate not installed (Debian: systemd)"
watchdog 150

addr=127.0.0.61
units="execd.socket execd@.service execd-listen.socket execd-listen.service execd-proxy.service"
mkdir "$tmp/units" "$tmp/etc" "$tmp/cred" "$tmp/run"
ln -s "$(cd "$top_builddir/proxy" && pwd)/execd-proxy" "$tmp/bin/execd-proxy"
for u in $units; do
	src="$top_srcdir/contrib/systemd/$u"
	[ -f "$src.in" ] && src="$src.in"
	sed -e "s|@sbindir[@]|$tmp/bin|g" -e "s|@sysconfdir[@]|$tmp/etc|g" "$src" >"$tmp/units/$u"
done
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$token" >"$tmp/cred/token"

# --- the unit files themselves
if command -v systemd-analyze >/dev/null 2>&1; then
	(cd "$tmp/units" && systemd-analyze verify --man=no $(for u in $units; do echo "./$u"; done)) \
		>"$tmp/verify" 2>&1
	rc=$?
	[ $rc -eq 0 ] && [ ! -s "$tmp/verify" ]
	ok $? "systemd-analyze verify: all units clean" "$tmp/verify"
	if systemd-analyze security --offline=yes "$tmp/units/execd-proxy.service" >"$tmp/sec" 2>&1; then
		level=$(sed -n 's/.*Overall exposure level for execd-proxy.service: \([0-9.]*\).*/\1/p' "$tmp/sec")
		awk -v l="$level" 'BEGIN { exit !(l != "" && l + 0 <= 2.0) }'
		ok $? "execd-proxy.service is hardened: exposure $level (at most 2.0)" "$tmp/sec"
	else
		skip "execd-proxy.service hardening score" "systemd-analyze security --offline unsupported"
	fi
else
	skip "systemd-analyze verify" "systemd-analyze not installed"
	skip "execd-proxy.service hardening score" "systemd-analyze not installed"
fi

# execstart UNIT: the unit's ExecStart as words, with the credential directory
execstart() {
	sed -n 's/^ExecStart=//p' "$tmp/units/$1" |
		sed -e "s|\${CREDENTIALS_DIRECTORY}|$tmp/cred|g"
}
# execd-proxy.service's configuration check runs as the unit runs it
$(sed -n 's/^ExecStartPre=//p' "$tmp/units/execd-proxy.service") >"$tmp/out" 2>&1
ok $? "execd-proxy.service: ExecStartPre (the configuration check) passes" "$tmp/out"
grep -q '^StandardInput=socket' "$tmp/units/execd@.service" &&
	grep -q '^StandardError=journal' "$tmp/units/execd@.service" &&
	grep -q '^Accept=yes' "$tmp/units/execd.socket" &&
	grep -q '^Accept=no' "$tmp/units/execd-listen.socket" &&
	grep -q '^Type=notify' "$tmp/units/execd-listen.service"
ok $? "units: Accept=yes with the socket on stdin/stdout, Accept=no with Type=notify"

# --- Accept=yes, StandardInput=socket: execd@.service (systemd-socket-activate --inetd -a)
port=$(free_port $addr)
spawn "$tmp/inetd.log" systemd-socket-activate -l "$addr:$port" --inetd -a \
	-E RUNTIME_DIRECTORY="$tmp/run" $(execstart execd@.service) --log-level info
wait_for "$tmp/inetd.log" "Listening on" 10
url="ws://$addr:$port"
client ws "$url/$token" >"$tmp/out" 2>&1
ok $? "Accept=yes, socket on stdin/stdout: WebSocket session with the token in the path" "$tmp/out"
client ws "$url/" --bearer "$token" >"$tmp/out" 2>&1
ok $? "Accept=yes: WebSocket session with Authorization: Bearer" "$tmp/out"
client ws "$url/" --expect-status 401 >"$tmp/out" 2>&1
ok $? "Accept=yes: no token, 401" "$tmp/out"
client ws "$url/wrong$token" --expect-status 401 >"$tmp/out" 2>&1
ok $? "Accept=yes: wrong token, 401" "$tmp/out"
client jsonl-tcp $addr "$port" >"$tmp/out" 2>&1
grep -q 'authentication required' "$tmp/out"
ok $? "Accept=yes: newline JSON from the network is refused" "$tmp/out"
client ws "$url/$token" --many 3 >"$tmp/out" 2>&1
rc=$?
n=$(sed -n 's/^session .* instance //p' "$tmp/out" | sort -u | wc -l)
[ $rc -eq 0 ] && [ "$n" -eq 3 ]
ok $? "Accept=yes: three clients at once, three execd instances" "$tmp/out"
grep -q 'websocket connection' "$tmp/inetd.log" &&
	grep -q 'for client "activation-test"' "$tmp/inetd.log"
ok $? "Accept=yes: execd logs on stderr (the journal), never on the socket" "$tmp/inetd.log"
stop_group "$spawned"

# --- Accept=yes without StandardInput=socket: the connection is fd 3 (LISTEN_FDS=1)
port=$(free_port $addr)
spawn "$tmp/fd3.log" systemd-socket-activate -l "$addr:$port" -a \
	-E RUNTIME_DIRECTORY="$tmp/run" $(execstart execd-listen.service)
wait_for "$tmp/fd3.log" "Listening on" 10
client ws "ws://$addr:$port/$token" >"$tmp/out" 2>&1
ok $? "connection on fd 3 (LISTEN_FDS=1, -a): WebSocket session" "$tmp/out"
client ws "ws://$addr:$port/" --expect-status 401 >"$tmp/out" 2>&1
ok $? "connection on fd 3: no token, 401" "$tmp/out"
stop_group "$spawned"

# --- Accept=no: execd-listen.service gets the listening socket, forks per client
port=$(free_port $addr)
timeout -k 2 60 "$PYTHON3" "$ACT_CLIENT" notify-recv "$tmp/notify" "$tmp/notify.out" 50 &
notify_pid=$!
i=0
while [ ! -S "$tmp/notify" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
spawn "$tmp/listen.log" systemd-socket-activate -l "$addr:$port" --fdname=execd \
	-E RUNTIME_DIRECTORY="$tmp/run" -E NOTIFY_SOCKET="$tmp/notify" \
	$(execstart execd-listen.service) --log-level info
main=$spawned
wait_for "$tmp/listen.log" "Listening on" 10
client ws "ws://$addr:$port/$token" >"$tmp/out" 2>&1
ok $? "Accept=no, listening socket on fd 3: WebSocket session" "$tmp/out"
wait "$notify_pid"
[ "$(cat "$tmp/notify.out" 2>/dev/null)" = "$main READY=1" ]
ok $? "Accept=no: the main process sends READY=1 to NOTIFY_SOCKET (Type=notify)" "$tmp/notify.out"
client ws "ws://$addr:$port/$token" --many 3 >"$tmp/out" 2>&1
rc=$?
sed -n 's/^session .* instance //p' "$tmp/out" | sort -u >"$tmp/instances"
[ $rc -eq 0 ] && [ "$(wc -l <"$tmp/instances")" -eq 3 ] && ! grep -qx "$main" "$tmp/instances"
ok $? "Accept=no: three clients at once, three forked instances" "$tmp/out"
client ws "ws://$addr:$port/" --expect-status 401 >"$tmp/out" 2>&1
ok $? "Accept=no: no token, 401" "$tmp/out"
kill -TERM "$main"
i=0
while { kill -0 "$main" 2>/dev/null || [ -n "$(leftovers)" ]; } && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
! kill -0 "$main" 2>/dev/null && [ -z "$(leftovers)" ]
ok $? "Accept=no: SIGTERM (systemctl stop) ends the service and every instance" "$tmp/listen.log"

# --- logging with levels: systemd's journal stream on stderr gets <priority> prefixes
: >"$tmp/journal"
js=$(stat -c '%d:%i' "$tmp/journal")
printf '' | JOURNAL_STREAM=$js "$EXECD" --stdio --log-level debug 2>>"$tmp/journal" >"$tmp/stdout"
grep -q '^<[0-7]>' "$tmp/journal" && ! grep -qv '^<[0-7]>' "$tmp/journal" && [ ! -s "$tmp/stdout" ]
ok $? "stderr on the journal: every line carries its syslog level, stdout stays empty" "$tmp/journal"
printf '' | JOURNAL_STREAM=1:1 "$EXECD" --stdio --log-level debug 2>"$tmp/plain" >"$tmp/stdout"
grep -q '^execd\[[0-9]*\]: ' "$tmp/plain" && ! grep -q '^<' "$tmp/plain"
ok $? "stderr elsewhere: plain 'execd[pid]: message' lines" "$tmp/plain"

finish
