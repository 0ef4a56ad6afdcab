#!/bin/sh
# t/gpu/device-check.sh OUTDIR: the GPU check of loom, run on a GPU machine
# (no Slurm needed) with the build t/gpu/make-build.sh made, carried in
# t/gpu/build (or $LOOM_GPU_BUILD). Every part prints one summary line:
# PASS, FAIL or NOT RUN (reason). Writes OUTDIR/device-check.log and
# OUTDIR/summary.txt. Exit 0 unless a part FAILed. Under 5 minutes in all:
# each run part has its own timeout, cut to what is left of a 280 s budget
# (a part that would start after it is spent is NOT RUN, saying so).
# The check programs exit 77 with "NOT RUN: why" when they cannot run
# here (no GPU, no NVML...): that part is then NOT RUN with their reason.
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: device-check.sh OUTDIR}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
build=${LOOM_GPU_BUILD:-$here/build}
log=$out/device-check.log
sum=$out/summary.txt
: >"$log"
: >"$sum"
failed=0
budget=280
started=$(date +%s)
say() { echo "$*" | tee -a "$log"; }
# part NAME RESULT [REASON]: one summary line
part() {
	line=$(printf '%-34s %s' "$1" "$2")
	[ -n "$3" ] && line="$line ($3)"
	echo "$line" >>"$sum"
	say "== $line"
	[ "$2" = FAIL ] && failed=1
	return 0
}
# run_part NAME SECONDS PATTERN CMD...: PASS when CMD exits 0 within SECONDS
# and its output has a line matching PATTERN (grep -E); exit 77: NOT RUN
run_part() {
	name=$1 secs=$2 pat=$3
	shift 3
	left=$((budget - ($(date +%s) - started)))
	if [ "$left" -lt 5 ]; then
		part "$name" "NOT RUN" "the check's ${budget}s budget is spent"
		return 0
	fi
	[ "$secs" -gt "$left" ] && secs=$left
	say "-- $name: timeout $secs $*"
	# -k: a program stuck in the driver may not die of SIGTERM
	timeout -k 5 "$secs" "$@" >"$out/part.out" 2>&1 && rc=0 || rc=$?
	cat "$out/part.out" >>"$log"
	grep -E "^(not ok|# conformance|mpi_check summary)" "$out/part.out" | head -20
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then part "$name" FAIL "timed out after ${secs}s"
	elif [ "$rc" = 77 ]; then part "$name" "NOT RUN" "$(sed -n 's/.*NOT RUN: //p' "$out/part.out" | tail -1)"
	elif [ "$rc" != 0 ]; then part "$name" FAIL "exit $rc: $(grep -E '^not ok|FAIL' "$out/part.out" | head -1)"
	elif ! grep -Eq "$pat" "$out/part.out"; then part "$name" FAIL "no line /$pat/"
	else part "$name" PASS "$(grep -E "$pat" "$out/part.out" | head -1)"
	fi
}
unset RANK WORLD_SIZE LOCAL_RANK PMIX_RANK MASTER_ADDR MASTER_PORT LOOM_BACKEND LOOM_TRANSPORT
say "# loom device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(uname -n) $(uname -m)"

# the carried build
progs="mpi_check conformance gpu_count stream_order bad_buffers nccl_timeout loom-topo-probe"
lost=
for p in $progs; do [ -x "$build/bin/$p" ] || lost="$lost $p"; done
if [ -n "$lost" ]; then
	part "carried build found" FAIL "no$lost in $build/bin: run t/gpu/make-build.sh and carry t/gpu/build"
	cat "$sum"
	exit 1
fi
cat "$build/build-info" >>"$log" 2>/dev/null

# the CUDA runtime and NCCL present here: CUDA toolkits, pip wheels
# (nvidia-nccl-cu13, nvidia-cuda-runtime), the loader's cache
libdirs=
add_dir() { case ":$libdirs:" in *":$1:"*) ;; *) libdirs=${libdirs:+$libdirs:}$1 ;; esac; }
for lib in libcudart.so libnccl.so; do
	for f in /usr/local/cuda*/lib64/$lib* /usr/local/cuda*/lib/$lib* /usr/local/cuda*/targets/*/lib/$lib* \
		/usr/lib/python3*/*-packages/nvidia/*/lib/$lib* /usr/local/lib/python3*/*-packages/nvidia/*/lib/$lib* \
		"$HOME"/.local/lib/python3*/site-packages/nvidia/*/lib/$lib* /opt/conda/lib/python3*/site-packages/nvidia/*/lib/$lib*; do
		[ -e "$f" ] && add_dir "$(dirname "$f")"
	done
	if command -v python3 >/dev/null 2>&1; then
		for d in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null); do
			for f in "$d"/nvidia/*/lib/$lib*; do [ -e "$f" ] && add_dir "$(dirname "$f")"; done
		done
	fi
	for f in $(ldconfig -p 2>/dev/null | sed -n "s/.*$lib.* => //p"); do add_dir "$(dirname "$f")"; done
done
LD_LIBRARY_PATH=$build/lib${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

# the carried build loads: no library missing for any program
missing=
for p in $progs; do
	ldd "$build/bin/$p" >>"$log" 2>&1
	m=$(ldd "$build/bin/$p" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | tr '\n' ' ')
	[ -n "$m" ] && missing="$missing $p: $m"
done
if [ -n "$missing" ]; then part "carried build loads" FAIL "missing:$missing"
else part "carried build loads" PASS "libloom $(ldd "$build/bin/mpi_check" | sed -n 's/.*libnccl[^ ]* => \([^ ]*\).*/nccl \1/p')"
fi

# GPUs: nvidia-smi for the record, the CUDA runtime's count decides
if command -v nvidia-smi >/dev/null 2>&1; then say "$(nvidia-smi -L 2>&1)"; else say "nvidia-smi: not found"; fi
ngpu=$("$build/bin/gpu_count" 2>"$out/gpu.err") || ngpu=0
why=$(cat "$out/gpu.err")
say "gpu_count: ${ngpu:-0} ${why}"
[ "${ngpu:-0}" -ge 1 ] 2>/dev/null || ngpu=0
nogpu="no GPU: ${why:-cudaGetDeviceCount gives 0 devices}"

# CPU parts: host buffers through the native backend, world of one
run_part "native backend check, 1 rank" 30 "^mpi_check summary: backend=native ranks=1 checks=[0-9]+ failed=0" \
	"$build/bin/mpi_check" all
run_part "native conformance --quick, 1 rank" 30 "^# conformance backend=native ranks=1: ([0-9]+)/\1 passed" \
	"$build/bin/conformance" --quick

# GPU parts: NCCL on a world of one (NCCL refuses two ranks on one GPU)
if [ "$ngpu" -ge 1 ]; then
	part "nccl refuses cleanly without GPU" "NOT RUN" "a GPU is present"
	LOOM_BACKEND=nccl NCCL_DEBUG=${NCCL_DEBUG:-VERSION}
	export LOOM_BACKEND NCCL_DEBUG
	run_part "nccl backend check, 1 rank" 40 "^mpi_check summary: backend=nccl ranks=1 checks=[0-9]+ failed=0" \
		"$build/bin/mpi_check" all
	run_part "nccl conformance --quick, 1 rank" 40 "^# conformance backend=nccl ranks=1: ([0-9]+)/\1 passed" \
		"$build/bin/conformance" --quick
	run_part "conformance on device buffers" 60 "^# conformance backend=nccl ranks=1 buffers=device: ([0-9]+)/\1 passed" \
		"$build/bin/conformance" --quick --device
	unset LOOM_BACKEND
else
	say "-- nccl refuses cleanly without GPU"
	LOOM_BACKEND=nccl timeout 60 "$build/bin/mpi_check" all >"$out/part.out" 2>&1 && rc=0 || rc=$?
	cat "$out/part.out" >>"$log"
	if [ $rc = 2 ] && grep -q "LOOM_BACKEND=nccl: no CUDA device" "$out/part.out"; then
		part "nccl refuses cleanly without GPU" PASS "exit 2, no CUDA device"
	else
		part "nccl refuses cleanly without GPU" FAIL "exit $rc; see device-check.log"
	fi
	part "nccl backend check, 1 rank" "NOT RUN" "$nogpu"
	part "nccl conformance --quick, 1 rank" "NOT RUN" "$nogpu"
	part "conformance on device buffers" "NOT RUN" "$nogpu"
fi
part "nccl, 2+ ranks" "NOT RUN" "NCCL refuses two ranks on one GPU; needs one GPU per rank"
# the check programs: without a GPU each says NOT RUN (exit 77) itself
run_part "loom_comm_set_stream ordering" 40 "^stream_order: PASS" "$build/bin/stream_order"
for c in another-context freed mixed; do
	run_part "buffer check: $c" 30 "^bad_buffers $c: PASS" "$build/bin/bad_buffers" --case $c
done
for c in held-stream unmatched-send; do
	run_part "nccl timeout abort: $c" 40 "^nccl_timeout $c: PASS" "$build/bin/nccl_timeout" --case $c
done
part "loom_dp device gradients" "NOT RUN" "not supported: loom_dp copies gradients into host buckets"
# the process group "loom" on CUDA tensors: needs a CUDA torch and loom._c10d
# built against it (make-build.sh builds neither: it says NOT RUN, why)
run_part "torch group on CUDA tensors" 60 "^torch_cuda: PASS" \
	env LOOM_LIBRARY="$build/lib/libloom.so.0" PYTHONPATH="$build/src/python${PYTHONPATH:+:$PYTHONPATH}" \
	python3 "$here/torch_cuda.py"
# no GPU needed to run it: it says what it found, NOT RUN without NVML or GPUs
run_part "planner on live NVML" 30 "^loom-topo-probe: PASS" "$build/bin/loom-topo-probe"
rm -f "$out/part.out" "$out/gpu.err"
say "# summary (also in $sum)"
cat "$sum"
exit $failed
