#!/bin/sh
# README and doc/*.md stay true to the tree: every path they mention
# (doc/, contrib/, man/, tests/, src/, proxy/, lib/) exists, every Markdown
# link and #anchor resolves, every doc/ file is distributed, and every
# command quoted in their indented blocks that starts with `sh contrib/`,
# `make`, `./configure`, `execd` or `execd-proxy` resolves: the script
# exists and parses (sh -n), the target is Makefile.am's or automake's, the
# option is one configure --help, execd --help or execd-proxy's usage lists.
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
n=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/execd-docs.XXXXXX") || exit 99
# nothing here waits on anything, but bound the whole test anyway
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

cd "$top_srcdir" || { echo "Bail out! no $top_srcdir"; exit 1; }
docs="README"
for f in doc/*.md; do
	[ -f "$f" ] && docs="$docs $f"
done
[ "$docs" != README ]
ok $? "doc/ holds the documents README points to"

# exists PATH: a file or directory of the tree, a generated file's source
# (.in), a built program's (.c), or a glob that matches something
exists() {
	case $1 in
	*'*'*)	for g in $1; do [ -e "$g" ] && return 0; done; return 1 ;;
	esac
	[ -e "$1" ] || [ -e "$1.in" ] || [ -e "$1.c" ]
}

# the GitHub anchors of a Markdown file's headings
slugs() {
	awk '/^#+ / { h = $0; sub(/^#+ +/, "", h); h = tolower(h)
		gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}

for f in $docs; do
	# paths named in the text, relative to the top of the tree
	grep -o -E '(^|[^A-Za-z0-9_./@$~-])(doc|contrib|man|tests|src|proxy|lib)/[A-Za-z0-9_./@*+-]*' "$f" |
		sed -e 's/^[^a-z]//' -e 's/[.,:;]*$//' | sort -u >"$tmp/paths"
	: >"$tmp/missing"
	while read -r p; do
		exists "$p" || echo "$p" >>"$tmp/missing"
	done <"$tmp/paths"
	# README names many: none found would mean the pattern broke
	[ -s "$tmp/paths" ] || [ "$f" != README ]
	[ $? -eq 0 ] && [ ! -s "$tmp/missing" ]
	ok $? "$f: every path it names exists ($(wc -l <"$tmp/paths") paths)" "$tmp/missing"

	# Markdown links [text](target#anchor), relative to the file's folder
	case $f in *.md) ;; *) continue ;; esac
	dir=$(dirname "$f")
	grep -o -E '\]\([^) ]+\)' "$f" | sed -e 's/^](//' -e 's/)$//' | sort -u >"$tmp/links"
	: >"$tmp/missing"
	while read -r l; do
		case $l in http://* | https://* | mailto:*) continue ;; esac
		target=${l%%#*}
		anchor=
		case $l in *'#'*) anchor=${l#*#} ;; esac
		if [ -z "$target" ]; then
			target=$f
		else
			target=$dir/$target
		fi
		if [ ! -e "$target" ]; then
			echo "$l: no $target" >>"$tmp/missing"
		elif [ -n "$anchor" ] && ! slugs "$target" | grep -qx -- "$anchor"; then
			echo "$l: no heading #$anchor in $target" >>"$tmp/missing"
		fi
	done <"$tmp/links"
	[ ! -s "$tmp/missing" ]
	ok $? "$f: every link and anchor resolves ($(wc -l <"$tmp/links") links)" "$tmp/missing"
done

# every doc/ file is in the tarball (make distcheck would not notice)
: >"$tmp/missing"
for f in $docs; do
	case $f in doc/*) grep -q "[ 	]$f\( \|\$\)" Makefile.am || echo "$f" >>"$tmp/missing" ;; esac
done
[ ! -s "$tmp/missing" ]
ok $? "every doc/ file is in Makefile.am's EXTRA_DIST" "$tmp/missing"

# what the commands may name
sed -n 's/^\([A-Za-z0-9_.-][A-Za-z0-9_.-]*\):.*/\1/p' Makefile.am >"$tmp/targets"
for t in all check install install-strip uninstall installcheck installdirs \
    clean distclean mostlyclean maintainer-clean dist distcheck; do
	echo "$t"
done >>"$tmp/targets"
execd="$top_builddir/src/execd"
proxy="$top_builddir/proxy/execd-proxy"
[ -x "$execd" ] && { "$execd" --help 2>&1 | grep -o -- '--[a-z][a-z-]*'
	printf '%s\n' --help --version; } >"$tmp/execd-opts"
[ -x "$proxy" ] && "$proxy" -h 2>&1 | sed -n 's/^ *\(usage:\)\{0,1\} *execd-proxy //p' |
	sed 's/[][]/ /g' | tr ' ' '\n' | grep '^-[a-zA-Z]' |
	sed -e 's/^-//' -e 's/./&\n/g' | grep . | sort -u >"$tmp/proxy-flags"
[ -x configure ] && ./configure --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' >"$tmp/conf-opts"

# check_segment WORDS...: one simple command; diagnostics on stdout
check_segment() {
	case $1 in
	sh)
		case ${2:-} in contrib/*) ;; *) return 0 ;; esac
		[ -f "$2" ] || { echo "no script $2"; return 0; }
		sh -n "$2" 2>&1 || echo "$2 does not parse"
		;;
	make)
		shift
		for w; do
			case $w in -* | *=*) continue ;; esac
			grep -qx -- "$w" "$tmp/targets" || echo "no make target $w"
		done
		;;
	./configure)
		[ -x configure ] || { echo "no ./configure"; return 0; }
		shift
		for w; do
			w=${w#[}
			case $w in --*) ;; *) continue ;; esac
			w=${w%%=*}
			w=${w%]}
			grep -qx -- "$w" "$tmp/conf-opts" || echo "configure has no $w"
		done
		;;
	execd)
		[ -s "$tmp/execd-opts" ] || { echo "SKIP"; return 0; }
		shift
		for w; do
			w=${w#[}
			case $w in --*) ;; *) continue ;; esac
			w=${w%%=*}
			w=${w%]}
			grep -qx -- "$w" "$tmp/execd-opts" || echo "execd has no $w"
		done
		;;
	execd-proxy)
		[ -s "$tmp/proxy-flags" ] || { echo "SKIP"; return 0; }
		shift
		for w; do
			case $w in -[a-zA-Z]*) ;; *) continue ;; esac
			for c in $(echo "${w#-}" | sed 's/./& /g'); do
				grep -qx -- "$c" "$tmp/proxy-flags" || echo "execd-proxy has no -$c"
			done
		done
		;;
	esac
}

# the commands: indented lines (code blocks), continuation lines joined,
# a trailing " # comment" dropped; execd and execd-proxy only with an option
# (or none), so that a table's prose beside a program name is not taken
for f in $docs; do
	awk -v f="$f" '
		{
			if (cont != "") line = cont " " $0
			else if ($0 ~ /^    /) { line = $0; start = NR }
			else next
			cont = ""
			if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
			c = line; sub(/^ +/, "", c); sub(/ +#.*$/, "", c); gsub(/  +/, " ", c)
			if (c ~ /^(sh contrib\/|make( |$)|\.\/configure|execd( -|$)|execd-proxy( -|$))/)
				print f ":" start "\t" c
		}' "$f"
done >"$tmp/commands"

while IFS='	' read -r where cmd; do
	# the simple commands of a list or pipeline, checked one by one
	echo "$cmd" | sed -e 's/&&/\n/g' -e 's/||/\n/g' -e 's/[;|]/\n/g' >"$tmp/segs"
	: >"$tmp/diag"
	while read -r seg; do
		# shellcheck disable=SC2086
		set -f; check_segment $seg >>"$tmp/diag"; set +f
	done <"$tmp/segs"
	if grep -qx SKIP "$tmp/diag"; then
		skip "$where: $cmd" "not built"
	else
		[ ! -s "$tmp/diag" ]
		ok $? "$where: $cmd" "$tmp/diag"
	fi
done <"$tmp/commands"
[ -s "$tmp/commands" ]
ok $? "README and doc/ quote commands to check ($(wc -l <"$tmp/commands") found)"

echo "1..$n"
[ $failed -eq 0 ]
