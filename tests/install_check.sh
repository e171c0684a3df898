#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds programs outside the tree against it:
# with find_package (shared and static imported targets, C and C++) and with pkg-config, then
# runs them and the installed clt-info. Checks the installed layout and the SONAME. With
# CLT_INSTALL_MODELS=1 (the default) the same for cltensor_models: its headers, libraries,
# CMake component and cltensor_models.pc, and a program running ResNet-18 on an image (read
# and transformed by the library) built both ways.
#   install_check.sh CMAKE BUILD_DIR SOURCE_DIR VERSION SOVERSION CC
set -euo pipefail
cmake=$1 build=$2 src=$3 version=$4 soversion=$5 cc=$6
work=$(mktemp -d "${TMPDIR:-/tmp}/clt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_check: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install failed"; }

pc=$(find "$prefix" -name cltensor.pc)
[[ -n $pc ]] || fail "no cltensor.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in include/cltensor.h include/cltensor/status.h bin/clt-info; do
  [[ -f $prefix/$f ]] || fail "$f is not installed"
done
# the OpenCL interop header exactly when the library has the OpenCL backend
if [[ ${CLT_INSTALL_OPENCL:-1} == 1 ]]; then
  [[ -f $prefix/include/cltensor/opencl.h ]] || fail "include/cltensor/opencl.h is not installed"
elif [[ -e $prefix/include/cltensor/opencl.h ]]; then
  fail "include/cltensor/opencl.h is installed by a library without the OpenCL backend"
fi
for f in libcltensor.so "libcltensor.so.$soversion" "libcltensor.so.$version" libcltensor.a \
         cmake/cltensor/cltensorConfig.cmake cmake/cltensor/cltensorConfigVersion.cmake; do
  [[ -e $libdir/$f ]] || fail "$libdir/$f is not installed"
done
soname=$(objdump -p "$libdir/libcltensor.so.$version" | awk '$1 == "SONAME" {print $2}')
[[ $soname == "libcltensor.so.$soversion" ]] || fail "SONAME is '$soname', not libcltensor.so.$soversion"
models=${CLT_INSTALL_MODELS:-1}
if [[ $models == 1 ]]; then
  for f in include/cltensor/models.h include/cltensor/models/export.h \
           include/cltensor/models/resnet.h include/cltensor/models/gpt2.h; do
    [[ -f $prefix/$f ]] || fail "$f is not installed"
  done
  for f in libcltensor_models.so "libcltensor_models.so.$soversion" libcltensor_models.a \
           pkgconfig/cltensor_models.pc cmake/cltensor/cltensorModelsTargets.cmake \
           cmake/cltensor/cltensorModelsStaticTargets.cmake; do
    [[ -e $libdir/$f ]] || fail "$libdir/$f is not installed"
  done
  soname=$(objdump -p "$libdir/libcltensor_models.so.$version" | awk '$1 == "SONAME" {print $2}')
  [[ $soname == "libcltensor_models.so.$soversion" ]] ||
    fail "cltensor_models' SONAME is '$soname', not libcltensor_models.so.$soversion"
elif [[ -e $prefix/include/cltensor/models.h ]]; then
  fail "include/cltensor/models.h is installed without cltensor_models"
fi

echo "== find_package(cltensor) from $prefix"
want_models=OFF
[[ $models == 1 ]] && want_models=ON
"$cmake" -S "$src/tests/install" -B "$work/app" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCLT_WANT_MODELS=$want_models \
  >"$work/configure.log" || {
  cat "$work/configure.log"; fail "the outside project does not configure"; }
"$cmake" --build "$work/app" >"$work/build.log" 2>&1 || {
  cat "$work/build.log"; fail "the outside project does not build"; }
exes=(consumer consumer_static consumer_cxx)
[[ $models == 1 ]] && exes+=(models_consumer models_consumer_static)
image=$src/tests/data/images/photo.ppm
for exe in "${exes[@]}"; do
  if [[ $exe == models_* ]]; then
    out=$("$work/app/$exe" "$image") || fail "$exe failed"
    [[ $out == "$image: class "[0-9]* ]] || fail "$exe printed '$out'"
  else
    "$work/app/$exe" || fail "$exe failed"
  fi
done
# the shared consumers load the installed library, not the build tree's (each listing taken
# whole first: `ldd | grep -q` fails under pipefail when grep stops reading early)
loads=$(ldd "$work/app/consumer")
[[ $loads == *"$libdir/libcltensor.so.$soversion"* ]] ||
  fail "consumer does not load $libdir/libcltensor.so.$soversion: $loads"
loads=$(ldd "$work/app/consumer_static")
[[ $loads != *libcltensor* ]] || fail "consumer_static loads a shared libcltensor"
if [[ $models == 1 ]]; then
  loads=$(ldd "$work/app/models_consumer")
  [[ $loads == *"$libdir/libcltensor_models.so.$soversion"* &&
     $loads == *"$libdir/libcltensor.so.$soversion"* ]] ||
    fail "models_consumer does not load the installed libraries: $loads"
  loads=$(ldd "$work/app/models_consumer_static")
  [[ $loads != *libcltensor* ]] || fail "models_consumer_static loads a shared libcltensor"
fi
# a version the package does not satisfy is refused (before 1.0 the minor version must match)
next_minor=$(echo "$version" | awk -F. '{print $1 "." $2 + 1}')
if "$cmake" -S "$src/tests/install" -B "$work/app-next" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCLT_WANT_VERSION="$next_minor" -DCMAKE_C_COMPILER="$cc" >"$work/next.log" 2>&1; then
  fail "find_package(cltensor $next_minor) accepted version $version"
fi
grep -q "compatible with requested version \"$next_minor\"" "$work/next.log" || { cat "$work/next.log"; fail "no version message"; }

echo "== pkg-config cltensor from $prefix"
export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --modversion cltensor) == "$version" ]] || fail "pkg-config --modversion: $(pkg-config --modversion cltensor)"
# shellcheck disable=SC2046 # the flags are words
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/consumer_pc" "$src/tests/install/consumer.c" \
  $(pkg-config --cflags --libs cltensor) -Wl,-rpath,"$libdir" || fail "the pkg-config build failed"
"$work/consumer_pc" || fail "consumer_pc failed"
if [[ $models == 1 ]]; then
  [[ $(pkg-config --modversion cltensor_models) == "$version" ]] ||
    fail "pkg-config --modversion cltensor_models: $(pkg-config --modversion cltensor_models)"
  # shellcheck disable=SC2046 # the flags are words
  "$cc" -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/models_consumer_pc" \
    "$src/tests/install/models_consumer.c" $(pkg-config --cflags --libs cltensor_models) \
    -Wl,-rpath,"$libdir" || fail "the pkg-config build of models_consumer failed"
  "$work/models_consumer_pc" "$image" || fail "models_consumer_pc failed"
fi

echo "== the installed clt-info"
out=$("$prefix/bin/clt-info" --version) || fail "clt-info --version failed"
[[ $out == "cltensor $version" ]] || fail "clt-info --version printed '$out'"
out=$("$prefix/bin/clt-info") || fail "clt-info failed"
grep -q '^cpu: ' <<<"$out" || fail "clt-info does not list cpu"
echo "install_check: ok"
