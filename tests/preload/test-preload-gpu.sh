#!/bin/sh
# The interposer with real cuSPARSE work (GPU machine; skipped without a GPU): the sample
# client passes alone, under the interposer with the automatic route, with the route forced to
# the tensor cores (where the log must show them taken for the row-major SpMM, its transpose,
# the captured SpMM and the SDDMM, and cuSPARSE for column-major B/C, and late ordering's trial in the
# training loop deciding), forced to the CUDA-core kernels (the row-major SpMM and the SDDMM on
# them), and as a pass-through.  With the automatic route an SDDMM keeps the model's decision
# (no CUDA-core stand-in: docs/preload.md, "Measured choice").
set -u
so=${TC_PRELOAD_SO:?} b=${TC_BUILDDIR:?}
client=$b/tests/preload/sample_client
fail=0
tmp=`mktemp -d` || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
err() { echo "test-preload-gpu: FAIL: $*"; fail=1; }

"$client" > alone.out 2>&1
rc=$?
cat alone.out
test $rc -eq 77 && exit 77
test $rc -eq 0 || err "sample_client fails without the interposer"

for mode in auto tc cuda-core cusparse; do
  LD_PRELOAD=$so TCSPARSE_LOG=1 TCSPARSE_ROUTE=$mode "$client" > $mode.out 2> $mode.err ||
    { err "sample_client fails under the interposer, route $mode"; }
  echo "== route $mode"; cat $mode.out $mode.err
done
grep -q 'cusparseSpMM -> cusparse (column-major B or C)' tc.err ||
  err "column-major SpMM not sent to cuSPARSE"
n=`grep -c 'cusparseSpMM -> tc_spmm' tc.err`
test "$n" -ge 5 || err "forced route: $n tensor-core SpMM calls, expected 5"
grep -q 'cusparseSDDMM -> tc_sddmm' tc.err || err "forced route: SDDMM not on tensor cores"
grep -q 'cusparseSpMM(opA T, opB N) -> tc_spmm' tc.err ||
  err "forced route: the transposed SpMM not on tensor cores"
grep -q 'cusparseSpMM -> tc_spmm_csr' cuda-core.err || err "forced CUDA cores: no SpMM on them"
grep -q 'cusparseSDDMM -> tc_sddmm_csr' cuda-core.err || err "forced CUDA cores: no SDDMM on them"
grep -q 'cusparseSDDMM.*timed against the real cuSPARSE' auto.err &&
  err "automatic route: the CUDA-core SDDMM stood in for the model's cuSPARSE"
grep -q 'cusparseSpMM -> cusparse (pass-through)' cusparse.err || err "no pass-through"
grep -q 'kept plan adopted by a new descriptor (checked on the device)' tc.err ||
  err "the plan of a destroyed descriptor was not reused"
grep -q 'kept plan dropped: a check on the device found another structure in the arrays' tc.err ||
  err "a matrix rebuilt in the same arrays was not detected"
# the steady state of a descriptor-per-product program, captured in global mode (no host
# synchronisation, no allocation): both captured products on the tensor cores
sed -n '/sample_client: capture begins/,/sample_client: capture ends/p' tc.err > captured.err
n=`grep -c 'cusparseSpMM -> tc_spmm' captured.err`
test "$n" -eq 2 || { err "forced route: $n of 2 captured products on the tensor cores"; cat captured.err; }
# late ordering (docs/reorder.md) under the interposer: the training loop's trial decides
grep -q '; ordering: trial, first-col built' tc.err ||
  err "forced route: no late-ordering trial in the training loop"
grep -Eq "; ordering: (first-col|the caller's order) kept" tc.err ||
  err "forced route: the late-ordering trial did not decide"
exit $fail
