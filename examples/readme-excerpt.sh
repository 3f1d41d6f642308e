#!/bin/sh
# The README's SpMM snippet is the part of examples/spmm.c between its two "[spmm]" marker
# lines: fails when the README no longer holds those lines, in order, as one block.
src=$(dirname "$0")/..
prog="$src/examples/spmm.c"
readme="$src/README.md"
tmp=${TMPDIR:-/tmp}/tc-readme-excerpt.$$
trap 'rm -f "$tmp".*' EXIT
# the program's lines between the markers, indentation removed
awk '/\/\* \[spmm\] \*\//{n++; next} n==1' "$prog" | sed 's/^    //' > "$tmp.want"
if ! test -s "$tmp.want"; then
    echo "readme-excerpt: no [spmm] block in $prog" >&2
    exit 1
fi
# the README's C code blocks
awk '/^```c$/{inside=1; next} /^```$/{inside=0} inside' "$readme" > "$tmp.have"
if awk -v want="$tmp.want" 'BEGIN{while((getline l < want) > 0) w[n++]=l}
     {h[m++]=$0} END{for(i=0;i+n<=m;i++){for(j=0;j<n&&h[i+j]==w[j];j++);if(j==n)exit 0}exit 1}' "$tmp.have"; then
    echo "readme-excerpt: README.md quotes examples/spmm.c ($(wc -l < "$tmp.want") lines)"
    exit 0
fi
echo "readme-excerpt: README.md does not quote examples/spmm.c between its [spmm] markers; expected:" >&2
cat "$tmp.want" >&2
exit 1
