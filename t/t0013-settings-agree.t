#!/bin/sh
# One truth for every setting: the table in spank/settings.c (printed by
# spank/test/settings --dump) against contrib/plugstack.conf.sample,
# loom(8), README.md and, on the live test cluster, srun --help, which
# must show each option's syntax and the site's effective default.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
settings="$LOOM_BUILD_DIR/spank/test/settings"
[ -x "$settings" ] || skip_all "spank/test/settings not built (configure without --disable-spank)"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not installed"
"$settings" --dump >"$TEST_TMP/table" || skip_all "spank/test/settings --dump failed"
# the checks: python3 $check WHAT FILE; the table on stdin
check="$LOOM_SRC_DIR/t/lib/settings-agree.py"

test_expect_success 'the table has every setting, each with syntax and description' '
	test $(wc -l <"$TEST_TMP/table") -ge 15 &&
	cut -f1 "$TEST_TMP/table" | grep -qx flight_dir &&
	cut -f2 "$TEST_TMP/table" | grep -qx loom-affinity
'
test_expect_success 'contrib/plugstack.conf.sample: every key, its syntax and default' '
	python3 "$check" sample "$LOOM_SRC_DIR/contrib/plugstack.conf.sample" <"$TEST_TMP/table"
'
test_expect_success 'README.md: the settings table has every key, its option, syntax and default' '
	python3 "$check" readme "$LOOM_SRC_DIR/README.md" <"$TEST_TMP/table"
'
if command -v groff >/dev/null 2>&1; then
test_expect_success 'loom(8): every option and key, its syntax and default' '
	groff -man -Tascii -P-cbou -rLL=2000n "$LOOM_SRC_DIR/docs/man/loom.8" >"$TEST_TMP/loom.8.txt" 2>/dev/null &&
	python3 "$check" man "$TEST_TMP/loom.8.txt" <"$TEST_TMP/table"
'
else
	test_skip 'loom(8): every option and key, its syntax and default' 'groff not installed'
fi
test_expect_success 'the checker catches a key missing from the sample and a wrong default' '
	grep -v "^#   flight_dir=" "$LOOM_SRC_DIR/contrib/plugstack.conf.sample" >"$TEST_TMP/s1" &&
	! python3 "$check" sample "$TEST_TMP/s1" <"$TEST_TMP/table" >"$TEST_TMP/e1" 2>&1 &&
	grep "flight_dir" "$TEST_TMP/e1" &&
	sed "s|(default: /var/tmp)|(default: /tmp)|" "$LOOM_SRC_DIR/contrib/plugstack.conf.sample" >"$TEST_TMP/s2" &&
	! python3 "$check" sample "$TEST_TMP/s2" <"$TEST_TMP/table" >"$TEST_TMP/e2" 2>&1 &&
	grep "flight_local_base: lacks" "$TEST_TMP/e2"
'

# srun --help reads plugstack.conf: a cluster's configuration is needed,
# started here so that the checks above run on any host
. "$LOOM_SRC_DIR/t/lib/cluster.sh"
help_under() {
	cluster_plugstack "$1" &&
	srun --help >"$TEST_TMP/help" 2>&1 &&
	"$settings" --usage flight_local_base=/x $1 >"$TEST_TMP/want" &&
	python3 "$check" help "$TEST_TMP/help" <"$TEST_TMP/want"
}
if [ ! -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" ]; then
	test_skip 'srun --help shows the table under the site configuration' 'loom.so not built'
elif why=$(cluster_why_not); then
	if [ -n "${LOOM_REQUIRE_CLUSTER:-}" ]; then
		test_expect_success "cluster required (LOOM_REQUIRE_CLUSTER) but: $why" false
	else
		test_skip 'srun --help shows the table under the site configuration' "live Slurm cluster: $why"
	fi
else
	trap 'cluster_cleanup; rm -rf "$TEST_TMP"' EXIT
	if ! cluster_start; then
		cluster_dump_logs
		test_expect_success 'start the test cluster' false
	else
		srun() { timeout -k 10 60 srun "$@"; }
		test_expect_success 'srun --help: each option, its syntax and the built-in defaults' '
			help_under "" &&
			grep -qF -- "--loom-affinity=[verbose,]closest|none|map:<gpu>[+<gpu>...][,...]" "$TEST_TMP/help" &&
			tr -s " \n" "  " <"$TEST_TMP/help" | grep -qF "write for each task (default: torch)"
		'
		test_expect_success 'srun --help: the site'"'"'s defaults, said to be the site'"'"'s' '
			help_under "env=mpi affinity=closest ckpt=/shared/ck lock=affinity,gpus_per_task" &&
			tr -s " \n" "  " <"$TEST_TMP/help" >"$TEST_TMP/flat" &&
			grep -qF "(default: mpi, set by the site)" "$TEST_TMP/flat" &&
			grep -qF "(default: closest, set and locked by the site)" "$TEST_TMP/flat" &&
			grep -qF "(default: the node'"'"'s GPUs split evenly, locked by the site)" "$TEST_TMP/flat" &&
			grep -qF "(default: /shared/ck, set by the site)" "$TEST_TMP/flat"
		'
	fi
fi
test_done
