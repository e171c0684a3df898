#!/bin/sh
# Runs a test program under Oclgrind, which then is the only OpenCL platform (gpu:0), checking
# every kernel for out-of-bounds accesses, OpenCL API errors and data races; fails when the
# program fails or Oclgrind reports anything (on stderr, where the library itself never
# writes). Kernels are built without optimisation: Oclgrind 21.10 cannot run some intrinsics
# that newer LLVM optimisers emit (llvm.abs, freeze).
#   oclgrind_check.sh PROGRAM [ARGS...]
log=$(mktemp)
trap 'rm -f "$log"' EXIT
oclgrind --check-api --data-races --build-options -cl-opt-disable "$@" 2> "$log"
status=$?
if [ -s "$log" ]; then
  echo "Oclgrind reported:"
  cat "$log"
  exit 1
fi
exit $status
