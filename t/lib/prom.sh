# t/lib/prom.sh: read loom's metrics files (Prometheus text format) in tests.
#
#   . "$LOOM_SRC_DIR/t/lib/prom.sh"
#   prom_check FILE              promtool check metrics says nothing, and
#                                the checks it does not do hold
#   prom_value FILE NAME K=V...  print the value of the one sample of NAME
#                                whose labels include every K="V"
# promtool (Debian's prometheus package) parses the format and lints the
# names (a counter's _total, base units, HELP text). It does not reject a
# family whose samples are split by another's, a series written twice or
# a negative counter: simple greps do. Without promtool (not installed),
# prom_check says so and does only those.

prom_check() {
	local f=$1 out dup
	if command -v promtool >/dev/null 2>&1; then
		out=$(promtool check metrics <"$f" 2>&1) || { echo "$f: promtool: $out"; return 1; }
		[ -z "$out" ] || { echo "$f: promtool: $out"; return 1; }
	else
		echo "$f: promtool not installed: only the greps checked it" >&2
	fi
	# each family's samples in one block: a name never comes back
	dup=$(grep -v '^#' "$f" | sed 's/[{ ].*//' | uniq | sort | uniq -d)
	[ -z "$dup" ] || { echo "$f: family split: $dup"; return 1; }
	dup=$(grep -v '^#' "$f" | sed 's/ [^ ]*$//' | sort | uniq -d)
	[ -z "$dup" ] || { echo "$f: series twice: $dup"; return 1; }
	! grep -n '^[a-z_:]*_total[{ ].* -[0-9]' "$f" || { echo "$f: negative counter"; return 1; }
}

prom_value() {
	local f=$1 name=$2
	shift 2
	PROM_NAME=$name awk '
		# the K=V arguments become the labels wanted; stdin is the file
		BEGIN {
			n = ENVIRON["PROM_NAME"]
			for (i = 1; i < ARGC; i++) {
				k = substr(ARGV[i], 1, index(ARGV[i], "=") - 1)
				want[i] = k "=\"" substr(ARGV[i], length(k) + 2) "\""
			}
			nw = ARGC - 1
			ARGC = 1
		}
		substr($0, 1, length(n) + 1) != n "{" && substr($0, 1, length(n) + 1) != n " " { next }
		{
			for (i = 1; i <= nw; i++)
				if (!index($0, "{" want[i] ",") && !index($0, "," want[i] ",") &&
				    !index($0, "{" want[i] "}") && !index($0, "," want[i] "}"))
					next
			hits++
			v = $NF
		}
		END {
			if (hits != 1) {
				printf "%s: %d matching series\n", n, hits > "/dev/stderr"
				exit 1
			}
			print v
		}' "$@" <"$f"
}
