#!/bin/sh
# The last test of make check: one line per test area with the pass, skip
# and fail counts of every test result in it, so that the end of a long
# run shows at a glance what ran. An area with a failure is "not ok".
# make runs it after every other test (t/local.mk); LOOM_TEST_LOGS names
# their logs. Areas: t/README.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

area_of() {
	case $1 in
	spank/test/*|t/t1[0-9][0-9][0-9]-*) echo plugin ;;
	runtime/ckpt/test/*|t/t4[0-9][0-9][0-9]-*) echo checkpoint ;;
	runtime/backend/test/*|t/t6[0-9][0-9][0-9]-*) echo backends ;;
	runtime/*/test/*|t/t2[0-9][0-9][0-9]-*) echo runtime ;;
	t/t3[0-9][0-9][0-9]-*) echo conformance ;;
	python/test/*|t/t51[0-9][0-9]-*) echo python ;;
	t/t5[0-9][0-9][0-9]-*) echo examples ;;
	t/t7[0-9][0-9][0-9]-*) echo security ;;
	t/t8[0-9][0-9][0-9]-*) echo containers ;;
	t/t0[0-9][0-9][0-9]-*) echo operations ;;
	*) echo other ;;
	esac
}

: >"$TEST_TMP/counts"
for log in $LOOM_TEST_LOGS; do
	case $log in t/t9999-summary.log) continue ;; esac
	trs=$LOOM_BUILD_DIR/${log%.log}.trs
	a=$(area_of "$log")
	if [ ! -r "$trs" ]; then
		echo "$a ERROR" >>"$TEST_TMP/counts"
		continue
	fi
	sed -n "s/^:test-result: \([A-Z]*\).*/$a \1/p" "$trs" >>"$TEST_TMP/counts"
done

for a in plugin runtime conformance checkpoint examples python backends security containers operations other; do
	grep -q "^$a " "$TEST_TMP/counts" || continue
	p=$(grep -c "^$a PASS$" "$TEST_TMP/counts" || true)
	s=$(grep -c "^$a SKIP$" "$TEST_TMP/counts" || true)
	f=$(grep -Ec "^$a (FAIL|ERROR|XPASS)$" "$TEST_TMP/counts" || true)
	test_expect_success "$a: $p pass, $s skip, $f fail" "test $f = 0"
done
test_done
