#!/usr/bin/python3
"""A child that exits while its output is paused (the client is congested)
does not make execd spin: a paused pipe is out of the epoll set, where a
hang-up would be reported whatever the mask."""
import json
import os
import subprocess
import time

from execd_client import EXECD, tap

t = tap(timeout=60)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


p = subprocess.Popen([EXECD, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
msgs = [{"id": 1, "method": "initialize", "params": {"clientName": "t"}},
        {"method": "initialized"},
        # floods until the client's pipe and execd's queue are full: congested
        {"id": 2, "method": "process/start", "params": {"processId": "flood",
         "argv": ["cat", "/dev/zero"], "cwd": "file:///tmp", "env": {}, "tty": False}},
        # exits while its output is paused
        {"id": 3, "method": "process/start", "params": {"processId": "quit",
         "argv": ["sh", "-c", "sleep 0.5; echo bye"], "cwd": "file:///tmp", "env": {},
         "tty": False}}]
for m in msgs:
    p.stdin.write((json.dumps(m) + "\n").encode())
p.stdin.flush()
time.sleep(2.0)                 # nothing read: execd is congested, "quit" has exited
c0 = cpu_seconds(p.pid)
time.sleep(2.0)
used = cpu_seconds(p.pid) - c0
t.ok(used < 0.05, "congested, with a paused child gone: execd idles (%.2f s CPU in 2 s)" % used)
# and it still works: reading lets it go on, the exit of "quit" comes
p.stdin.close()
p.stdout.close()
try:
    p.wait(10)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
t.ok(p.returncode is not None, "execd exits when the client goes")
t.done()
