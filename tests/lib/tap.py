"""TAP output for every test under tests/: numbered results, diagnostics
under a failure, skips, TODOs, the plan at the end.

One class for all of them: tests of execd get it through
execd_client.tap(timeout), the execd-proxy tests as proxytest.Tap (after
proxytest.deadline(), which bounds them and cleans up).
"""
import os
import signal
import sys
import traceback

DIAG_LINES = 200        # of one diagnostic: a huge one would bury the log


class Tap:
    """Results numbered from 1, the plan printed by done(), which exits 0
    only if every result passed (a TODO's does not count)."""

    def __init__(self, timeout=None):
        """timeout: seconds after which the whole test bails out (SIGALRM);
        None: the caller bounds it.  An exception the test does not catch
        prints its traceback as diagnostics and bails out."""
        self.n = 0
        self.failed = 0
        if timeout is not None:
            signal.signal(signal.SIGALRM, self._timeout)
            signal.alarm(timeout)
        sys.excepthook = self._crash

    def _crash(self, kind, value, tb):
        """an exception the test did not catch: its traceback in the TAP log
        (the harness keeps stdout only), then a bail-out"""
        for line in "".join(traceback.format_exception(kind, value, tb)).splitlines():
            print("# " + line)
        print("Bail out! %s: %s" % (kind.__name__, value))
        sys.stdout.flush()

    def _timeout(self, *a):
        print("Bail out! test timed out")
        sys.stdout.flush()
        os._exit(1)

    def diag(self, text):
        lines = str(text).splitlines()
        for line in lines[:DIAG_LINES]:
            print("# " + line)
        if len(lines) > DIAG_LINES:
            print("# ... %d more lines" % (len(lines) - DIAG_LINES))

    def ok(self, cond, desc, diag=None, todo=None):
        """todo: why cond is expected to fail for now (a TAP TODO: its
        failure does not fail the test; its diagnostics are shown either way)"""
        self.n += 1
        line = "%s %d - %s" % ("ok" if cond else "not ok", self.n, desc)
        if todo:
            line += " # TODO " + todo
        elif not cond:
            self.failed += 1
        print(line)
        if (not cond or todo) and diag is not None:
            self.diag(diag)
        sys.stdout.flush()
        return cond

    def eq(self, got, want, desc):
        return self.ok(got == want, desc, "got:  %r\nwant: %r" % (got, want))

    def skip(self, desc, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc, why))
        sys.stdout.flush()

    def done(self):
        print("1..%d" % self.n)
        sys.stdout.flush()
        sys.exit(1 if self.failed else 0)


def skip_all(why):
    print("1..0 # SKIP %s" % why)
    sys.stdout.flush()
    sys.exit(0)
