#! /bin/sh
# test-grb-preload.sh -- libtcsparse_grb_preload.so intercepts GrB_mxm of an ordinary
# GraphBLAS program (tests/graphblas/grb_client, linked with -lgraphblas only).
#  1. the module exports GrB_mxm and nothing else;
#  2. the client passes on its own;
#  3. under LD_PRELOAD with TCSPARSE_LOG=1 every GrB_mxm is intercepted (a log line each)
#     and the client still passes: passed through without a GPU, on the GPU with one;
#  4. with the host test backend both calls are computed by the adapter (SpMM and SDDMM)
#     and the client's own checks pass;
#  5. TCSPARSE_GRB=off: intercepted, passed through.
# Run by `make check` from the build directory; TC_GRB_PRELOAD_SO names the module.

set -u
so=${TC_GRB_PRELOAD_SO:-compat/graphblas/.libs/libtcsparse_grb_preload.so}
client=./tests/graphblas/grb_client
fail() { echo "test-grb-preload: FAIL: $*" >&2; exit 1; }

test -f "$so" || fail "$so not built"
test -x "$client" || fail "$client not built"

# 1. exported symbols (defined, global, functions or data)
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort | tr '\n' ' ')
test "$exported" = "GrB_mxm " || fail "exports '$exported', expected only GrB_mxm"

# A module built with AddressSanitizer needs its runtime loaded first.
preload=$so
asan=$(ldd "$so" 2>/dev/null | awk '/libasan/ { print $3; exit }')
test -n "$asan" && preload="$asan $so"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/grb-preload.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
: > "$log"

# 2. alone
"$client" >>"$log" 2>&1 || { cat "$log" >&2; fail "grb_client fails without the preload module"; }

run() { # run LABEL ENV...: the client under the module; stderr kept in $log.$LABEL
  label=$1; shift
  env LD_PRELOAD="$preload" TCSPARSE_LOG=1 TCSPARSE_X_GRB_MIN_FLOPS=0 "$@" "$client" \
    >"$log.$label" 2>&1 || { cat "$log.$label" >&2; fail "grb_client fails under the module ($label)"; }
  n=$(grep -c 'tcsparse-grb: GrB_mxm intercepted' "$log.$label")
  test "$n" -ge 2 || { cat "$log.$label" >&2; fail "$label: $n intercepted calls, expected 2"; }
}

# 3. as it comes
run default
if grep -q 'GrB_mxm intercepted -> GraphBLAS (no CUDA device' "$log.default"; then
  echo "test-grb-preload: no CUDA device: calls passed through"
else
  grep -q 'GrB_mxm intercepted -> SpMM on the GPU' "$log.default" || \
    { cat "$log.default" >&2; fail "SpMM not run on the GPU"; }
  grep -q 'GrB_mxm intercepted -> SDDMM on the GPU' "$log.default" || \
    { cat "$log.default" >&2; fail "SDDMM not run on the GPU"; }
fi

# 4. host test backend
run host TCSPARSE_X_GRB_BACKEND=host
grep -q 'GrB_mxm intercepted -> SpMM on the host' "$log.host" || \
  { cat "$log.host" >&2; fail "SpMM not computed by the adapter"; }
grep -q 'GrB_mxm intercepted -> SDDMM on the host' "$log.host" || \
  { cat "$log.host" >&2; fail "SDDMM not computed by the adapter"; }

# 5. switched off
run off TCSPARSE_GRB=off
grep -q 'GrB_mxm intercepted -> GraphBLAS (TCSPARSE_GRB=off)' "$log.off" || \
  { cat "$log.off" >&2; fail "TCSPARSE_GRB=off ignored"; }

echo "test-grb-preload: ok"
exit 0
