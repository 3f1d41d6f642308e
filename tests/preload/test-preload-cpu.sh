#!/bin/sh
# The interposer without a GPU (CI): its exported names are exactly the version script's, in
# the libcusparse.so.12 node; a cuSPARSE program runs unchanged under it, with its calls
# forwarded and logged; TCSPARSE_ROUTE=cusparse makes it a pass-through.
set -u
so=${TC_PRELOAD_SO:?} map=${TC_PRELOAD_MAP:?} b=${TC_BUILDDIR:?}
client=$b/tests/preload/forward_client
fail=0
tmp=`mktemp -d` || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
err() { echo "test-preload-cpu: FAIL: $*"; fail=1; }

test -f "$so" || { echo "test-preload-cpu: FAIL: $so not built"; exit 1; }
# In a --enable-sanitizers build the interposer needs the ASan runtime loaded before it.
pre=$so
asan=`ldd "$so" 2>/dev/null | awk '/libasan/ { print $3 }'`
test -n "$asan" && pre="$asan $so"

# 1. exported symbols
want=`sed -n 's/^ *\(cusparse[A-Za-z0-9_]*\);$/\1/p' "$map" | sort`
got=`nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "W" { sub(/@.*/, "", $3); print $3 }' | sort`
if test "$want" != "$got"; then
  err "exported functions differ from $map"
  echo "--- wanted"; echo "$want"; echo "--- exported"; echo "$got"
fi
nver=`nm -D --defined-only "$so" | awk '$2 != "T" && $2 != "W" && $3 != "libcusparse.so.12"' | wc -l`
test "$nver" -eq 0 || err "other defined dynamic symbols: `nm -D --defined-only "$so" | awk '$2 != "T"'`"
objdump -T "$so" | awk '/cusparseSpMM$/ { print $(NF-1) }' | grep -qx 'libcusparse.so.12' ||
  err "cusparseSpMM is not in the libcusparse.so.12 version node"

# 2. the program alone, then under the interposer with the log on
"$client" > alone.out 2> alone.err || { cat alone.out alone.err; err "forward_client fails without the interposer"; }
LD_PRELOAD="$pre" TCSPARSE_LOG=1 "$client" > pre.out 2> pre.err || {
  cat pre.out pre.err; err "forward_client fails under the interposer"; }
cat pre.err
cmp -s alone.out pre.out || err "stdout differs under the interposer"
grep -q '^tcsparse-preload: loaded (routing)' pre.err || err "no 'loaded' line"
for f in cusparseSpMM_bufferSize cusparseSpMM_preprocess cusparseSDDMM_bufferSize; do
  grep -q "^tcsparse-preload: $f -> cusparse" pre.err || err "no log line for $f"
done
grep -q "^tcsparse-preload: cusparseSpMM -> cusparse (null handle)" pre.err ||
  err "no log line for cusparseSpMM with the reason"
# the forked child's call (the only pass-through in a routing run)
grep -q "^tcsparse-preload: cusparseSpMM -> cusparse (pass-through)" pre.err ||
  err "a forked child's call was not passed through"

# 3. pass-through
LD_PRELOAD="$pre" TCSPARSE_LOG=1 TCSPARSE_ROUTE=cusparse "$client" > pt.out 2> pt.err ||
  err "forward_client fails with TCSPARSE_ROUTE=cusparse"
grep -q 'loaded (TCSPARSE_ROUTE=cusparse: pass-through)' pt.err || err "no pass-through line"
grep -q 'cusparseSpMM -> cusparse (pass-through)' pt.err || err "no pass-through log for SpMM"

exit $fail
