#!/bin/sh
# topology_cache=: the first step that binds on a node writes the node's
# hwloc topology as XML (root's, 0644, keyed by boot, hwloc and hardware),
# later steps load it instead of discovering the machine, a stale key
# rebuilds it, and a cache another user could have planted (a directory
# not root's or writable by others, a symbolic link, a file not root's) is
# refused with a warning: the step discovers the topology live and binds
# as without a cache. The plants are made by user nobody (runuser).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
grep -q "define HAVE_HWLOC 1" "$LOOM_BUILD_DIR/config.h" || skip_all "built without hwloc"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
fx=$LOOM_SRC_DIR/t/fixtures
cache=$LOOM_CLUSTER_DIR/topology.xml
boot=$(cat /proc/sys/kernel/random/boot_id)
cpus_of() { # srun args...: each task's "rank Cpus_allowed_list", sorted
	srun "$@" sh -c 'echo "$SLURM_PROCID $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"' | sort
}

test_expect_success 'a step without --loom-affinity leaves no cache' '
	srun -N2 -n2 true && test ! -e "$cache"
'

test_expect_success 'the first binding step writes it: root-owned, 0644, keyed by this boot' '
	cluster_plugstack "affinity=closest" &&
	cpus_of -N1 -n2 >"$TEST_TMP/first" && cat "$TEST_TMP/first" &&
	test $(wc -l <"$TEST_TMP/first") = 2 &&
	test "$(stat -c "%u %a %F" "$cache")" = "0 644 regular file" &&
	grep -q "name=\"LoomTopologyCacheKey\" value=\"v1 host=[^ ]* boot=$boot hwloc=[0-9.]* cpus=[0-9,-]* pci=[0-9]*\"" "$cache" &&
	wait_stepd_log "loom: topology cache $cache written (there was none)" 10
'

test_expect_success 'later steps reuse it (same inode and mtime, a log line per node) and bind the same' '
	before=$(stat -c "%i %Y" "$cache") && sleep 1.1 &&
	cpus_of -N1 -n2 >"$TEST_TMP/again" && cpus_of -N2 -n4 >"$TEST_TMP/two" &&
	cat "$TEST_TMP/again" "$TEST_TMP/two" &&
	test "$(stat -c "%i %Y" "$cache")" = "$before" &&
	cmp "$TEST_TMP/first" "$TEST_TMP/again" &&
	test $(stepd_log | grep -c "loom: topology from cache $cache\$") -ge 3 &&
	cluster_plugstack "affinity=closest topology_cache=none" &&
	cpus_of -N1 -n2 >"$TEST_TMP/live" && cmp "$TEST_TMP/first" "$TEST_TMP/live"
'

test_expect_success 'a stale key (another boot) makes the next step rebuild it' '
	cluster_plugstack "affinity=closest" &&
	sed -i "s/ boot=$boot / boot=00000000-0000-0000-0000-000000000000 /" "$cache" &&
	grep -q "boot=00000000-0000" "$cache" &&
	cpus_of -N1 -n2 >"$TEST_TMP/stale" && cmp "$TEST_TMP/first" "$TEST_TMP/stale" &&
	wait_stepd_log "loom: topology cache $cache written (stale: made for v1 .* boot=00000000-0000-0000-0000-000000000000 " 10 &&
	grep -q " boot=$boot " "$cache" && ! grep -q "boot=00000000-0000" "$cache"
'

# where a user can write: a sticky, world-writable directory of root's
pub=$LOOM_CLUSTER_DIR/pub
mkdir -p "$pub" && chmod 1777 "$pub"

# refused PATH WHY: a binding step with topology_cache=PATH runs, binds as
# live discovery does, warns (verbose) and logs WHY, and leaves PATH as it was
refused() {
	local path=$1 why=$2
	cluster_plugstack "affinity=closest topology_cache=$path" &&
	cp -P "$path" "$TEST_TMP/planted" 2>/dev/null || :
	srun -N1 -n2 -w n1 --loom-affinity=verbose,closest sh -c "grep Cpus_allowed_list /proc/self/status" \
		>"$TEST_TMP/r.out" 2>"$TEST_TMP/r.err" && rc=0 || rc=$?
	cat "$TEST_TMP/r.out" "$TEST_TMP/r.err"
	test $rc = 0 &&
	grep -q "^loom: warning: topology cache $path refused: $why.*; discovering the topology live" "$TEST_TMP/r.err" &&
	wait_stepd_log "loom: topology cache $path refused: $why" 10 &&
	# the planted DGX fixture's 8 GPUs and 224 CPUs were not used
	test $(grep -c "^loom: affinity host=n1 rank=[01] local_rank=[01] gpus=none " "$TEST_TMP/r.err") = 2 &&
	! grep -q "gpus=[0-9]" "$TEST_TMP/r.err" &&
	if [ -e "$TEST_TMP/planted" ] || [ -L "$TEST_TMP/planted" ]; then cmp "$TEST_TMP/planted" "$path"; fi
}

test_expect_success 'planted by nobody in a directory of its own: refused (not root'"'"'s)' '
	runuser -u nobody -- sh -c "mkdir $pub/evil && cp $fx/dgx-h100.xml $pub/evil/topology.xml" &&
	test "$(stat -c %U "$pub/evil/topology.xml")" = nobody &&
	refused "$pub/evil/topology.xml" "$pub/evil is not owned by root"
'

test_expect_success 'planted by nobody in a world-writable sticky directory: refused' '
	runuser -u nobody -- cp "$fx/dgx-h100.xml" "$pub/topology.xml" &&
	refused "$pub/topology.xml" "$pub is writable by group or others"
'

test_expect_success 'a directory reached through a symbolic link to nobody'"'"'s: refused, not followed' '
	ln -s "$pub/evil" "$LOOM_CLUSTER_DIR/via-link" &&
	refused "$LOOM_CLUSTER_DIR/via-link/topology.xml" "$LOOM_CLUSTER_DIR/via-link is a symbolic link"
'

test_expect_success 'in root'"'"'s directory, a file that is a symbolic link, not root'"'"'s, or group-writable: refused' '
	mkdir -m 755 "$LOOM_CLUSTER_DIR/c" &&
	ln -s "$pub/evil/topology.xml" "$LOOM_CLUSTER_DIR/c/link.xml" &&
	refused "$LOOM_CLUSTER_DIR/c/link.xml" "it is a symbolic link" &&
	cp "$fx/dgx-h100.xml" "$LOOM_CLUSTER_DIR/c/nobody.xml" && chown nobody "$LOOM_CLUSTER_DIR/c/nobody.xml" &&
	refused "$LOOM_CLUSTER_DIR/c/nobody.xml" "it is not owned by root" &&
	cp "$fx/dgx-h100.xml" "$LOOM_CLUSTER_DIR/c/gw.xml" && chmod 664 "$LOOM_CLUSTER_DIR/c/gw.xml" &&
	refused "$LOOM_CLUSTER_DIR/c/gw.xml" "it is writable by group or others"
'

test_expect_success 'a missing cache directory is made (root'"'"'s, 0755); a relative path is refused at start' '
	cluster_plugstack "affinity=closest topology_cache=$LOOM_CLUSTER_DIR/new/topology.xml" &&
	srun -N1 -n1 true &&
	test "$(stat -c "%u %a" "$LOOM_CLUSTER_DIR/new")" = "0 755" && test -f "$LOOM_CLUSTER_DIR/new/topology.xml" &&
	cluster_plugstack "affinity=closest topology_cache=var/lib/loom/t.xml" &&
	test_must_fail_with "topology_cache=.var/lib/loom/t.xml. must be an absolute path or none" srun -N1 -n1 true
'
test_done
