#!/usr/bin/env bash
# Quick start, step 1: installs the Debian/Ubuntu packages cltensor needs that are missing
# (apt-get; through sudo when not root), configures and builds into build/, and runs the
# samples: the device list, explicit tensor casting and the main one, moving a model.
#   scripts/setup.sh                 everything
#   scripts/setup.sh --no-samples    install and build only
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config  # compiler and build
  ocl-icd-opencl-dev opencl-headers # the OpenCL ICD loader and headers
  pocl-opencl-icd                   # PoCL: an OpenCL device on the CPU, always present
  oclgrind                          # a second, simulated OpenCL platform for the tests
  mesa-opencl-icd                   # Mesa's Rusticl: a third OpenCL implementation, on the CPU
                                    # with RUSTICL_ENABLE=llvmpipe (its Clover has no device here)
  libclblast-dev                    # GEMM on OpenCL devices
  libopenblas-dev                   # CBLAS GEMM on the host
  check libsubunit-dev              # the unit-test framework
  zlib1g-dev                        # zlib: samples/train_digits reads the gzip-compressed digits data
  libcjson-dev                      # cJSON: parses the JSON headers of safetensors files
  libpng-dev libjpeg-dev            # libpng, libjpeg(-turbo): cltensor_models reads PNG and JPEG
  clang libclang-rt-dev             # clang and its libFuzzer runtime: the fuzzer (tests/fuzz)
  libopenmpi-dev openmpi-bin        # Open MPI: distributed training (cltensor_mpi) and its tests
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
  echo "setup: every package needed is installed"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"

if [[ ${1:-} != --no-samples ]]; then
  echo; echo "== build/samples/devices"; ./build/samples/devices
  echo; echo "== build/samples/cast_tensor"; ./build/samples/cast_tensor
  echo; echo "== build/samples/move_model"; ./build/samples/move_model
fi
