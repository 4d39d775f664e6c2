#!/bin/sh
# execd through a real sshd on loopback, with a throw-away host key and user
# keys: the forced command of contrib/ssh/authorized_keys, `ssh host execd`,
# newline JSON and WebSocket over the ssh channel, and a local ws:// bridge
# (socat) into it, as a Codex app-server would use it.
. "$top_srcdir/tests/lib/act.sh"

sshd=/usr/sbin/sshd
[ -x $sshd ] || skip_all "no $sshd (Debian: openssh-server)"
command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 ||
	skip_all "no ssh or ssh-keygen (Debian: openssh-client)"
[ "$(id -u)" -eq 0 ] || skip_all "sshd needs root for privilege separation"
watchdog 150

user=$(id -un)
addr=127.0.0.64
port=$(free_port $addr)
mkdir "$tmp/run"
if [ ! -d /run/sshd ]; then
	# what Debian's ssh.service does (RuntimeDirectory=sshd); removed at the end
	mkdir -m 0755 /run/sshd && on_cleanup='rmdir /run/sshd 2>/dev/null'
fi
for k in host forced plain tokened; do
	ssh-keygen -q -t ed25519 -N '' -C "execd-test-$k" -f "$tmp/$k" || skip_all "ssh-keygen failed"
done
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$token" >"$tmp/token"

# the shipped example's options, with this build's execd and the test keys
opts=$(grep '^command=' "$top_srcdir/contrib/ssh/authorized_keys" | head -n 1 |
	sed -e 's| ssh-ed25519 .*||' -e "s|/usr/local/sbin/execd|$EXECD|")
{
	echo "$opts" | sed -e 's|--stdio|--stdio --log-level info|' | tr -d '\n'
	echo " $(cat "$tmp/forced.pub")"
	echo "restrict $(cat "$tmp/plain.pub")"
	echo "command=\"$EXECD --stdio --token-file $tmp/token\",restrict $(cat "$tmp/tokened.pub")"
} >"$tmp/authorized_keys"
cat >"$tmp/sshd_config" <<EOF
HostKey $tmp/host
AuthorizedKeysFile $tmp/authorized_keys
PidFile $tmp/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $user
PrintMotd no
SetEnv RUNTIME_DIRECTORY=$tmp/run
LogLevel VERBOSE
EOF
spawn "$tmp/sshd.log" $sshd -D -e -f "$tmp/sshd_config" -p "$port" -o ListenAddress=$addr
wait_for "$tmp/sshd.log" "Server listening" 10 ||
	{ ok 1 "sshd starts on $addr:$port" "$tmp/sshd.log"; finish; }

ssh_to() {	# ssh_to KEY [COMMAND...]
	key=$1
	shift
	echo ssh -F /dev/null -T -i "$tmp/$key" -p "$port" -o IdentitiesOnly=yes -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
		-o ConnectTimeout=10 "$user@$addr" "$@"
}

# --- the forced command: ssh -T host, whatever the client asks to run
client jsonl-cmd -- $(ssh_to forced ignored words) >"$tmp/out" 2>"$tmp/err"
rc=$?
ok $rc "forced command: newline JSON over ssh, a process runs, clean exit" "$tmp/out"
[ $rc -eq 0 ] && grep -q 'for client "activation-test"' "$tmp/err"
ok $? "forced command: every stdout line is JSON-RPC; execd's log comes on ssh's stderr" "$tmp/err"
client ws-cmd -- $(ssh_to forced) >"$tmp/out" 2>&1
ok $? "forced command: WebSocket over the ssh channel (no token: ssh authenticated it)" "$tmp/out"

# --- no forced command: ssh host execd --stdio
client jsonl-cmd -- $(ssh_to plain "$EXECD" --stdio) >"$tmp/out" 2>&1
ok $? "ssh host execd --stdio: newline JSON" "$tmp/out"
client ws-cmd -- $(ssh_to plain "$EXECD" --stdio) >"$tmp/out" 2>&1
ok $? "ssh host execd --stdio: WebSocket" "$tmp/out"

# --- a ws:// URL for the app-server: a local bridge, one ssh per connection
if command -v socat >/dev/null 2>&1; then
	baddr=127.0.0.65
	bport=$(free_port $baddr)
	spawn "$tmp/socat.log" socat -d -d "TCP-LISTEN:$bport,bind=$baddr,reuseaddr,fork" \
		"EXEC:$(ssh_to tokened)"
	if client wait-port $baddr "$bport" 10; then
		client ws "ws://$baddr:$bport/$token" >"$tmp/out" 2>&1 ||
			{ tail -n 15 "$tmp/socat.log" "$tmp/sshd.log"; false; } >>"$tmp/out"
		ok $? "bridge ws://$baddr:PORT/TOKEN -> ssh -> execd --token-file: session" "$tmp/out"
		client ws "ws://$baddr:$bport/" --expect-status 401 >"$tmp/out" 2>&1 ||
			{ tail -n 15 "$tmp/socat.log" "$tmp/sshd.log"; false; } >>"$tmp/out"
		ok $? "bridge: without the token, 401 from the remote execd" "$tmp/out"
	else
		ok 1 "socat bridge listening" "$tmp/socat.log"
	fi
else
	skip "ws:// bridge over ssh" "socat not installed"
fi

grep -q 'Accepted publickey' "$tmp/sshd.log"
ok $? "sshd authenticated the throw-away keys" "$tmp/sshd.log"
finish
