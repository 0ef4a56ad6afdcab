#!/bin/sh
# Groups of a subset of the ranks on the process group "loom"
# (torch.distributed.new_group(ranks=...), split from libloom's world),
# 2 nodes x 2 tasks under srun with loom.so: every rank takes part in
# creating each group, outsiders get torch's NON_GROUP_MEMBER as on gloo,
# the members' collectives equal gloo's groups of the same ranks, two
# disjoint groups run at the same time and a rank keeps operations in
# flight on two groups; loom.torch.cpu_world() is a duplicate of the
# default group's world when that is "loom", its own world beside gloo.
# Needs python3-torch, libtorch-dev and pybind11-dev: skipped without them.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch_extension
test_need_plugin
test_need_cluster
PY=$LOOM_PYTHON
TP=$LOOM_SRC_DIR/t/python

# groups NAME DEFAULT: every rank's closing line, no failure
groups() {
	timeout 300 srun -N2 -n4 --ntasks-per-node=2 "$PY" "$TP/torch_groups.py" --default "$2" \
		>"$TEST_TMP/$1" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$1" && test $rc = 0 &&
	test $(grep -c "^rank [0-3]/4: torch_groups, default $2, [1-9][0-9]* checks, 0 failed\$" \
		"$TEST_TMP/$1") = 4 &&
	! grep -q "^FAIL" "$TEST_TMP/$1"
}

test_expect_success 'groups of subsets on loom equal gloo'"'"'s, default group "loom" (4 ranks, 2 nodes)' '
	groups def-loom loom
'
test_expect_success 'groups of subsets on loom equal gloo'"'"'s, default group gloo (4 ranks, 2 nodes)' '
	groups def-gloo gloo
'
test_done
