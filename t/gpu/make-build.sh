#!/bin/sh
# t/gpu/make-build.sh [DEST]: make the loom build that t/gpu/device-check.sh
# carries to a GPU machine (default DEST: t/gpu/build beside this script).
# The GPU machine has CUDA and NCCL but no Slurm, PMIx, MPI or hwloc, so
# the build has those off: --disable-spank, --without-pmix/mpi/xxhash.
# hwloc is used when this machine has it, for loom-topo-probe only (the
# plugin's planner; libloom never uses hwloc): its libhwloc.so and
# libudev.so are carried in lib/, as the GPU machine has none.
# The source is copied into DEST/src first (build outputs left out), so an
# in-tree configured checkout stays untouched; DEST gets lib/ (libloom),
# bin/ (mpi_check, gpu_count, conformance, stream_order, bad_buffers,
# nccl_timeout, loom-topo-probe) and build-info.
set -e
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
dest=${1:-$here/build}
jobs=${MAKE_JOBS:-2}
[ -x "$src/configure" ] || { echo "make-build.sh: no $src/configure: run ./autogen.sh there first" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
rm -rf "$dest/src" "$dest/lib" "$dest/bin"
mkdir -p "$dest/src" "$dest/lib" "$dest/bin"
# copy the sources, not what an in-tree build left there
(cd "$src" && tar cf - --exclude=.git --exclude=./t/gpu/build --exclude='./build*' \
	--exclude='./loom-*' --exclude=config.status --exclude=config.log \
	--exclude=./config.h --exclude=stamp-h1 --exclude=./libtool --exclude=Makefile \
	--exclude='*.o' --exclude='*.lo' --exclude='*.la' --exclude=.libs --exclude=.deps \
	--exclude='*.trs' --exclude='*.log' --exclude="$dest" .) | (cd "$dest/src" && tar xf -)
chmod -R u+w "$dest/src"	# a distcheck source tree is read-only
cd "$dest/src"
cfg="--disable-spank --disable-python --without-pmix --without-mpi --without-xxhash --with-cuda --with-nccl"
# shellcheck disable=SC2086
./configure $cfg >"$dest/configure.out" 2>&1 || { tail -30 "$dest/configure.out" >&2; exit 1; }
grep -q '^#define HAVE_NCCL 1' config.h || { echo "make-build.sh: configure found no NCCL/CUDA (see $dest/configure.out)" >&2; exit 1; }
progs="t/backend/mpi_check t/backend/gpu_count t/conformance/conformance t/gpu/stream_order
	t/gpu/bad_buffers t/gpu/nccl_timeout t/gpu/loom-topo-probe"
# shellcheck disable=SC2086
make -j"$jobs" runtime/libloom.la $progs >"$dest/make.out" 2>&1 || { tail -30 "$dest/make.out" >&2; exit 1; }
cp -P runtime/.libs/libloom.so* "$dest/lib/"
for p in $progs; do
	# libtool leaves a wrapper script; the real program is in .libs/
	b=$(basename "$p")
	if [ -f "$(dirname "$p")/.libs/$b" ]; then cp "$(dirname "$p")/.libs/$b" "$dest/bin/"; else cp "$p" "$dest/bin/"; fi
done
# the probe's hwloc and what it needs beyond libc, from this machine
carried=
for l in $(ldd "$dest/bin/loom-topo-probe" | awk '$1 ~ /^lib(hwloc|udev)\.so/ && $3 ~ /^\// { print $1 "=" $3 }'); do
	cp -L "${l#*=}" "$dest/lib/${l%%=*}"
	carried="$carried ${l%%=*}"
done
cp config.h "$dest/config.h"
rev=$(cd "$src" && git rev-parse --short HEAD 2>/dev/null) || rev=unknown
if [ "$rev" != unknown ] && ! (cd "$src" && git diff --quiet HEAD 2>/dev/null); then
	rev="$rev with uncommitted changes"
fi
{
	echo "configure $cfg"
	echo "source $rev"
	echo "host $(uname -m) $(date -u +%Y-%m-%dT%H:%MZ)"
	grep -E '^ (NCCL|CUDA|hwloc)' "$dest/configure.out" || true
	echo "carried libraries:${carried:- none}"
} >"$dest/build-info"
rm -rf "$dest/src"
echo "make-build.sh: carried build in $dest ($(du -sh "$dest" | cut -f1))"
