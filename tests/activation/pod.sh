#!/bin/sh
# contrib/container and contrib/kubernetes run for real with podman: the
# image built from this build, the Pod of execd-pod.yaml played with
# `podman kube play`, a client through the published port with the token from
# the Secret, a process with a managed network reaching a server on this
# host through the execd-proxy sidecar, the decision in the sidecar's log;
# then `podman kube down` and everything it made removed.  podman keeps its
# images, containers, volumes and secrets in a store under $tmp, so nothing
# of the machine's own podman is touched.
. "$top_srcdir/tests/lib/act.sh"

# slow, and about packaging: once, in the plain build
if [ -n "${EXECD_SANITIZERS:-}" ] || grep -q __asan_init "$EXECD_BIN"; then
	skip_all "sanitizer build: the Pod test runs in the plain build only"
fi
command -v podman >/dev/null 2>&1 ||
	skip_all "podman not installed (Debian: podman runc catatonit, see contrib/install-deps.sh)"
watchdog 150

manifest="$top_srcdir/contrib/kubernetes/execd-pod.yaml"
image=localhost/execd:latest

# The machine's podman as the issue measured it (crun fails on the hybrid
# cgroups, the default ulimits cannot be raised), with a store, a state
# directory and network definitions of our own (kube play defines a network
# of its own, even when told to use another).
mkdir "$tmp/store" "$tmp/run" "$tmp/libpod" "$tmp/cni"
cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "none"
tmp_dir = "$tmp/libpod"
[network]
network_config_dir = "$tmp/cni"
EOF
cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$tmp/store"
runroot = "$tmp/run"
EOF
export CONTAINERS_CONF="$tmp/containers.conf" CONTAINERS_STORAGE_CONF="$tmp/storage.conf"
pm() {	# podman, bounded
	timeout -k 5 60 podman "$@"
}

if ! pm info >"$tmp/info" 2>&1; then
	sed -e 's/^/# /' "$tmp/info" | tail -n 5
	skip_all "podman cannot run here: $(grep -m1 -i 'error' "$tmp/info")"
fi

# Everything made in the store goes at the end, even after a failure or the
# watchdog: the Pod, its volumes, the secret, the images; then the store's
# own mounts, so that rm -rf "$tmp" can take it.  podman import keeps a blob
# cache in /var/lib/containers/cache whatever the store: gone too, if this
# test made it.
varlib=/var/lib/containers
[ -e "$varlib" ] && varlib=
pod_cleanup() {
	[ -f "$tmp/pod.yaml" ] && pm kube down "$tmp/pod.yaml" >/dev/null 2>&1
	pm pod rm -a -f >/dev/null 2>&1
	pm rm -a -f >/dev/null 2>&1
	pm volume rm -a -f >/dev/null 2>&1
	pm secret rm execd-token >/dev/null 2>&1
	pm rmi -a -f >/dev/null 2>&1
	findmnt -rn -o TARGET | grep "^$tmp/" | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	if [ -n "$varlib" ] && [ "$(ls -A "$varlib" 2>/dev/null)" = cache ]; then
		rm -rf "$varlib"
	fi
}
on_cleanup=pod_cleanup

# --- the image
sh "$top_srcdir/contrib/container/build-image.sh" -t "$image" "$top_builddir" >"$tmp/build" 2>&1
ok $? "contrib/container/build-image.sh builds $image from this build" "$tmp/build"
size=$(pm image inspect --format '{{.Size}}' "$image" 2>/dev/null)
echo "# image size: $size bytes"
pm run --rm "$image" --version >"$tmp/out" 2>&1 &&
	grep -q "^execd $("$EXECD" --version | sed 's/^execd //')\$" "$tmp/out" &&
	pm run --rm --entrypoint /usr/sbin/execd-proxy "$image" -n >>"$tmp/out" 2>&1
ok $? "the image runs execd and execd-proxy as uid 10001 on their own libraries" "$tmp/out"

# --- the Deployment's Pod and ConfigMap are the Pod's (but for the hostPort
# and the lines about it)
dep="$top_srcdir/contrib/kubernetes/execd-deployment.yaml"
sed -n '/^spec:$/,$p' "$manifest" | sed -e 1d -e '/hostPort\|hostIP/d' -e 's/^\(.\)/    \1/' >"$tmp/pod.spec"
sed -n '/^    spec:$/,/^---$/p' "$dep" | sed -e 1d -e '$d' >"$tmp/dep.spec"
sed -n '/^kind: ConfigMap$/,/^---$/p' "$manifest" >"$tmp/pod.cm"
sed -n '/^kind: ConfigMap$/,/^---$/p' "$dep" >"$tmp/dep.cm"
diff "$tmp/pod.spec" "$tmp/dep.spec" >"$tmp/diff" && diff "$tmp/pod.cm" "$tmp/dep.cm" >>"$tmp/diff" &&
	[ -s "$tmp/pod.spec" ] && [ -s "$tmp/pod.cm" ]
ok $? "execd-deployment.yaml: the Pod template and ConfigMap are execd-pod.yaml's" "$tmp/diff"

# --- the Pod: the manifest as shipped, but for the port published on
# loopback only and the proxy's allowlist naming the host as the Pod sees
# it: the gateway of podman's default network (a private address, which
# the proxy reaches only when allowed by exactly that literal)
gw=$(pm network inspect podman --format '{{range .Subnets}}{{.Gateway}}{{end}}' 2>/dev/null)
port=$(free_port 127.0.0.1)
sed -e "s/^\\( *\\)hostPort: 7681\$/\\1hostPort: $port\\
\\1hostIP: 127.0.0.1/" \
	-e '/^    allow /d' -e '/^    ports /d' \
	-e "s/^\\(    listen socks5 .*\\)\$/\\1\\
    allow $gw/" "$manifest" >"$tmp/pod.yaml"
grep -q "hostPort: $port" "$tmp/pod.yaml" && grep -q "^    allow $gw\$" "$tmp/pod.yaml" &&
	[ -n "$gw" ]
ok $? "the manifest takes the test's port and allowlist (gateway ${gw:-unknown})" "$tmp/pod.yaml"

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
cat >"$tmp/secret.yaml" <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: execd-token
type: Opaque
data:
  token: $(printf '%s' "$token" | base64 -w0)
EOF
pm kube play "$tmp/secret.yaml" >"$tmp/play" 2>&1 &&
	pm kube play --network podman "$tmp/pod.yaml" >>"$tmp/play" 2>&1
ok $? "podman kube play: the Secret and the Pod" "$tmp/play"

client wait-port 127.0.0.1 "$port" 30 && i=0 &&
	while ! curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && [ "$i" -lt 100 ]; do
		sleep 0.2
		i=$((i + 1))
	done
curl -sS -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/readyz" >"$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = 200 ]
ok $? "GET /readyz through the published port: 200 (the readiness probe)" "$tmp/out"
pm ps -a --format '{{.Names}} {{.Status}}' >"$tmp/ps" 2>&1
grep -q '^execd-execd Up' "$tmp/ps" && grep -q '^execd-execd-proxy Up' "$tmp/ps"
ok $? "both containers are up" "$tmp/ps"
pm healthcheck run execd-execd >"$tmp/out" 2>&1
ok $? "the liveness probe, as podman runs it inside the container, passes" "$tmp/out"

# podman 4.3 mounts a Secret's data still base64-encoded; the token is
# whatever the Pod got (on a cluster, exactly the Secret's value)
got=$(pm exec execd-execd /bin/cat /etc/execd/token 2>/dev/null)
if [ "$got" != "$token" ] && [ "$got" = "$(printf '%s' "$token" | base64 -w0)" ]; then
	echo "# podman wrote the Secret's data base64-encoded: using that as the token"
	token=$got
fi

url="ws://127.0.0.1:$port"
client ws "$url/$token" >"$tmp/out" 2>&1
ok $? "a WebSocket session through the published port with the token" "$tmp/out"
client ws "$url/" --expect-status 401 >"$tmp/out" 2>&1
ok $? "without the token: 401" "$tmp/out"

# --- a managed network: through the sidecar to a server on this host
cat >"$tmp/origin.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with open(sys.argv[2], "a") as f:
            f.write("%s %s\n" % (self.client_address[0], self.path))
    def log_message(self, *a):
        pass
s = http.server.HTTPServer((sys.argv[1], 0), H)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d\n" % s.server_address[1])
__import__("os").rename(sys.argv[3] + ".tmp", sys.argv[3])
s.timeout = 1
import time
end = time.time() + 120
while time.time() < end:
    s.handle_request()
EOF
spawn "$tmp/origin.log" "$PYTHON3" "$tmp/origin.py" "$gw" "$tmp/origin.hits" "$tmp/origin.port"
i=0
while [ ! -s "$tmp/origin.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
origin="http://$gw:$(cat "$tmp/origin.port" 2>/dev/null)"

cat >"$tmp/pod_client.py" <<'EOF'
"""initialize, environment/info, then each process of argv[3:] (a JSON list
of [name, process/start params]) to its end; print all as one JSON object."""
import asyncio, base64, json, sys
import websockets

async def session(url, token, runs):
    out = {}
    kw = {"max_size": None, "ping_interval": None, "open_timeout": 10,
          "extra_headers": {"Authorization": "Bearer " + token}}
    async with websockets.connect(url, **kw) as ws:
        async def call(i, method, params):
            await ws.send(json.dumps({"id": i, "method": method, "params": params}))
            while True:
                m = json.loads(await ws.recv())
                if m.get("id") == i:
                    return m
        out["initialize"] = await call(1, "initialize", {"clientName": "activation-pod"})
        await ws.send(json.dumps({"method": "initialized"}))
        out["info"] = await call(2, "environment/info", {})
        for i, (name, params) in enumerate(runs, 3):
            params = dict(params, processId=name, cwd="file:///workspace", tty=False,
                          env={"PATH": "/usr/bin:/bin"})
            await ws.send(json.dumps({"id": i, "method": "process/start", "params": params}))
            r = {"stdout": b""}
            while True:
                m = json.loads(await ws.recv())
                p = m.get("params", {})
                if m.get("id") == i:
                    r["start"] = m
                    if "error" in m:
                        break
                elif p.get("processId") != name:
                    continue
                elif m.get("method") == "process/output":
                    r["stdout"] += base64.b64decode(p["chunk"])
                elif m.get("method") == "process/exited":
                    r["exitCode"] = p.get("exitCode")
                elif m.get("method") == "process/closed":
                    break
            r["stdout"] = r["stdout"].decode(errors="replace")
            out[name] = r
    return out

print(json.dumps(asyncio.run(asyncio.wait_for(
    session(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])), 60))))
EOF
curl_to() {	# curl_to URL [CURL-ARGS...]: a curl argv printing the HTTP status
	u=$1
	shift
	printf '["curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%%{http_code}"'
	for a in "$@"; do printf ', "%s"' "$a"; done
	printf ', "%s"]' "$u"
}
# a managed network (networkProxy); its own policy allows the host as the sidecar's does
np=$(printf '{"proxy": {"enabled": true, "enableSocks5": true, "enableSocks5Udp": false,
 "allowUpstreamProxy": false, "dangerouslyAllowAllUnixSockets": false, "mode": "full",
 "domains": {"%s": "allow"}, "unixSockets": null, "allowLocalBinding": false}}' "$gw")
# transparent TCP (a managed sandbox): curl told to use no proxy, a plain connect
tnp=$(printf '%s' "$np" | sed 's/"mode": "full",/"mode": "full", "transparentTcp": true,/')
sb='{"permissions": {"type": "managed", "network": "restricted", "file_system":
 {"type": "restricted", "entries": [{"path": {"type": "special", "value": {"kind": "root"}},
 "access": "read"}]}}, "windowsSandboxLevel": "disabled", "cwd": "file:///workspace"}'
runs="[[\"allowed\", {\"argv\": $(curl_to "$origin/pod"), \"enforceManagedNetwork\": true,
  \"networkProxy\": $np}],
 [\"denied\", {\"argv\": $(curl_to http://denied.invalid/), \"enforceManagedNetwork\": true,
  \"networkProxy\": $np}],
 [\"direct\", {\"argv\": $(curl_to "$origin/direct" --noproxy '*'), \"enforceManagedNetwork\": true,
  \"networkProxy\": $np}],
 [\"tp-allowed\", {\"argv\": $(curl_to "$origin/transparent" --noproxy '*'),
  \"sandbox\": $sb, \"networkProxy\": $tnp}],
 [\"tp-denied\", {\"argv\": $(curl_to http://denied.invalid/transparent --noproxy '*'),
  \"sandbox\": $sb, \"networkProxy\": $tnp}]]"
timeout -k 5 90 "$PYTHON3" "$tmp/pod_client.py" "$url/" "$token" "$runs" >"$tmp/session.json" 2>"$tmp/session.err"
ok $? "a session with five managed-network processes (two with transparent TCP)" "$tmp/session.err"

# field NAME EXPR: a Python expression over the session's JSON object `s`
field() {
	"$PYTHON3" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$tmp/session.json" "$1" 2>/dev/null
}
[ "$(field 's["info"]["result"]["capabilities"].get("networkProxyLaunch")')" = True ]
ok $? "environment/info: networkProxyLaunch (the sidecar is configured)" "$tmp/session.json"
[ "$(field 's["allowed"]["stdout"]')" = 200 ] && grep -q ' /pod$' "$tmp/origin.hits"
ok $? "a managed process reaches the host's server through the sidecar: 200" "$tmp/session.json"
[ "$(field 's["denied"]["stdout"]')" = 403 ]
ok $? "a host outside the allowlist: 403 from the sidecar" "$tmp/session.json"
[ "$(field 's["direct"].get("exitCode")')" != 0 ] && ! grep -q ' /direct$' "$tmp/origin.hits"
ok $? "around the proxy the process reaches nothing (its own network namespace)" "$tmp/session.json"
[ "$(field 's["allowed"]["start"]["result"]["sandboxType"]')" = linuxSeccomp ]
ok $? "the process ran sandboxed: user namespaces work in the container" "$tmp/session.json"

# transparent TCP in the Pod: no host privilege, seccomp user notification
# and pidfd_getfd inside the container's own seccomp profile
tp=$(field 's["info"]["result"]["capabilities"].get("networkProxyTransparentTcp")')
if [ "$tp" = True ]; then
	[ "$(field 's["tp-allowed"]["stdout"]')" = 200 ] && grep -q ' /transparent$' "$tmp/origin.hits"
	ok $? "transparent TCP in the Pod: a plain connect to an allowed address reaches the host through the sidecar" "$tmp/session.json"
	[ "$(field 's["tp-denied"].get("exitCode")')" != 0 ] &&
		[ "$(grep -c ' /transparent$' "$tmp/origin.hits")" = 1 ]
	ok $? "transparent TCP in the Pod: a name outside the allowlist is refused" "$tmp/session.json"
	pm logs execd-execd-proxy >"$tmp/audit.tp" 2>&1
	grep '"event":"decision"' "$tmp/audit.tp" | grep '"process_id":"tp-allowed"' |
		grep '"protocol":"socks5"' | grep -q '"decision":"allow"' &&
		grep '"event":"decision"' "$tmp/audit.tp" | grep '"process_id":"tp-denied"' |
		grep '"host":"denied.invalid"' | grep -q '"decision":"deny"'
	ok $? "transparent TCP in the Pod: the sidecar audits each flow as SOCKS5, by name, with the process's tag" "$tmp/audit.tp"
else
	why="the Pod's execd says networkProxyTransparentTcp is ${tp:-unknown} (no seccomp user notification or pidfd_getfd in its container)"
	skip "transparent TCP in the Pod: an allowed address" "$why"
	skip "transparent TCP in the Pod: a denied name" "$why"
	skip "transparent TCP in the Pod: the sidecar's audit" "$why"
fi

# --- the audit trail in the sidecar's log, one JSON object per line
pm logs execd-execd-proxy >"$tmp/audit" 2>&1
"$PYTHON3" - "$tmp/audit" "$gw" <<'EOF' >"$tmp/audit.check" 2>&1
import json, sys
recs = []
for line in open(sys.argv[1]):
    if line.startswith("{"):
        recs.append(json.loads(line))
allow = [r for r in recs if r.get("event") == "decision" and r.get("host") == sys.argv[2]
         and r.get("decision") == "allow" and r.get("tags", {}).get("process_id") == "allowed"]
deny = [r for r in recs if r.get("event") == "decision" and r.get("host") == "denied.invalid"
        and r.get("decision") == "deny" and r.get("reason") == "not_allowed"]
print("%d records, %d allow, %d deny" % (len(recs), len(allow), len(deny)))
sys.exit(0 if allow and deny else 1)
EOF
ok $? "podman logs execd-execd-proxy: the allow and the deny, as JSON lines" "$tmp/audit"
pm logs execd-execd >"$tmp/execd.log" 2>&1
! grep -q "$token" "$tmp/execd.log" && grep -q 'confined by .*netns' "$tmp/execd.log"
ok $? "execd's log shows the sandbox and never the token" "$tmp/execd.log"

# --- without user namespaces: podman's seccomp profile less unshare(2), as
# a stricter runtime default would have it; plain commands run, a managed
# network is refused with the reference's -32600, and environment/info
# says nothing about it
"$PYTHON3" - /usr/share/containers/seccomp.json >"$tmp/nouserns.json" <<'EOF2'
import json, sys
prof = json.load(open(sys.argv[1]))
for rule in prof["syscalls"]:
    rule["names"] = [n for n in rule["names"] if n != "unshare"]
print(json.dumps(prof))
EOF2
rc=$?
printf '%s\n' "$token" >"$tmp/token"
chmod 644 "$tmp/token"
port2=$(free_port 127.0.0.1)
[ $rc -eq 0 ] && pm run -d --name execd-nouserns --security-opt seccomp="$tmp/nouserns.json" \
	--read-only --cap-drop all --security-opt no-new-privileges --network podman \
	-p "127.0.0.1:$port2:7681" -v "$tmp/token:/etc/execd/token:ro" "$image" \
	--listen ws://0.0.0.0:7681 --allow-remote --token-file /etc/execd/token \
	--state-dir /tmp >"$tmp/nouserns.out" 2>&1 && client wait-port 127.0.0.1 "$port2" 30
ok $? "execd in a container whose seccomp profile refuses unshare(2)" "$tmp/nouserns.out"
runs="[[\"plain\", {\"argv\": [\"sh\", \"-c\", \"echo \$((6*7))\"]}],
 [\"managed\", {\"argv\": [\"true\"], \"enforceManagedNetwork\": true}]]"
timeout -k 5 90 "$PYTHON3" "$tmp/pod_client.py" "ws://127.0.0.1:$port2/" "$token" "$runs" \
	>"$tmp/session.json" 2>"$tmp/session.err"
[ "$(field 's["plain"]["stdout"]')" = 42 ]
ok $? "without user namespaces a plain command still runs" "$tmp/session.json"
[ "$(field 's["managed"]["start"]["error"]')" = \
	"{'code': -32600, 'message': 'sandbox intent cannot be enforced on this executor'}" ]
ok $? "and a managed network is refused: -32600, sandbox intent cannot be enforced" "$tmp/session.json"
echo "# environment/info then: $(field 'sorted(s["info"]["result"]["capabilities"].items())')"
pm logs execd-nouserns >"$tmp/nouserns.log" 2>&1
grep -q 'cannot enforce' "$tmp/nouserns.log"
ok $? "execd logs the reason" "$tmp/nouserns.log"
grep -m1 'cannot enforce' "$tmp/nouserns.log" | sed 's/^/# /'
pm rm -f -t 2 execd-nouserns >/dev/null 2>&1

# --- down, and nothing left
pm kube down "$tmp/pod.yaml" >"$tmp/down" 2>&1
ok $? "podman kube down" "$tmp/down"
pod_cleanup
on_cleanup=
{
	pm ps -a -q
	pm pod ps -q
	pm volume ls -q
	pm secret ls --noheading
	pm images -q
	findmnt -rn -o TARGET | grep "^$tmp/"
	[ -n "$varlib" ] && [ -e "$varlib" ] && echo "$varlib"
} >"$tmp/left" 2>&1
[ ! -s "$tmp/left" ]
ok $? "no container, pod, volume, secret, image, mount or cache left" "$tmp/left"

finish
