#!/bin/sh
# Real clients of the cuSPARSE interposer, on a GPU machine:
#   run-clients.sh BUILDDIR [GRAPH.mtx.gz ...]
# 1. tests/preload/sample_client (a C program written like cuSPARSE's samples) alone and under
#    LD_PRELOAD with the route automatic, forced to the tensor cores, and pass-through;
# 2. tests/preload/torch_gcn.py (PyTorch: sparse CSR @ dense, two-layer GCN forward and
#    backward) on a generated block graph and on each GRAPH, without and with the interposer:
#    results checked against FP64 in both runs, intercepted calls counted from TCSPARSE_LOG,
#    end-to-end times side by side.
set -u
b=${1:?usage: run-clients.sh BUILDDIR [GRAPH.mtx.gz ...]}
shift
b=`cd "$b" && pwd`
here=`cd "$(dirname "$0")" && pwd`
so=$b/compat/cusparse/.libs/libtcsparse_preload.so
py=${PYTHON:-python3}
fail=0

echo "== sample_client"
TC_PRELOAD_SO=$so TC_BUILDDIR=$b sh "$here/test-preload-gpu.sh"
rc=$?
test $rc -eq 0 || { echo "sample_client checks: exit $rc"; fail=1; }

echo "== PyTorch"
echo "(ms: median CUDA-event time without the interposer / with it / with it and"
echo " TCSPARSE_X_PRELOAD_TRUST_POINTERS=1; x: without / with)"
printf '%-24s %9s %8s %8s %8s %6s %8s %8s %8s %6s %8s\n' graph nnz spmm spmm_pre spmm_tr x \
  gcn gcn_pre gcn_tr x tc_calls
for g in "" "$@"; do
  arg=; test -n "$g" && arg="--mtx $g"
  plain=`$py "$here/torch_gcn.py" $arg 2>/dev/null | tail -1`
  pre=`LD_PRELOAD=$so TCSPARSE_LOG=1 $py "$here/torch_gcn.py" $arg 2>log.err | tail -1`
  trust=`LD_PRELOAD=$so TCSPARSE_X_PRELOAD_TRUST_POINTERS=1 $py "$here/torch_gcn.py" $arg 2>/dev/null | tail -1`
  echo "   without: $plain"
  echo "   with:    $pre"
  echo "   trusted: $trust"
  tc=`grep -c 'cusparseSpMM -> tc_' log.err`
  all=`grep -c 'cusparseSpMM -> ' log.err`
  grep 'cusparseSpMM -> ' log.err | sed 's/ (.*//' | sort | uniq -c | sed 's/^/     /'
  grep -m3 'cusparseSpMM -> cusparse' log.err | sed 's/^/     e.g. /'
  $py - "$plain" "$pre" "$trust" "$tc" "$all" <<'PYEOF' || fail=1
import json, sys
a, b, t = (json.loads(x) for x in sys.argv[1:4])
tc, total = int(sys.argv[4]), int(sys.argv[5])
print(f"{a['graph'][:24]:<24} {a['nnz']:>9} {a['ms_spmm']:>8.4f} {b['ms_spmm']:>8.4f} "
      f"{t['ms_spmm']:>8.4f} {a['ms_spmm'] / b['ms_spmm']:>6.2f} {a['ms_gcn_fwd_bwd']:>8.4f} "
      f"{b['ms_gcn_fwd_bwd']:>8.4f} {t['ms_gcn_fwd_bwd']:>8.4f} "
      f"{a['ms_gcn_fwd_bwd'] / b['ms_gcn_fwd_bwd']:>6.2f} {tc:>4}/{total}")
if not (a["ok"] and b["ok"] and t["ok"]):
    print("   FAILED: relerr without", a["relerr"], "with", b["relerr"], "trusted", t["relerr"])
    sys.exit(1)
if total == 0:
    print("   FAILED: no cusparseSpMM call intercepted")
    sys.exit(1)
PYEOF
done
rm -f log.err
test $fail -eq 0 && echo "run-clients: all OK" || echo "run-clients: FAILED"
exit $fail
