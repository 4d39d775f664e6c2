#!/bin/sh
# The manual pages: clean under mandoc -T lint and groff's warnings, and
# documenting every option the programs accept.
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
pages="man/execd.8 man/execd-proxy.8 man/execd-proxy.conf.5"
n=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/execd-man.XXXXXX") || exit 99
# a few processes that end by themselves; bound the whole test anyway
setsid sh -c "sleep 60; kill -TERM $$" >/dev/null 2>&1 </dev/null &
watchdog=$!
trap '/bin/kill -s KILL -- -$watchdog 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'echo "Bail out! timed out"; exit 1' TERM

ok() {	# ok STATUS DESCRIPTION [DIAG-FILE]
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && [ -s "$3" ] && sed -e 's/^/# /' "$3" | head -n 20
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

for p in $pages; do
	f="$top_srcdir/$p"
	if [ ! -f "$f" ]; then
		ok 1 "$p exists"
		continue
	fi
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -T lint -W warning "$f" >"$tmp/lint" 2>&1
		rc=$?
		[ $rc -eq 0 ] && [ ! -s "$tmp/lint" ]
		ok $? "$p: mandoc -T lint -W warning is clean" "$tmp/lint"
	else
		skip "$p: mandoc -T lint" "mandoc not installed"
	fi
	if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
		MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>"$tmp/groff" >"$tmp/out"
		[ ! -s "$tmp/groff" ] && [ -s "$tmp/out" ]
		ok $? "$p: man --warnings (groff) is clean" "$tmp/groff"
	else
		skip "$p: man --warnings" "man-db or groff not installed"
	fi
done

# options: execd's long options (from its usage) and execd-proxy's flags
execd="$top_builddir/src/execd"
if [ -x "$execd" ]; then
	"$execd" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u >"$tmp/opts"
	echo "--help" >>"$tmp/opts"
	: >"$tmp/missing"
	while read -r o; do
		grep -q "^\.\(It\|Op\) Fl \\\\-${o#--}\( \|$\)" "$top_srcdir/man/execd.8" ||
			echo "$o" >>"$tmp/missing"
	done <"$tmp/opts"
	[ -s "$tmp/opts" ] && [ ! -s "$tmp/missing" ]
	ok $? "execd.8 documents every option of execd --help" "$tmp/missing"
else
	skip "execd.8 documents every option" "$execd not built"
fi
proxy="$top_builddir/proxy/execd-proxy"
if [ -x "$proxy" ]; then
	"$proxy" -h 2>&1 | sed -n 's/^usage: //p' | grep -o -- '\[-[a-zA-Z]*' |
		sed -e 's/^\[-//' -e 's/./&\n/g' | grep . | sort -u >"$tmp/flags"
	: >"$tmp/missing"
	while read -r o; do
		grep -q "^\.It Fl $o\( \|$\)" "$top_srcdir/man/execd-proxy.8" || echo "-$o" >>"$tmp/missing"
	done <"$tmp/flags"
	[ -s "$tmp/flags" ] && [ ! -s "$tmp/missing" ]
	ok $? "execd-proxy.8 documents every flag of its usage" "$tmp/missing"
else
	skip "execd-proxy.8 documents every flag" "$proxy not built"
fi

echo "1..$n"
[ $failed -eq 0 ]
