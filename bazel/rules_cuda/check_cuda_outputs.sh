#!/bin/bash
# Compile-only check of one cuda_kernel target: check_cuda_outputs.sh SM CUBIN PTX REPORT PTXAS
# - ptxas re-assembles the PTX for SM (catches PTX the target's ptxas refuses);
# - the cubin's ELF e_flags name SM (catches a build for the wrong architecture);
# - the resource report is non-empty (ptxas -v ran).
set -euo pipefail
sm="$1"; cubin="$2"; ptx="$3"; report="$4"; ptxas="$5"
"$ptxas" -arch="$sm" "$ptx" -o "${TEST_TMPDIR:-/tmp}/check.cubin"
arch="${sm#sm_}"; num="${arch%a}"
# CUDA ELF: e_flags (offset 48, little-endian u32) carries the SM number in bits 8..15.
flags=$(od -An -t u4 -j 48 -N 4 "$cubin" | tr -d ' ')
got=$(( (flags >> 8) & 0xff ))
if [ "$got" != "$num" ]; then
  echo "cubin $cubin is for sm_$got, expected $sm (e_flags=$flags)" >&2
  exit 1
fi
grep -q "Compiling entry function\|Function properties" "$report" || { echo "empty ptxas report $report" >&2; exit 1; }
echo "OK $sm: ptxas accepted $(basename "$ptx"), cubin is sm_$got"
