"""The soak test (tests/soak.py), short, for make check: 10 s, 8 clients,
an instance killed every 4 s.  make check-soak runs the full one (60 s)."""
import os
import sys

for k, v in (("SOAK_SECONDS", "10"), ("SOAK_CLIENTS", "8"), ("SOAK_KILL_EVERY", "4")):
    os.environ.setdefault(k, v)
os.execv(sys.executable, [sys.executable,
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak.py")])
