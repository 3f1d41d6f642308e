#!/bin/sh
# The in-process builds of the GPU tests (tests/shim/criterion/criterion.h) list their tests,
# and a quick selection of them runs to completion: without a GPU every test skips; with one,
# the selected conversion tests pass.  The full in-process runs are build-aux/gpu-sanitize's.
set -u
b=${TC_BUILDDIR:-.}
fail=0
for p in spmm sddmm convert cusparse gnn misuse stress reorder multi; do
  prog=$b/tests/shim/san_test_gpu_$p
  n=`"$prog" --list | wc -l`
  if test "$n" -lt 1; then echo "test-shim: FAIL: $prog lists no test"; fail=1; fi
  echo "test-shim: $prog: $n tests"
done
"$b/tests/shim/san_test_gpu_convert" gpu_convert/empty_and_tiny gpu_convert/rejects_bad_structure
rc=$?
case $rc in
  0) ;;
  77) echo "test-shim: no GPU: the selected tests skipped (exit 77)" ;;
  *) echo "test-shim: FAIL: the in-process conversion tests (exit $rc)"; fail=1 ;;
esac
# each parameter of a parameterized test reports on its own
n=`"$b/tests/shim/san_test_gpu_cusparse" gpu_cusparse/spmm 2>&1 | grep -c '^\[\(PASS\|SKIP\|FAIL\)\] gpu_cusparse/spmm\['`
if test "$n" -lt 2; then echo "test-shim: FAIL: parameters of gpu_cusparse/spmm not reported one by one"; fail=1; fi
# "!suite/name" leaves a test out, also one named (gpu-sanitize's memcheck pass)
n=`"$b/tests/shim/san_test_gpu_convert" gpu_convert/empty_and_tiny gpu_convert/rejects_bad_structure \
     '!gpu_convert/rejects_bad_structure' 2>&1 | sed -n 's/.*in-process run: \([0-9]*\) tests.*/\1/p'`
if test "${n:-0}" -ne 1; then
  echo "test-shim: FAIL: '!gpu_convert/rejects_bad_structure' left ${n:-no} tests of 2 to run"; fail=1
fi
# a name that matches nothing is an error, not an empty success
if "$b/tests/shim/san_test_gpu_convert" no_such_suite/ 2>/dev/null; then
  echo "test-shim: FAIL: an unmatched selection passed"; fail=1
fi
exit $fail
