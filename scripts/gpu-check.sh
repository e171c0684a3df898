#!/usr/bin/env bash
# The prepared check on a machine with a real GPU: the test suite, the samples and the
# benchmarks on whatever OpenCL GPU it has, every log and JSON line into one folder, in well
# under 10 minutes. Two steps:
#
#   scripts/gpu-check.sh prepare [BUILD]   here, on Debian/Ubuntu with the packages installed
#                                          (scripts/setup.sh): a Release build into BUILD
#                                          (default build-gpu) without MPI, its object files
#                                          removed, and in BUILD/lib the shared libraries its
#                                          programs need beyond the C runtime (OpenCL's ICD
#                                          loader, CLBlast, OpenBLAS, Check, cJSON, ...), so
#                                          that a machine without apt can run them
#   scripts/gpu-check.sh run [OUT] [BUILD] on the GPU machine, from a copy of the repository
#                                          holding BUILD: writes OUT (default gpu-check/)
#
# `run` registers the NVIDIA OpenCL driver (libnvidia-opencl.so.1, wherever the machine keeps
# it) in a vendors folder of its own unless OCL_ICD_VENDORS is set, then writes into OUT:
# env.txt (the GPU, the drivers found, the environment), clt-info.txt (the devices as the
# library sees them), ctest.log (the suite; the PoCL, Oclgrind and Rusticl tests fail where
# those are missing, which the log shows by name), samples.log (devices, cast_tensor and
# move_model, then train_digits for 2 epochs and infer_digits with what it saved, on gpu:0),
# bench.jsonl and bench.log (bench_matmul, bench_ops, bench_dispatch and bench_models --quick:
# their JSON lines, and the rest of their output) and torch_cuda.json (models_torch.py on cuda
# where PyTorch sees one: bench_models' models). Each step has a time limit, and the whole run
# one of 540 s (GPU_CHECK_SECONDS); a step that fails or runs out of time is noted in
# summary.txt and the rest go on.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Libraries every machine has (the C runtime); everything else a program needs is shipped.
system_lib() {
  case "$1" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
      libgcc_s.so* | libstdc++.so* | libresolv.so*) return 0 ;;
  esac
  return 1
}

prepare() {
  local build=${1:-build-gpu}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLT_BUILD_MPI=OFF || return 1
  cmake --build "$build" -j"$(nproc)" || return 1
  find "$build" -name '*.o' -delete
  mkdir -p "$build/lib"
  local bin lib path
  for bin in "$build"/tests/clt_tests "$build"/clt-info "$build"/samples/* "$build"/tests/bench/bench_*; do
    [[ -f $bin && -x $bin ]] || continue
    while read -r lib _ path _; do
      [[ $path == /* && $(realpath "$path") != "$(realpath "$build")"/* ]] || continue
      system_lib "$lib" || cp -Lu "$path" "$build/lib/$lib"
    done < <(ldd "$bin")
  done
  # the ICD loader opens drivers itself; the driver on the GPU machine is its own
  echo "gpu-check: $build ready ($(du -sh "$build" | cut -f1)); libraries: $(ls "$build/lib" | tr '\n' ' ')"
}

# Runs a step with a time limit (cut to what is left of TOTAL_S seconds, the whole run's
# limit; skipped when under 10 s are left), its output into a log; notes the outcome in
# summary.txt.
TOTAL_S=${GPU_CHECK_SECONDS:-540}
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((TOTAL_S - SECONDS))
  ((limit > left)) && limit=$left
  if ((limit < 10)); then
    printf '%-28s %-28s\n' "$name" "skipped (out of time)" >>"$out/summary.txt"
    return
  fi
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>>"${STEP_ERR:-$log}"
  local rc=$?
  local outcome="ok"
  ((rc == 124 || rc == 137)) && outcome="out of time (${limit} s)"
  ((rc != 0 && rc != 124 && rc != 137)) && outcome="failed (exit status $rc)"
  printf '%-28s %-28s %4d s\n' "$name" "$outcome" $((SECONDS - start)) >>"$out/summary.txt"
}

run() {
  out=$(realpath -m "${1:-gpu-check}")
  local build=${2:-build-gpu}
  [[ -x $build/tests/clt_tests ]] || { echo "gpu-check: no $build: run 'prepare' first" >&2; return 1; }
  build=$(realpath "$build")
  mkdir -p "$out"
  : >"$out/summary.txt"

  # the build's paths were this repository's elsewhere: point the test files at this copy
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  local old_build
  old_build=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt")
  if [[ -n $src && $src != "$root" ]]; then
    find "$build" -name CTestTestfile.cmake -exec sed -i "s|$old_build|$build|g; s|$src|$root|g" {} +
  fi

  export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [[ -z ${OCL_ICD_VENDORS:-} ]]; then
    local nv
    nv=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
      /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n1)
    if [[ -n $nv ]]; then
      mkdir -p "$out/vendors"
      echo "$nv" >"$out/vendors/nvidia.icd"
      export OCL_ICD_VENDORS="$out/vendors"
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nv")"
    fi
  fi
  export POCL_CACHE_DIR="$out/cache/pocl" CLT_CACHE_DIR="$out/cache/cltensor"

  {
    date -u
    uname -a
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    echo "OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-}"
    ls -l "${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}" 2>&1
    cat "${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}"/*.icd 2>&1
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    lscpu 2>&1 | head -n 20
    git -C "$root" log --oneline -1 2>&1
  } >"$out/env.txt"

  step clt-info 30 "$out/clt-info.txt" "$build/clt-info" -v
  step "warm-up (gpu:0)" 90 "$out/clt-info.txt" "$build/clt-info" -d gpu:0 --warmup
  step ctest 240 "$out/ctest.log" ctest --test-dir "$build" --output-on-failure -j"$(nproc)" \
    --timeout 120
  local s data="$root/samples/data/digits.csv.gz"
  for s in devices cast_tensor move_model; do
    echo "== $s" >>"$out/samples.log"
    step "sample $s" 60 "$out/samples.log" "$build/samples/$s"
  done
  mkdir -p "$out/digits"
  echo "== train_digits gpu:0, 2 epochs" >>"$out/samples.log"
  step "sample train_digits" 60 "$out/samples.log" "$build/samples/train_digits" gpu:0 \
    --epochs 2 --out "$out/digits" --save "$out/digits" --data "$data"
  echo "== infer_digits gpu:0" >>"$out/samples.log"
  step "sample infer_digits" 60 "$out/samples.log" "$build/samples/infer_digits" \
    "$out/digits/cnn.safetensors" gpu:0 --data "$data"
  # the benchmarks' JSON lines into bench.jsonl, their other output into bench.log
  local b
  for b in "bench_matmul 60" "bench_ops 60" "bench_dispatch 30" "bench_models 120 --quick cpu gpu:0"; do
    set -- $b
    STEP_ERR="$out/bench.log" step "$1" "$2" "$out/bench.jsonl" "$build/tests/bench/$1" "${@:3}"
  done
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    step "PyTorch on cuda" 60 "$out/torch_cuda.json" \
      python3 tests/bench/models_torch.py --device cuda --threads 1 --repeats 3 --new 16
  else
    echo "PyTorch on cuda              not available" >>"$out/summary.txt"
  fi
  cat "$out/summary.txt"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
