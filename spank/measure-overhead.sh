#!/bin/sh
# spank/measure-overhead.sh: median wall time of `srun -N2 -n4 true` on the
# private test cluster, without loom.so, with env=torch, with affinity=closest
# discovering the topology in every step (topology_cache=none) and reading
# the node's topology cache (the default; the first step writes it).
# Run: LOOM_SRC_DIR=$PWD LOOM_BUILD_DIR=/path/to/build N=21 sh spank/measure-overhead.sh
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_cluster
med() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
run() {
	cluster_plugstack "$1"; srun -N2 -n4 true
	for i in $(seq 1 ${N:-21}); do
		s=$(date +%s%N); srun -N2 -n4 true; e=$(date +%s%N); echo $(( (e - s) / 1000 ))
	done | med
}
for round in 1 2; do
echo "round $round none: $(run none) us"
echo "round $round env=torch: $(run env=torch) us"
echo "round $round env=torch affinity=closest topology_cache=none: $(run 'env=torch affinity=closest topology_cache=none') us"
echo "round $round env=torch affinity=closest (cached): $(run 'env=torch affinity=closest') us"
done
test_done
