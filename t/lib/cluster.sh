# t/lib/cluster.sh: start a private Slurm cluster (munged, slurmctld, two
# slurmd) for one test script, and stop exactly what was started on exit.
#
# Source it from a test, then:
#   cluster_start              # writes DIR/slurm.conf etc., waits for idle nodes
#   srun ...                   # SLURM_CONF is exported for client commands
#   cluster_plugstack "args"   # rewrite plugstack.conf (next step picks it up)
# Everything lives in $LOOM_CLUSTER_DIR (a fresh directory per test script).
#
# Knobs (environment): LOOM_TEST_NODES (default 2), LOOM_TEST_CPUS (per node,
# default 2), LOOM_TEST_PLUGIN (path of loom.so, default the build tree's),
# LOOM_TEST_RESOLVE_NODES=0 (node names n1.. do not resolve in the jobs).
#
# Each slurmd runs in its own mount namespace with two bind mounts:
#  - a per-node PMIx client tmpdir at /var/tmp/loom-pmix-<id>, because two
#    stepds on one host would otherwise race for the same spmix_appdir;
#  - an /etc/hosts that resolves the node names to 127.0.0.1, so that
#    MASTER_ADDR=<node name> works inside jobs, as on a real cluster.

cluster_why_not() {
	if [ "$(id -u)" != 0 ]; then echo "needs root to run slurmd"; return 0; fi
	for p in slurmctld slurmd munged srun sinfo unshare; do
		command -v $p >/dev/null 2>&1 || { echo "$p not installed"; return 0; }
	done
	return 1
}

# loom_rand N: a number in [0, N). $RANDOM is bash's; dash has none.
loom_rand() {
	echo $(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % $1 ))
}

_cluster_port_free() {
	! ss -Htan 2>/dev/null | awk '{print $4}' | grep -q ":$1\$"
}

# The tests listen on ports from 20000 up to the kernel's ephemeral range
# (ip_local_port_range): a port in it may be taken by an outgoing
# connection between the check that it is free and the bind (CI failed so
# twice: slurmd's "Unable to bind listen port (50082)", and a MASTER_PORT
# 42457 "Address already in use").
# loom_port_room N: how many first ports from 20000 leave room for N more
# below that range (40000 when the range is unusual)
loom_port_room() {
	local low room
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || low=0
	room=$(( ${low:-0} - 20000 - $1 ))
	[ "$room" -ge 1000 ] || room=40000
	echo $room
}

# Pick a block of ports nobody listens on; the start differs per script and
# per run so that parallel test scripts (make -j check) do not collide.
_cluster_pick_ports() {
	local n=$1 tries=0 base p ok slots
	slots=$(( $(loom_port_room $((n + 2))) / 10 ))
	while [ $tries -lt 50 ]; do
		base=$(( 20000 + $(loom_rand $slots) * 10 ))
		ok=1
		for p in $(seq $base $((base + n + 1))); do
			_cluster_port_free $p || { ok=0; break; }
		done
		[ $ok = 1 ] && { echo $base; return 0; }
		tries=$((tries + 1))
	done
	return 1
}

CLUSTER_PIDS=""     # munged, slurmctld, slurmds
CLUSTER_NS=""       # mount namespaces of our slurmds: stepds and tasks live there
CLUSTER_HOLDERS=""  # one sleeper per namespace, holding it (and its inode) alive

cluster_log() { echo "# cluster: $*" >&2; }

# A live process that is not a zombie.
_cluster_alive() {
	[ -r "/proc/$1/stat" ] || return 1
	# the state follows "pid (comm)", and comm may hold spaces
	case "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" in Z|X|"") return 1 ;; esac
	return 0
}

# Every process in one of our slurmds' mount namespaces, but the holders:
# the slurmds, the slurmstepds they forked (which rename themselves and are
# reparented to init, so neither name nor parent finds them) and the tasks.
# Safe only while the holders run: a namespace's inode number is reused
# as soon as it dies, by whichever test starts a slurmd next.
_cluster_ns_pids() {
	local p ns
	[ -n "$CLUSTER_NS" ] || return 0
	for p in /proc/[0-9]*; do
		ns=$(readlink "$p/ns/mnt" 2>/dev/null) || continue
		case " $CLUSTER_NS " in *" $ns "*) ;; *) continue ;; esac
		case " $CLUSTER_HOLDERS " in *" ${p#/proc/} "*) continue ;; esac
		_cluster_alive "${p#/proc/}" && echo "${p#/proc/}"
	done
}

# Ours only if it still names our directory (a pid may have been reused).
_cluster_ours() {
	{ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF "$LOOM_CLUSTER_DIR"
}

cluster_stop() {
	local pid alive mine=""
	[ -n "$CLUSTER_PIDS" ] || return 0
	# once per cluster, also when a subshell stopped it before the EXIT trap
	[ -e "$LOOM_CLUSTER_DIR/stopped" ] && return 0
	: >"$LOOM_CLUSTER_DIR/stopped"
	for pid in $CLUSTER_PIDS; do _cluster_ours "$pid" && mine="$mine $pid"; done
	for pid in $mine; do kill -TERM "$pid" 2>/dev/null; done
	for _ in $(seq 1 50); do
		alive=""
		for pid in $mine; do _cluster_alive "$pid" && alive="$alive $pid"; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for _ in $(seq 1 50); do
		alive="$(_cluster_ns_pids)"
		for pid in $mine; do _cluster_alive "$pid" && alive="$alive $pid"; done
		[ -z "$alive" ] && break
		for pid in $alive; do kill -KILL "$pid" 2>/dev/null; done
		sleep 0.1
	done
	for pid in $CLUSTER_HOLDERS; do kill -KILL "$pid" 2>/dev/null; done
	CLUSTER_PIDS=""
	CLUSTER_NS=""
	CLUSTER_HOLDERS=""
}

_cluster_wait_pidfile() {
	local f=$1
	for _ in $(seq 1 100); do
		[ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && { cat "$f"; return 0; }
		sleep 0.1
	done
	return 1
}

cluster_plugstack() {
	local plugin=${LOOM_TEST_PLUGIN:-${LOOM_BUILD_DIR:+$LOOM_BUILD_DIR/spank/.libs/loom.so}}
	if [ "$1" = "none" ] || [ -z "$plugin" ] || [ ! -f "$plugin" ]; then
		: >"$LOOM_CLUSTER_DIR/plugstack.conf"
	else
		# the tests' flight records and topology cache stay in the
		# cluster's directory, not in /var/tmp and /var/lib/loom
		mkdir -p "$LOOM_CLUSTER_DIR/flight" && chmod 1777 "$LOOM_CLUSTER_DIR/flight"
		# (a loom.so older than topology_cache= would refuse the argument)
		local cache=""
		grep -q topology_cache "$plugin" && cache="topology_cache=$LOOM_CLUSTER_DIR/topology.xml "
		# the job key comes from this cluster's own munge key
		grep -q munge_key "$plugin" && cache="${cache}munge_key=$LOOM_CLUSTER_DIR/munge/munge.key "
		echo "required $plugin flight_local_base=$LOOM_CLUSTER_DIR/flight $cache$*" \
			>"$LOOM_CLUSTER_DIR/plugstack.conf"
	fi
}

cluster_start() {
	local dir nodes cpus base ctlport i name
	nodes=${LOOM_TEST_NODES:-2}
	cpus=${LOOM_TEST_CPUS:-2}
	dir=$(mktemp -d /tmp/loom-cluster.XXXXXX) || return 1
	chmod 755 "$dir"
	LOOM_CLUSTER_DIR=$dir
	export LOOM_CLUSTER_DIR
	mkdir -p "$dir/state" "$dir/log" "$dir/spool" "$dir/munge" "$dir/etc"
	base=$(_cluster_pick_ports $((nodes + 1))) || { cluster_log "no free ports"; return 1; }
	ctlport=$base
	CLUSTER_NODELIST="n[1-$nodes]"
	export CLUSTER_NODELIST

	# munged of our own, on a socket of our own, so that nothing of the
	# host's (or another test's) munge is touched.
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
	chmod 400 "$dir/munge/munge.key"
	chmod 700 "$dir/munge"
	munged --force --socket="$dir/munge/munge.socket" \
		--key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" \
		--pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
		>"$dir/log/munged.out" 2>&1 || { cluster_log "munged failed: $(cat "$dir/log/munged.out")"; return 1; }
	CLUSTER_PIDS="$(_cluster_wait_pidfile "$dir/munge/munged.pid")" || { cluster_log "munged did not start"; return 1; }

	cluster_plugstack ""

	cat >"$dir/slurm.conf" <<CONF
ClusterName=loomtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire: also how long a requeued job waits before it may start again
# (Slurm default 120 s); short, so requeue tests do not idle for minutes
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=20
CredType=cred/munge
SlurmctldPort=$ctlport
SlurmdPort=$((ctlport + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
PlugStackConfig=$dir/plugstack.conf
SlurmdParameters=config_overrides
JobRequeue=1
# distinct job ids per cluster: MASTER_PORT is derived from job and step
# id, and concurrent test clusters share this host's ports
FirstJobId=$(( (ctlport - 20000) * 10 + 1000 ))
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
KillWait=5
MinJobAge=600
InactiveLimit=0
SlurmdTimeout=30
MessageTimeout=20
NodeName=n[1-$nodes] NodeHostname=localhost Port=$((ctlport + 2))-$((ctlport + 1 + nodes)) CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP PriorityTier=5 PreemptMode=OFF
PartitionName=low Nodes=n[1-$nodes] MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=5
PartitionName=high Nodes=n[1-$nodes] MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
CONF
	echo "PMIxCliTmpDirBase=/var/tmp/loom-pmix-${dir##*.}" >"$dir/mpi.conf"
	mkdir -p "/var/tmp/loom-pmix-${dir##*.}"
	# LOOM_TEST_RESOLVE_NODES=0: node names that do not resolve (NodeAddr
	# localhost only), as on clusters without DNS entries for NodeName
	{
		grep -v '^[[:space:]]*$' /etc/hosts 2>/dev/null
		if [ "${LOOM_TEST_RESOLVE_NODES:-1}" != 0 ]; then
			printf '127.0.0.1'
			for i in $(seq 1 "$nodes"); do printf ' n%s' "$i"; done
			echo
		fi
	} >"$dir/etc/hosts"

	SLURM_CONF=$dir/slurm.conf
	export SLURM_CONF
	slurmctld -f "$dir/slurm.conf" -i >"$dir/log/slurmctld.out" 2>&1 || { cluster_log "slurmctld failed: $(cat "$dir/log/slurmctld.out")"; return 1; }
	i=$(_cluster_wait_pidfile "$dir/slurmctld.pid") || { cluster_log "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log")"; return 1; }
	CLUSTER_PIDS="$CLUSTER_PIDS $i"

	for i in $(seq 1 "$nodes"); do
		name=n$i
		mkdir -p "$dir/pmix/$name" "$dir/spool/$name"
		unshare -m --propagation private sh -c "
			mount --bind '$dir/pmix/$name' '/var/tmp/loom-pmix-${dir##*.}' &&
			mount --bind '$dir/etc/hosts' /etc/hosts &&
			exec slurmd -f '$dir/slurm.conf' -N $name" \
			>"$dir/log/slurmd-$name.out" 2>&1 || { cluster_log "slurmd $name failed: $(cat "$dir/log/slurmd-$name.out")"; return 1; }
		local pid
		pid=$(_cluster_wait_pidfile "$dir/slurmd-$name.pid") || { cluster_log "slurmd $name did not start: $(tail -5 "$dir/log/slurmd-$name.log" 2>/dev/null)"; return 1; }
		CLUSTER_PIDS="$CLUSTER_PIDS $pid"
		CLUSTER_NS="$CLUSTER_NS $(readlink /proc/$pid/ns/mnt)"
		# started from a subshell, so that this shell reports no "Killed" job
		CLUSTER_HOLDERS="$CLUSTER_HOLDERS $(nsenter --mount="/proc/$pid/ns/mnt" \
			sleep 2147483647 </dev/null >/dev/null 2>&1 & echo $!)"
	done

	# ready when every node is idle
	for _ in $(seq 1 300); do
		if [ "$(sinfo -h -p debug -o '%t %D' 2>/dev/null)" = "idle $nodes" ]; then
			return 0
		fi
		sleep 0.1
	done
	cluster_log "nodes never became idle: $(sinfo 2>&1)"
	return 1
}

cluster_dump_logs() {
	local f
	for f in "$LOOM_CLUSTER_DIR"/log/*.log; do
		echo "# ---- $f" >&2
		tail -20 "$f" | sed 's/^/# /' >&2
	done
}

# Remove the cluster directory unless the test asks to keep it for debugging.
cluster_cleanup() {
	cluster_stop
	if [ -n "${LOOM_CLUSTER_DIR:-}" ]; then
		rmdir "/var/tmp/loom-pmix-${LOOM_CLUSTER_DIR##*.}" 2>/dev/null
		[ -n "${LOOM_TEST_KEEP:-}" ] || rm -rf "$LOOM_CLUSTER_DIR"
	fi
}
