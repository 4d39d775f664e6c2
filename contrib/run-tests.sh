#!/bin/sh
# Run the whole test suite from a clean checkout: dependencies, a plain build
# with `make check`, then an ASan+UBSan build with `make check` again.
# Ends with one line "N passed, N failed, N skipped" over both runs.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
sh contrib/install-deps.sh --with-reference || exit 1
[ -x configure ] || autoreconf -fi || exit 1

pass=0 fail=0 skip=0 rc=0
run_suite() {	# $1: build dir, rest: configure flags
	dir=$1; shift
	mkdir -p "$dir" && cd "$dir" || return 1
	"$top/configure" -q "$@" && make -j2 >/dev/null || { cd "$top"; return 1; }
	make -j2 check
	r=$?
	if [ -f test-suite.log ]; then
		set -- $(awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# ERROR:/{e=$3} /^# XPASS:/{x=$3}
		    /^# SKIP:/{s=$3} END{print p+0, f+e+x, s+0}' test-suite.log)
		pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + $3))
		[ "$r" -eq 0 ] || cat test-suite.log | tail -n 200
	fi
	cd "$top"
	return $r
}
run_suite "$top/_build/plain" || rc=1
run_suite "$top/_build/sanitized" --enable-sanitizers || rc=1
echo "$pass passed, $fail failed, $skip skipped"
exit $rc
