#!/usr/bin/env bash
# The seed sample on each OpenCL implementation the tests use: move_model on PoCL and on Mesa's
# Rusticl (llvmpipe) prints the same as each other, the same values as on cpu, and nothing on
# stderr.
#   samples_check.sh MOVE_MODEL
set -uo pipefail
sample=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/clt-samples.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset CLT_LOG
export RUSTICL_ENABLE=llvmpipe
failures=0

# run NAME VISIBLE DEVICE: move_model DEVICE with CLT_VISIBLE_DEVICES=VISIBLE, its output into
# NAME.out/.err
run() {
  if ! CLT_VISIBLE_DEVICES=$2 "$sample" $3 >"$work/$1.out" 2>"$work/$1.err"; then
    echo "FAIL: move_model on $1 exited with an error:"; cat "$work/$1.err"
    failures=$((failures + 1))
  elif [[ -s $work/$1.err ]]; then
    echo "FAIL: move_model on $1 wrote on stderr:"; cat "$work/$1.err"
    failures=$((failures + 1))
  fi
}

run cpu "" ""
run pocl pthread gpu:0
run rusticl llvmpipe gpu:0
for name in pocl rusticl; do
  if ! grep -q "Using device: gpu:0" "$work/$name.out"; then
    echo "FAIL: move_model on $name did not run on gpu:0:"; cat "$work/$name.out"
    failures=$((failures + 1))
  elif [[ $(grep -o "tensor(\[\[[^]]*\]\]" "$work/$name.out") != \
        "$(grep -o "tensor(\[\[[^]]*\]\]" "$work/cpu.out")" ]]; then
    echo "FAIL: move_model's output on $name is not cpu's:"; grep "tensor(" "$work"/*.out
    failures=$((failures + 1))
  fi
done
if ! diff "$work/pocl.out" "$work/rusticl.out" >"$work/diff"; then
  echo "FAIL: move_model prints other things on PoCL and Rusticl:"; cat "$work/diff"
  failures=$((failures + 1))
fi
if ((failures)); then
  echo "samples_check: $failures failures"
  exit 1
fi
echo "samples_check: move_model gives the same output on cpu, PoCL and Rusticl"
