# t/backend/lib.sh: helpers for the backend tests t/t6*.t.
#   BCHECK, ADOPT, CONF   the test programs (CONF empty when not built)
#   mpi_env               the Open MPI settings that work on one host with
#                         two fake nodes (TCP over loopback, no vader)
#   have_config NAME      config.h defines NAME to 1
BCHECK=$LOOM_BUILD_DIR/t/backend/mpi_check
ADOPT=$LOOM_BUILD_DIR/t/backend/mpi_adopt
GPUCOUNT=$LOOM_BUILD_DIR/t/backend/gpu_count
CONF=$LOOM_BUILD_DIR/t/conformance/conformance
[ -x "$CONF" ] || CONF=
export BCHECK ADOPT GPUCOUNT CONF

have_config() {
	grep -q "^#define $1 1" "$LOOM_BUILD_DIR/config.h"
}

mpi_env() {
	OMPI_MCA_btl=self,tcp
	OMPI_MCA_btl_tcp_if_include=lo
	OMPI_MCA_oob_tcp_if_include=lo
	OMPI_ALLOW_RUN_AS_ROOT=1
	OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_btl OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include \
		OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
}

# summary FILE PATTERN: FILE has the summary line; print it as a TAP comment
summary() {
	grep -E -- "$2" "$1" >/dev/null || { echo "no summary /$2/ in:"; cat "$1"; return 1; }
	grep -E -- "$2" "$1" | sed 's/^/# /' >&3
}
