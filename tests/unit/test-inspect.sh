#!/bin/sh
# tcsparse-inspect's density columns on matrices whose blocks are known: dense 16x16 blocks
# (every block full, every condensed column of all 16 rows), one nonzero a row over a
# million columns (every column alone in its window), and a tridiagonal band.
set -u
b=${TC_BUILDDIR:?}
tool=$b/tools/tcsparse-inspect
fail=0
err() { echo "test-inspect: FAIL: $*"; fail=1; }
test -x "$tool" || { echo "test-inspect: FAIL: $tool not built"; exit 1; }
out=`"$tool" --csv blocks:256:16:8 uniform:1024:1048576:1 banded:64:1` ||
  { echo "test-inspect: FAIL: tcsparse-inspect exit $?"; exit 1; }
echo "$out"
# the value of column NAME in line LINE (2: the first input) of the CSV
col() {
  echo "$out" | awk -F, -v name="$1" -v line="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
    NR == line { if (c) print $c; else print "missing" }'
}
expect() { # NAME LINE VALUE
  v=`col "$1" "$2"`
  test "$v" = "$3" || err "input $(($2 - 1)): $1 = $v, expected $3"
}
# 8 dense 16x16 blocks: 16 full 16x8 blocks, 128 condensed columns of 16 nonzeros
expect nnz 2 2048
expect blocks_nnz_65-128 2 16
expect nnz_in_blocks_65-128 2 2048
expect cols_nnz_9-16 2 128
expect nnz_in_cols_9-16 2 2048
expect cols_nnz_1 2 0
# one nonzero a row: every column alone in its window (distinct columns: at most 16 of 2^20
# per window, a repeat being a 1-in-2^16 event, tolerated below)
n1=`col nnz_in_cols_1 3`
test "$n1" -ge 1020 2>/dev/null ||
  err "uniform: $n1 of 1024 nonzeros in columns of one, expected about all"
# tridiagonal 64 x 64 (190 nonzeros): the interior columns of a window hold 3 nonzeros, the
# two at each window edge fewer; no column holds more than 3, every nonzero is counted once
expect nnz 4 190
expect cols_nnz_5-8 4 0
expect cols_nnz_9-16 4 0
sum=0
for k in 1 2 3-4; do sum=$((sum + `col nnz_in_cols_$k 4`)); done
test "$sum" -eq 190 || err "banded: the column histogram counts $sum nonzeros, expected 190"
sum=0
for k in 1 2 3-4 5-8 9-16 17-32 33-64 65-128; do sum=$((sum + `col nnz_in_blocks_$k 4`)); done
test "$sum" -eq 190 || err "banded: the block histogram counts $sum nonzeros, expected 190"
exit $fail
