#!/bin/sh
# A real run on the live cluster: every rank's LOOM_METRICS_FILE passes
# promtool (t/lib/prom.sh) and counts exactly the operations the program
# ran (LOOM_METRICS_KEEP=1 keeps it after loom_finalize); without
# LOOM_METRICS_KEEP, loom_finalize removes it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
# The bootstrap follows the build: PMIx when libloom has it (config.h),
# else the RANK/WORLD_SIZE/MASTER_* variables that loom.so writes (the
# test cluster loads it), so the metrics are checked either way.
if grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h"; then
	launch="srun --mpi=pmix"
else
	test_need_plugin
	launch="srun --mpi=none"
fi
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/prom.sh"
prog="$LOOM_BUILD_DIR/t/metrics/count_ops"

test_expect_success '4 ranks on 2 nodes run with LOOM_METRICS_FILE' '
	LOOM_METRICS_KEEP=1 LOOM_METRICS_FILE="$TEST_TMP/loom-%j-%r.prom" $launch -N2 -n4 "$prog" &&
	ls "$TEST_TMP" &&
	test $(ls "$TEST_TMP"/loom-*-[0-3].prom | wc -l) -eq 4
'
for r in 0 1 2 3; do
test_expect_success "rank $r: file passes the checks, counters match the program" "
	f=\$(ls '$TEST_TMP'/loom-*-$r.prom) &&
	prom_check \"\$f\" &&
	test \"\$(prom_value \"\$f\" loom_operations_total comm=world op=allreduce rank=$r)\" = 10 &&
	test \"\$(prom_value \"\$f\" loom_bytes_total comm=world op=allreduce)\" = 40960 &&
	test \"\$(prom_value \"\$f\" loom_operations_total comm=world op=broadcast)\" = 3 &&
	test \"\$(prom_value \"\$f\" loom_operations_total comm=world op=barrier)\" = 1 &&
	test \"\$(prom_value \"\$f\" loom_last_finished_seq comm=world)\" = 14 &&
	test \"\$(prom_value \"\$f\" loom_timeouts_total comm=world)\" = 0
"
done
# the checkpoint's own collectives count too, so it runs as a second job
test_expect_success 'a checkpoint is counted with its size on every rank' '
	mkdir "$TEST_TMP/ckpt" "$TEST_TMP/c" &&
	LOOM_CKPT_DIR="$TEST_TMP/ckpt" LOOM_METRICS_FILE="$TEST_TMP/c/loom-%r.prom" \
		LOOM_METRICS_KEEP=1 $launch -N2 -n4 "$prog" &&
	for r in 0 1 2 3; do
		prom_check "$TEST_TMP/c/loom-$r.prom" &&
		test "$(prom_value "$TEST_TMP/c/loom-$r.prom" loom_checkpoints_total comm=world)" = 1 &&
		test "$(prom_value "$TEST_TMP/c/loom-$r.prom" loom_checkpoint_last_bytes comm=world)" = 4096 ||
		exit 1
	done
'
# the checkpoint flushes the file at once (what t4005 reads), so each
# rank wrote one before its loom_finalize removed it
test_expect_success 'without LOOM_METRICS_KEEP, loom_finalize removes each rank'"'"'s file' '
	mkdir "$TEST_TMP/gone" &&
	LOOM_CKPT_DIR="$TEST_TMP/ckpt" LOOM_METRICS_FILE="$TEST_TMP/gone/loom-%r.prom" \
		LOOM_DEBUG=info $launch -N2 -n4 "$prog" 2>"$TEST_TMP/gone.err" &&
	test -z "$(ls -A "$TEST_TMP/gone")" &&
	! grep "metrics:" "$TEST_TMP/gone.err"
'
test_done
