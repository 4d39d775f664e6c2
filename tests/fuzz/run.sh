#!/bin/sh
# make check-fuzz: replay each target's seeds and regression inputs, then
# fuzz it for $FUZZ_SECONDS (default 60).
# Usage: run.sh FUZZ_SRCDIR WORKDIR TARGET...
# Each target runs in WORKDIR/NAME: new corpus units go to WORKDIR/NAME/new,
# crashes to WORKDIR/NAME/crash-*, the log to WORKDIR/NAME/log.
set -u
src=$1 work=$2
shift 2
secs=${FUZZ_SECONDS:-60}
failed=0
for bin in "$@"; do
	name=$(basename "$bin")
	short=${name#fuzz_}
	case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
	dir=$work/$name
	mkdir -p "$dir/new" || exit 1
	seeds=$src/corpus/$short
	regress=$src/regress/$short
	dict=
	[ -f "$src/$short.dict" ] && dict=-dict=$src/$short.dict
	case $short in rpc) dict=-dict=$src/rpc.dict ;; http_upgrade|proxy_http) dict=-dict=$src/http.dict ;; esac
	# known crashers stay fixed
	if [ -d "$regress" ] && [ -n "$(ls -A "$regress" 2>/dev/null)" ]; then
		if ! (cd "$dir" && "$bin" -runs=0 "$regress"/* >"$dir/regress.log" 2>&1); then
			echo "FAIL: $name: a regression input crashes again (see $dir/regress.log)"
			failed=1
			continue
		fi
	fi
	start=$(date +%s)
	(cd "$dir" && "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
	    -print_final_stats=1 -print_funcs=0 -artifact_prefix="$dir/" $dict "$dir/new" "$seeds") >"$dir/log" 2>&1
	rc=$?
	end=$(date +%s)
	stats=$(grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "$dir/log" |
	    sed 's/^stat:://' | tr -s ' \n' ' ')
	cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$dir/log" | tail -1 |
	    sed -n 's/.* cov: \([0-9]*\) .*/\1/p')
	if [ $rc -eq 0 ]; then
		echo "PASS: $name: $((end - start)) s, cov ${cov:-?}, $stats"
	else
		echo "FAIL: $name (exit $rc): $(ls "$dir"/crash-* "$dir"/timeout-* "$dir"/leak-* \
		    "$dir"/oom-* 2>/dev/null | tr '\n' ' ')"
		grep -E 'ERROR: |SUMMARY: |^==[0-9]+==|abort|runtime error' "$dir/log" | head -5
		failed=1
	fi
done
exit $failed
