#!/usr/bin/env bash
# Compiles every kernel file (cl/) with clang for
# x86-64 CPUs of three vector widths (the devices' native widths that PoCL reports for them as
# the kernels' -DCLT_VW_* options) and every dtype's options (the floating ones for the floating
# kernels), and fails on any compiler warning: a CPU driver such as PoCL prints a build's
# warnings on stderr, and warnings about the vector ABI come only from CPUs narrower than the one
# the tests run on.
#   tests/kernel_warnings.sh <kernel folder> [clang]
set -euo pipefail
clang=${2:-clang}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$tmp/cl
mkdir "$dir"
cp "$1"/*.cl "$dir"/
dtypes=(
  "-DDT=f32 -DST=float -DCT=float -DKIND=flt -DCLT_KIND_INT=0"
  "-DDT=f64 -DST=double -DCT=double -DKIND=dbl -DCLT_KIND_INT=0"
  "-DDT=f16 -DST=clt_u16 -DCT=float -DKIND=flt -DCLT_KIND_INT=0"
  "-DDT=i32 -DST=clt_i32 -DCT=clt_i64 -DKIND=int -DCLT_KIND_INT=1"
  "-DDT=i64 -DST=clt_i64 -DCT=clt_i64 -DKIND=int -DCLT_KIND_INT=1"
  "-DDT=b8 -DST=clt_u8 -DCT=clt_i64 -DKIND=int -DCLT_KIND_INT=1"
)
# cpu: float, double and long native widths, and the GEMM tile's vectors a row for float and
# double (clt__cl_gemm_nv: 4 for 64-byte vectors, else 3)
targets=("haswell 8 4 4 3 3" "skylake-avx512 16 8 8 4 4" "x86-64-v2 4 2 2 3 3")
failed=0 builds=0
for t in "${targets[@]}"; do
  read -r cpu vf vd vl nvf nvd <<<"$t"
  for f in elementwise reduce nn attention loss rows winograd optim cast random gemm; do
    parts=(common scalar)
    case $f in
      elementwise) parts+=(elementwise_ops) ;;
      nn) parts+=(window) ;;
      rows) parts+=(sort_scan) ;;
      optim) parts+=(optim_step) ;;
    esac
    parts+=("$f")
    : >"$tmp/src.cl"
    for p in "${parts[@]}"; do cat "$dir/$p.cl" >>"$tmp/src.cl"; done
    case $f in
      cast | random) sets=("") ;;
      gemm) sets=("-DT=float" "-DT=double -DGEMM_F64=1") ;;
      optim | winograd) sets=("${dtypes[0]}" "${dtypes[1]}") ;;
      attention | loss) sets=("${dtypes[@]:0:3}") ;;
      *) sets=("${dtypes[@]}") ;;
    esac
    for o in "${sets[@]}"; do
      # shellcheck disable=SC2086 # the options are words
      if ! "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -target x86_64-pc-linux-gnu \
        -march="$cpu" -O1 -S -emit-llvm -o /dev/null -DCLT_HAS_FP64=1 -DCLT_VW_FLOAT="$vf" \
        -DCLT_VW_DOUBLE="$vd" -DCLT_VW_LONG="$vl" -DCLT_GEMM_NV_FLOAT="$nvf" \
        -DCLT_GEMM_NV_DOUBLE="$nvd" $o "$tmp/src.cl" >"$tmp/log" 2>&1 ||
        grep -q "warning:" "$tmp/log"; then
        echo "kernel_warnings: $f.cl for $cpu with [$o]:"
        grep -E "warning:|error:" "$tmp/log" | sort | uniq -c | sort -rn | head -5
        failed=$((failed + 1))
      fi
      builds=$((builds + 1))
    done
  done
done
echo "kernel_warnings: $builds builds, $failed with warnings or errors"
[[ $failed -eq 0 ]]
