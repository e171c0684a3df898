#!/usr/bin/env bash
# clt-info's output and exit status as scripts use them: the list, -v, -d, --version, --cache,
# --warmup (on cpu and on gpu:0, into a fresh disk cache), a kernel that does not build, usage
# errors and a bad CLT_VISIBLE_DEVICES.
#   clt_info_check.sh CLT_INFO VERSION CL_DIR
set -uo pipefail
info=$1 version=$2 cl_dir=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/clt-info.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
# the same every time, whatever the caller's environment: no CLT_LOG, a scratch disk cache
unset CLT_LOG
export CLT_CACHE_DIR=$work/default-cache

# matches REGEX FILE: a line of FILE matches; "-" for an empty FILE, "*" for anything
matches() {
  case $1 in
    -) [[ ! -s $2 ]] ;;
    '*') true ;;
    *) grep -Eq -- "$1" "$2" ;;
  esac
}

# expect STATUS STDOUT-REGEX STDERR-REGEX -- ARGS...: runs clt-info, checks all three
expect() {
  local want=$1 out_re=$2 err_re=$3; shift 4
  "$info" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got != "$want" ]] || ! matches "$out_re" "$work/out" || ! matches "$err_re" "$work/err"; then
    echo "FAIL: clt-info $* (${ENVS:-}): exit $got (want $want)"
    echo "  stdout (want /$out_re/):"; sed 's/^/    /' "$work/out"
    echo "  stderr (want /$err_re/):"; sed 's/^/    /' "$work/err"
    failures=$((failures + 1))
  fi
}

gpus=$("$info" | grep -c '^gpu:[0-9]*: ')
expect 0 '^cpu: .+ \(host, [0-9]+ compute units, [0-9.]+ [KMGT]iB\)$' - --
[[ $("$info" | wc -l) == $((gpus + 1)) ]] || { echo "FAIL: clt-info lists more than cpu and gpu:N"; failures=$((failures + 1)); }
expect 0 "^cltensor $version\$" - -- --version
expect 0 '^default device: (cpu|gpu:0)$' - -- -v
expect 0 '^  f64: +yes$' - -- -v -d cpu
expect 0 '^cpu: ' - -- -d cpu -d cpu
[[ $("$info" -d cpu -d cpu | wc -l) == 1 ]] || { echo "FAIL: -d cpu -d cpu lists cpu twice"; failures=$((failures + 1)); }
expect 3 - 'gpu:99: no such device; the valid names are cpu' -- -d gpu:99
expect 3 - 'nosuch: .*the valid names are cpu' -- --device=nosuch
expect 2 - 'unknown option --nope' -- --nope
expect 2 - '-d needs a device name' -- -d
expect 2 - '--version is used alone' -- --version -v
expect 0 'usage: clt-info' - -- --help
expect 0 '^cpu: kernels ready in [0-9.]+ s$' - -- --warmup -d cpu

ENVS="CLT_CACHE_DIR=$work/cache"
export CLT_CACHE_DIR=$work/cache
expect 0 "^$work/cache\$" - -- --cache
expect 0 "^disk cache: $work/cache \\(0 entries" - -- -v -d cpu
if ((gpus > 0)); then
  # nothing on stderr: neither the library nor the OpenCL compiler prints while it builds
  expect 0 '^gpu:0: kernels ready in [0-9.]+ s$' - -- --warmup -d gpu:0
  expect 0 "^disk cache: $work/cache \\([1-9][0-9]* entries" - -- -v -d cpu
  # a kernel source that does not build: the warm-up fails and says which program
  mkdir "$work/cl" && cp "$cl_dir"/*.cl "$work/cl"
  echo "this is not OpenCL C" >>"$work/cl/reduce.cl"
  ENVS="CLT_KERNEL_DIR=$work/cl"
  CLT_KERNEL_DIR=$work/cl expect 1 '^cpu: kernels ready' 'gpu:0: warm-up failed: .*reduce' -- --warmup -d cpu -d gpu:0
fi
# a vendors file naming a driver that does not exist: a warning says so, the rest works
if ((gpus > 0)); then
  # the drivers the environment registers (OCL_ICD_VENDORS may name a folder or one file), plus one
  mkdir "$work/vendors"
  registered=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
  if [[ -d $registered ]]; then cp "$registered"/*.icd "$work/vendors/" 2>/dev/null; else cp "$registered" "$work/vendors/"; fi
  echo /nonexistent/libOpenCL-driver.so >"$work/vendors/missing.icd"
  ENVS="OCL_ICD_VENDORS=$work/vendors"
  OCL_ICD_VENDORS=$work/vendors expect 0 '^gpu:0: ' \
    "warning: OpenCL: $work/vendors/missing.icd names /nonexistent/libOpenCL-driver.so, which does not exist: that platform is missing" --
fi
ENVS="CLT_CACHE_DIR=off"
CLT_CACHE_DIR=off expect 1 - 'the disk cache is off \(CLT_CACHE_DIR=off' -- --cache
ENVS="CLT_CACHE_DIR=/proc/none"
CLT_CACHE_DIR=/proc/none expect 1 - 'the disk cache is off: /proc/none cannot be created' -- --cache
ENVS="CLT_VISIBLE_DEVICES=nosuch"
CLT_VISIBLE_DEVICES=nosuch expect 1 - 'CLT_VISIBLE_DEVICES="nosuch"' --
ENVS="OCL_ICD_VENDORS=$work/empty"
mkdir "$work/empty"
OCL_ICD_VENDORS=$work/empty expect 0 '^cpu: ' - --
[[ $(OCL_ICD_VENDORS=$work/empty "$info" | wc -l) == 2 ]] || { echo "FAIL: without OpenCL, clt-info lists more than cpu and why"; failures=$((failures + 1)); }
OCL_ICD_VENDORS=$work/empty expect 0 '^no gpu:N: OpenCL library .*: no OpenCL platform' - --
ENVS="CLT_OPENCL_LIBRARY=off"
CLT_OPENCL_LIBRARY=off expect 0 '^no gpu:N: OpenCL library not loaded: CLT_OPENCL_LIBRARY=off$' - --
ENVS="CLT_OPENCL_LIBRARY=$work/none.so"
CLT_OPENCL_LIBRARY=$work/none.so expect 0 '^no gpu:N: OpenCL library not loaded: CLT_OPENCL_LIBRARY=' 'warning: OpenCL: OpenCL library not loaded' --
ENVS="CLT_OPENCL_LIBRARY=libz.so.1"
CLT_OPENCL_LIBRARY=libz.so.1 expect 0 '^no gpu:N: libz.so.1 lacks clBuildProgram, so it is not used$' 'warning: OpenCL: libz.so.1 lacks clBuildProgram' --
ENVS="CLT_CLBLAST_LIBRARY=off"
CLT_CLBLAST_LIBRARY=off expect 0 '^opencl: OpenCL library .*; CLBlast not loaded: CLT_CLBLAST_LIBRARY=off$' - -- -v
ENVS=""
expect 0 '^opencl: OpenCL library .*, [0-9]+ platforms?; CLBlast' - -- -v
OCL_ICD_VENDORS=$work/empty expect 0 '^default device: cpu$' - -- -v

if ((failures)); then
  echo "clt_info_check: $failures failed"
  exit 1
fi
echo "clt_info_check: ok ($gpus OpenCL devices)"
