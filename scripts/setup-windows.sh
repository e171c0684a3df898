#!/usr/bin/env bash
# Sets up cross-building cltensor for 64-bit Windows with MinGW-w64 on Debian 12 and running
# what it builds under Wine (the toolchain file is cmake/mingw-w64-x86_64.cmake):
#   1. installs the Debian packages that are missing (apt-get; through sudo when not root)
#   2. fetches the Debian sources of Check and cJSON (adding a deb-src entry when apt has none)
#   3. cross-builds both as static libraries into build-windows/deps (include/, lib/, and the
#      .pc files check.pc and libcjson.pc), with the Khronos OpenCL headers beside them
#   4. initialises a Wine prefix: build-windows/wineprefix, or $WINEPREFIX when set
#   5. checks that Wine's OpenCL.dll reaches the host's OpenCL platforms
#   6. builds and runs, through ctest under Wine, a probe project that links Check, cJSON and
#      zlib with the toolchain file (build-windows/deps/src/probe)
# and ends with the command that configures cltensor for Windows.
#
#   scripts/setup-windows.sh             everything; a second run only re-checks (seconds)
#   scripts/setup-windows.sh --rebuild   builds Check and cJSON again
#   scripts/setup-windows.sh --build     then configures and builds cltensor into
#                                        build-windows/build and runs, under Wine, the device
#                                        list and the main sample (move_model.exe) on gpu:0 and,
#                                        with Wine's OpenCL disabled, on cpu
#   CLT_WINDOWS_DEPS=DIR scripts/setup-windows.sh   the deps prefix elsewhere (pass the same
#                                        -DCLT_WINDOWS_DEPS=DIR to cmake)
#
# Everything it writes, except the packages and the deb-src entry, is under build-windows/
# (ignored by git); rm -rf build-windows undoes it.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$PWD

rebuild=0
build=0
case "${1:-}" in
  "") ;;
  --rebuild) rebuild=1 ;;
  --build) build=1 ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac

triplet=x86_64-w64-mingw32
toolchain=$tree/cmake/mingw-w64-x86_64.cmake
deps=${CLT_WINDOWS_DEPS:-$tree/build-windows/deps}
src=$deps/src
export WINEPREFIX=${WINEPREFIX:-$tree/build-windows/wineprefix}
export WINEDEBUG=${WINEDEBUG:--all}
jobs=$(nproc)

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)
step_start=$SECONDS
step() { echo; echo "== setup-windows: $* (at ${SECONDS}s)"; }
die() { echo "setup-windows: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
step "1. Debian packages"
packages=(
  gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix  # the cross compilers, POSIX threads
  mingw-w64-tools                  # widl, gendef, x86_64-w64-mingw32-pkg-config
  libz-mingw-w64-dev               # zlib for MinGW (/usr/x86_64-w64-mingw32: libz.a, zlib.pc)
  wine64                           # runs the 64-bit test programs (/usr/lib/wine/wine64)
  ocl-icd-libopencl1               # the host's OpenCL loader, which Wine's opencl.dll calls
  opencl-headers                   # Khronos headers: the Windows build loads OpenCL.dll itself
  cmake make pkg-config            # the build
  dpkg-dev                         # dpkg-source, for apt-get source
  clang lld llvm                   # an MSVC-ABI program against cltensor.dll (the msvc_abi test)
)
# Not needed: the `wine` package (only /usr/bin/wine and the *-stable wrapper scripts; this
# setup calls /usr/lib/wine/wine64 itself), wine32 (needs i386 multiarch), and libwine's
# recommended packages (X, GL, GStreamer, fonts): the tests are console programs.
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
apt_updated=0
if ((${#missing[@]})); then
  echo "installing ${missing[*]}"
  "${sudo[@]}" apt-get update -q
  apt_updated=1
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "every package needed is installed"
fi

wine64=$(command -v wine64 || true)
[[ -n $wine64 ]] || wine64=/usr/lib/wine/wine64
[[ -x $wine64 ]] || die "no wine64 (looked on PATH and at /usr/lib/wine/wine64)"
wineserver=$(command -v wineserver || true)
[[ -n $wineserver ]] || wineserver=$(dirname "$wine64")/wineserver64
[[ -x $wineserver ]] || wineserver=$(dirname "$wine64")/wineserver
echo "wine64: $wine64 ($("$wine64" --version))"

# ---------------------------------------------------------------------------------------------
step "2. sources of Check and cJSON"
# Whether apt knows the source packages (needs a deb-src entry and its index).
have_sources() {
  local out
  out=$(apt-cache showsrc --only-source check cjson 2>/dev/null | grep '^Package:' || true)
  grep -qx 'Package: check' <<<"$out" && grep -qx 'Package: cjson' <<<"$out"
}
debsrc_sources=/etc/apt/sources.list.d/cltensor-deb-src.sources
debsrc_list=/etc/apt/sources.list.d/cltensor-deb-src.list
# Adds deb-src entries mirroring the system's deb entries for this release (the same mirrors,
# suites, components and keys), in a file of its own: the system's files are left as they are.
add_deb_src() {
  local codename entries
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  # deb822 files (Debian 12's default: /etc/apt/sources.list.d/debian.sources)
  entries=$(for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f && $f != "$debsrc_sources" ]] || continue
    awk -v cn="$codename" 'BEGIN { RS = ""; ORS = "\n\n" }
      {
        n = split($0, line, "\n"); types = 0; suites = 0; off = 0; out = ""
        for (i = 1; i <= n; i++) {
          if (line[i] ~ /^Types:/ && line[i] ~ /[: ]deb( |$)/) { types = 1; line[i] = "Types: deb-src" }
          if (line[i] ~ /^Suites:/ && line[i] ~ cn) suites = 1
          if (line[i] ~ /^Enabled:[ \t]*[Nn]o/) off = 1
          out = out line[i] "\n"
        }
        if (types && suites && !off) printf "%s\n", out
      }' "$f"
  done)
  if [[ -n $entries ]]; then
    printf '# deb-src entries added by cltensor scripts/setup-windows.sh (apt-get source)\n%s' \
      "$entries" | "${sudo[@]}" tee "$debsrc_sources" >/dev/null
    return
  fi
  # one-line style (/etc/apt/sources.list, *.list)
  entries=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            grep -E "^[[:space:]]*deb[[:space:]].*[[:space:]]$codename([[:space:]]|-)" |
            sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' || true)
  if [[ -z $entries ]]; then
    entries="deb-src http://deb.debian.org/debian $codename main"
  fi
  printf '# deb-src entries added by cltensor scripts/setup-windows.sh (apt-get source)\n%s\n' \
    "$entries" | "${sudo[@]}" tee "$debsrc_list" >/dev/null
}
if ! have_sources; then
  if ((!apt_updated)); then
    "${sudo[@]}" apt-get update -q
    apt_updated=1
  fi
  if ! have_sources; then
    if [[ -e $debsrc_sources || -e $debsrc_list ]]; then
      die "apt has no source of check or cjson, even with $debsrc_sources$debsrc_list"
    fi
    echo "adding a deb-src entry for apt-get source"
    add_deb_src
    cat "$debsrc_sources" "$debsrc_list" 2>/dev/null || true
    echo
    if ! "${sudo[@]}" apt-get update -q; then
      "${sudo[@]}" rm -f "$debsrc_sources" "$debsrc_list"
      die "apt-get update failed with the deb-src entry: removed it again"
    fi
    have_sources || die "apt still has no source of check or cjson"
  fi
fi
# The newest unpacked source tree of a source package, if any.
source_dir() { find "$src" -mindepth 1 -maxdepth 1 -type d -name "$1-[0-9]*" | sort -V | tail -n1; }
mkdir -p "$src"
apt_src_opts=(-q)
# apt downloads as the user _apt, who cannot write into this tree: as root, say so (apt would
# fall back to it anyway, with a warning).
[[ $(id -u) -eq 0 ]] && apt_src_opts+=(-o APT::Sandbox::User=root)
for pkg in check cjson; do
  if [[ -z $(source_dir "$pkg") ]]; then
    # downloads the .dsc and tarballs and unpacks them with dpkg-source -x (Debian's patches
    # applied); builds nothing
    (cd "$src" && apt-get source "${apt_src_opts[@]}" "$pkg")
  fi
  echo "$pkg: $(source_dir "$pkg")"
done
check_dir=$(source_dir check)
cjson_dir=$(source_dir cjson)

# ---------------------------------------------------------------------------------------------
step "3. cross-building Check and cJSON into $deps"
# Rebuilt when the source version, the toolchain file or this recipe changes.
recipe=3
stamp=$deps/.setup-windows-stamp
want="recipe=$recipe check=$(basename "$check_dir") cjson=$(basename "$cjson_dir") toolchain=$(sha256sum <"$toolchain" | cut -c1-16)"
cross=(-DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCLT_WINDOWS_DEPS="$deps"
       -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps" -DCMAKE_INSTALL_LIBDIR=lib)
if ((!rebuild)) && [[ -f $stamp && $(cat "$stamp") == "$want" && -f $deps/lib/libcheck.a &&
                      -f $deps/lib/libcjson.a ]]; then
  echo "up to date ($want)"
else
  rm -f "$stamp"
  # Check: static library only. Its CMake finds no fork() for MinGW (HAVE_FORK=0), so the tests
  # always run in CK_NOFORK mode, in the one process; BUILD_TESTING=OFF skips its own tests.
  rm -rf "$src/build-check"
  cmake -S "$check_dir" -B "$src/build-check" "${cross[@]}" -DBUILD_TESTING=OFF \
    -DCHECK_ENABLE_TESTS=OFF -Wno-deprecated >"$src/build-check.log" 2>&1 ||
    { cat "$src/build-check.log"; die "configuring Check failed"; }
  grep -qE '^HAVE_FORK:INTERNAL=(0|)$' "$src/build-check/CMakeCache.txt" ||
    die "Check's configure found fork() for Windows: $(grep '^HAVE_FORK' "$src/build-check/CMakeCache.txt")"
  echo "Check: no fork() (HAVE_FORK=0): its tests run in CK_NOFORK mode"
  cmake --build "$src/build-check" -j"$jobs" >>"$src/build-check.log" 2>&1 ||
    { tail -n 40 "$src/build-check.log"; die "building Check failed"; }
  cmake --install "$src/build-check" >>"$src/build-check.log" 2>&1 ||
    { tail -n 20 "$src/build-check.log"; die "installing Check failed"; }
  # Check always builds a DLL too (checkShared): removed, so that -lcheck and find_library
  # (which prefer lib*.dll.a) take libcheck.a and no test needs libcheck-0.dll; with it goes
  # Check's CMake package, which names the DLL (the project uses check.pc).
  rm -rf "$deps/lib/libcheck.dll.a" "$deps"/bin/libcheck*.dll "$deps/lib/cmake/check"
  # Debian's patch (01pkgconfig) names Debian's libcheck_pic.a, which this build has not.
  sed -i 's/-lcheck_pic/-lcheck/' "$deps/lib/pkgconfig/check.pc"

  # cJSON: static, no tests, no cJSON_Utils. Its own warning flags (-Werror and
  # -fstack-protector-strong, which needs libssp on MinGW) are left out. Built with
  # CJSON_HIDE_SYMBOLS: no __declspec(dllexport) in the objects, so a DLL that links it (cltensor)
  # does not export cJSON's functions; libcjson.pc gives the same define to its users.
  rm -rf "$src/build-cjson"
  cmake -S "$cjson_dir" -B "$src/build-cjson" "${cross[@]}" -DBUILD_SHARED_LIBS=OFF \
    -DENABLE_CJSON_TEST=OFF -DENABLE_CJSON_UTILS=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF \
    -DENABLE_PUBLIC_SYMBOLS=OFF -DENABLE_HIDDEN_SYMBOLS=ON >"$src/build-cjson.log" 2>&1 ||
    { cat "$src/build-cjson.log"; die "configuring cJSON failed"; }
  cmake --build "$src/build-cjson" -j"$jobs" >>"$src/build-cjson.log" 2>&1 ||
    { tail -n 40 "$src/build-cjson.log"; die "building cJSON failed"; }
  cmake --install "$src/build-cjson" >>"$src/build-cjson.log" 2>&1 ||
    { tail -n 20 "$src/build-cjson.log"; die "installing cJSON failed"; }
  sed -i '/^Cflags:/{/CJSON_HIDE_SYMBOLS/!s/$/ -DCJSON_HIDE_SYMBOLS/}' "$deps/lib/pkgconfig/libcjson.pc"
  echo "$want" >"$stamp"
fi
# The Khronos OpenCL headers (platform-independent) beside them: the MinGW compiler must not see
# the host's /usr/include, so the headers are copied.
if ! diff -rq /usr/include/CL "$deps/include/CL" >/dev/null 2>&1; then
  rm -rf "$deps/include/CL"
  cp -r /usr/include/CL "$deps/include/CL"
fi
# What the project's pkg_check_modules calls find, with the toolchain file's pkg-config setting.
export PKG_CONFIG_LIBDIR=$deps/lib/pkgconfig:/usr/$triplet/lib/pkgconfig
for m in check libcjson zlib; do
  printf '  %-9s %-8s %s\n' "$m" "$(PKG_CONFIG_PATH='' pkg-config --modversion "$m")" \
    "$(PKG_CONFIG_PATH='' pkg-config --cflags --libs "$m")"
done
unset PKG_CONFIG_LIBDIR

# ---------------------------------------------------------------------------------------------
step "4. Wine prefix $WINEPREFIX"
if [[ -f $WINEPREFIX/system.reg ]]; then
  echo "exists"
else
  mkdir -p "$(dirname "$WINEPREFIX")"
  # mscoree/mshtml disabled: no offer to download Mono or Gecko. Without wine32, wineboot says
  # it failed to open syswow64\rundll32.exe: that is the 32-bit half, not needed here.
  WINEDLLOVERRIDES="mscoree,mshtml=" "$wine64" wineboot -i >"$deps/wineboot.log" 2>&1 ||
    { cat "$deps/wineboot.log"; die "wineboot failed"; }
  "$wineserver" -w
  [[ -f $WINEPREFIX/system.reg ]] || { cat "$deps/wineboot.log"; die "wineboot made no prefix"; }
  echo "created"
fi

# ---------------------------------------------------------------------------------------------
step "5. OpenCL through Wine"
# Writes file $1 with what stdin holds unless it holds that already (keeps the timestamps for make).
write_if_changed() {
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}
mkdir -p "$src/oclprobe"
write_if_changed "$src/oclprobe/oclprobe.c" <<'EOF'
/* Loads OpenCL.dll at run time, as the Windows build of cltensor does (no import library), and
 * lists the OpenCL platforms it reaches: under Wine, the host's, through Wine's opencl.dll. */
#include <stdio.h>
#include <windows.h>
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

typedef cl_int(CL_API_CALL *get_platform_ids_fn)(cl_uint, cl_platform_id *, cl_uint *);
typedef cl_int(CL_API_CALL *get_platform_info_fn)(cl_platform_id, cl_platform_info, size_t,
                                                  void *, size_t *);

int main(void) {
  HMODULE lib = LoadLibraryA("OpenCL.dll");
  if (!lib) {
    printf("OpenCL.dll: not loadable (error %lu)\n", (unsigned long)GetLastError());
    return 2;
  }
  get_platform_ids_fn get_ids =
      (get_platform_ids_fn)(void (*)(void))GetProcAddress(lib, "clGetPlatformIDs");
  get_platform_info_fn get_info =
      (get_platform_info_fn)(void (*)(void))GetProcAddress(lib, "clGetPlatformInfo");
  if (!get_ids || !get_info) {
    printf("OpenCL.dll: no clGetPlatformIDs or clGetPlatformInfo\n");
    return 3;
  }
  cl_platform_id ids[16];
  cl_uint n = 0;
  cl_int err = get_ids(16, ids, &n);
  printf("OpenCL.dll: clGetPlatformIDs returned %d, %u platform(s)\n", (int)err, (unsigned)n);
  for (cl_uint i = 0; err == CL_SUCCESS && i < n && i < 16; i++) {
    char name[256] = "", version[256] = "";
    get_info(ids[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    get_info(ids[i], CL_PLATFORM_VERSION, sizeof version, version, NULL);
    printf("  platform %u: %s | %s\n", (unsigned)i, name, version);
  }
  FreeLibrary(lib);
  return 0;
}
EOF
probe_exe=$src/oclprobe/oclprobe.exe
if [[ ! -f $probe_exe || $src/oclprobe/oclprobe.c -nt $probe_exe ]]; then
  $triplet-gcc-posix -std=c11 -O2 -Wall -Wextra -I"$deps/include" -static \
    "$src/oclprobe/oclprobe.c" -o "$probe_exe"
fi
echo "-- wine64 oclprobe.exe"
"$wine64" "$probe_exe" || die "the OpenCL probe failed (exit $?)"
echo "-- WINEDLLOVERRIDES=opencl=d wine64 oclprobe.exe"
rc=0
WINEDLLOVERRIDES=opencl=d "$wine64" "$probe_exe" || rc=$?
((rc == 2)) || die "with opencl disabled the probe should find no OpenCL.dll (exit 2), got $rc"
if ! compgen -G "/etc/OpenCL/vendors/*.icd" >/dev/null; then
  echo "note: the host has no OpenCL driver (/etc/OpenCL/vendors is empty): scripts/setup.sh" \
       "installs PoCL, Rusticl and Oclgrind"
fi

# ---------------------------------------------------------------------------------------------
step "6. probe project: Check + cJSON + zlib, run by ctest under Wine"
probe=$src/probe
mkdir -p "$probe"
write_if_changed "$probe/CMakeLists.txt" <<'EOF'
# Throwaway project (scripts/setup-windows.sh): finds the dependencies the way cltensor does.
cmake_minimum_required(VERSION 3.16)
project(clt_windows_probe LANGUAGES C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(CHECK REQUIRED IMPORTED_TARGET check)
pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
message(STATUS "probe: check ${CHECK_VERSION}: ${CHECK_LINK_LIBRARIES}")
message(STATUS "probe: cjson ${CJSON_VERSION}: ${CJSON_LINK_LIBRARIES}")
message(STATUS "probe: zlib ${ZLIB_VERSION_STRING}: ${ZLIB_LIBRARIES}")
message(STATUS "probe: tests run by ${CLT_WINE64} in ${CLT_WINEPREFIX}")
enable_testing()
add_executable(probe probe.c)
target_link_libraries(probe PRIVATE PkgConfig::CHECK PkgConfig::CJSON ZLIB::ZLIB Threads::Threads)
add_test(NAME probe COMMAND probe)
EOF
write_if_changed "$probe/probe.c" <<'EOF'
/* A Check suite that uses cJSON, zlib and a pthread: the pieces cltensor's tests link. */
#include <check.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

START_TEST(test_cjson) {
  cJSON *root = cJSON_Parse("{\"dtype\": \"F32\", \"shape\": [2, 3]}");
  ck_assert_ptr_nonnull(root);
  ck_assert_str_eq(cJSON_GetObjectItem(root, "dtype")->valuestring, "F32");
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "shape")), 2);
  cJSON_Delete(root);
}
END_TEST

START_TEST(test_zlib) {
  const char text[] = "cltensor cltensor cltensor cltensor";
  unsigned char packed[128], unpacked[128];
  uLongf n = sizeof packed, m = sizeof unpacked;
  ck_assert_int_eq(compress(packed, &n, (const Bytef *)text, sizeof text), Z_OK);
  ck_assert_int_eq(uncompress(unpacked, &m, packed, n), Z_OK);
  ck_assert_uint_eq(m, sizeof text);
  ck_assert_mem_eq(unpacked, text, sizeof text);
}
END_TEST

static void *add_one(void *p) {
  ++*(int *)p;
  return p;
}

START_TEST(test_thread) {
  int x = 41;
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, add_one, &x), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(x, 42);
}
END_TEST

int main(void) {
  Suite *s = suite_create("windows_probe");
  TCase *tc = tcase_create("deps");
  tcase_add_test(tc, test_cjson);
  tcase_add_test(tc, test_zlib);
  tcase_add_test(tc, test_thread);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  printf("fork status: %s\n", srunner_fork_status(sr) == CK_NOFORK ? "CK_NOFORK" : "CK_FORK");
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
EOF
cmake -S "$probe" -B "$probe/build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCLT_WINDOWS_DEPS="$deps" \
  >"$probe/configure.log" 2>&1 || { cat "$probe/configure.log"; die "configuring the probe failed"; }
grep 'probe:' "$probe/configure.log"
cmake --build "$probe/build" >"$probe/build.log" 2>&1 ||
  { cat "$probe/build.log"; die "building the probe failed"; }
# only Windows' own DLLs: anything else (libwinpthread-1.dll, zlib1.dll...) is not found under
# Wine and the test exits with code 53 without a word
dlls=$($triplet-objdump -p "$probe/build/probe.exe" | awk '/DLL Name:/ { print $3 }' | sort -u | xargs)
echo "probe.exe imports: $dlls"
for d in $dlls; do
  case ${d,,} in
    kernel32.dll | msvcrt.dll | ucrtbase.dll | api-ms-win-*.dll | advapi32.dll | user32.dll | \
      shell32.dll | ws2_32.dll) ;;
    *) die "probe.exe needs $d, which Wine will not find" ;;
  esac
done
(cd "$probe/build" && ctest --output-on-failure) || die "the probe failed under Wine"

# ---------------------------------------------------------------------------------------------
step "done in $((SECONDS - step_start))s"
cat <<EOF
Configure and build cltensor for Windows (the tests run under Wine through the toolchain's
CMAKE_CROSSCOMPILING_EMULATOR, in the prefix below):
  cmake -S . -B build-windows/build -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \\
        -DCLT_WINDOWS_DEPS=$deps -DCLT_WINEPREFIX=$WINEPREFIX -DCLT_BUILD_MPI=OFF
  cmake --build build-windows/build -j$jobs
  ctest --test-dir build-windows/build --output-on-failure
To run a program by hand:
  export WINEPREFIX=$WINEPREFIX WINEDEBUG=$WINEDEBUG
  $wine64 build-windows/build/bin/clt_tests.exe core
EOF

if ((build)); then
  step "cltensor for Windows: build-windows/build"
  cmake -S . -B build-windows/build -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \
    -DCLT_WINDOWS_DEPS="$deps" -DCLT_WINEPREFIX="$WINEPREFIX" -DCLT_BUILD_MPI=OFF
  cmake --build build-windows/build -j"$jobs"
  echo; echo "== build-windows/build/bin/devices.exe"
  "$wine64" build-windows/build/bin/devices.exe
  echo; echo "== build-windows/build/bin/move_model.exe on gpu:0 (CLT_DEVICE=gpu:0)"
  CLT_DEVICE=gpu:0 "$wine64" build-windows/build/bin/move_model.exe
  echo; echo "== the same with Wine's OpenCL disabled (WINEDLLOVERRIDES=opencl=d): cpu alone"
  WINEDLLOVERRIDES=opencl=d "$wine64" build-windows/build/bin/devices.exe
  WINEDLLOVERRIDES=opencl=d "$wine64" build-windows/build/bin/move_model.exe
fi
