# CMake toolchain file: cross-builds for 64-bit Windows with Debian's MinGW-w64 (POSIX thread
# model) and runs what it builds (ctest, try_run) under Wine. scripts/setup-windows.sh installs
# the packages and cross-builds the dependencies Debian has no MinGW build of (Check, cJSON) into
# the deps prefix below; it prints the configure command, in short:
#   cmake -S . -B build-windows/build -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
#
# Settings (each a cache variable; the environment variable of the same name is the default):
#   CLT_WINDOWS_DEPS  the prefix of the cross-built dependencies (include/, lib/, lib/pkgconfig/)
#                     default: build-windows/deps of this source tree
#   CLT_WINEPREFIX    the Wine prefix the tests run in (default: $WINEPREFIX when set at the first
#                     configure, else build-windows/wineprefix of this source tree)
#   CLT_WINEDEBUG     Wine's debug channels for the tests (default: $WINEDEBUG, else -all)
#
# This file is read more than once: at the project's first configure and again in every
# try_compile project (whose CMAKE_SOURCE_DIR is a scratch folder). So paths are taken relative
# to this file, not to CMAKE_SOURCE_DIR, and the settings are passed on to try_compile through
# CMAKE_TRY_COMPILE_PLATFORM_VARIABLES.

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CLT_MINGW_TRIPLET x86_64-w64-mingw32)

# The -posix compilers: C11 threads and pthreads through winpthreads (the -win32 ones have no
# std::thread and no pthread.h).
set(CMAKE_C_COMPILER ${CLT_MINGW_TRIPLET}-gcc-posix)
set(CMAKE_CXX_COMPILER ${CLT_MINGW_TRIPLET}-g++-posix)
set(CMAKE_RC_COMPILER ${CLT_MINGW_TRIPLET}-windres)

get_filename_component(_clt_tree "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT DEFINED CLT_WINDOWS_DEPS)
  if(DEFINED ENV{CLT_WINDOWS_DEPS} AND NOT "$ENV{CLT_WINDOWS_DEPS}" STREQUAL "")
    set(_clt_deps "$ENV{CLT_WINDOWS_DEPS}")
  else()
    set(_clt_deps "${_clt_tree}/build-windows/deps")
  endif()
  set(CLT_WINDOWS_DEPS "${_clt_deps}" CACHE PATH
      "Prefix of the cross-built Windows dependencies (scripts/setup-windows.sh)")
endif()

# Headers and libraries come only from the MinGW sysroot and the deps prefix, never from the
# host's /usr/include and /usr/lib (a host zlib.h or cblas.h would compile and then fail to link,
# or worse). Programs (pkg-config, wine64, python...) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${CLT_MINGW_TRIPLET} "${CLT_WINDOWS_DEPS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (pkg_check_modules: check, libcjson) reads only the target's .pc files: the deps
# prefix first, then the MinGW sysroot's (zlib.pc from libz-mingw-w64-dev). PKG_CONFIG_LIBDIR
# replaces the host's default search path; PKG_CONFIG_PATH is cleared, so that a host setting
# cannot slip a Linux library in. FindPkgConfig runs the host's pkg-config with this environment
# (this file is read again at every re-configure, so the environment is always set).
set(ENV{PKG_CONFIG_LIBDIR} "${CLT_WINDOWS_DEPS}/lib/pkgconfig:/usr/${CLT_MINGW_TRIPLET}/lib/pkgconfig")
unset(ENV{PKG_CONFIG_PATH})
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# The MinGW runtime is linked statically: -static makes the linker take libgcc, libstdc++ and
# winpthreads (libwinpthread-1.dll, which every -posix program needs) from their .a files.
# Without it a test program needs libwinpthread-1.dll (and libgcc_s_seh-1.dll,
# libstdc++-6.dll), which Wine does not find, and the program exits with code 53 without a word
# (STATUS_DLL_NOT_FOUND; Wine's message is hidden under WINEDEBUG=-all). The other way, WINEPATH
# naming /usr/x86_64-w64-mingw32/lib and the gcc folder, works only under Wine and not on a
# Windows machine the binaries are copied to. System libraries (-lkernel32, -lws2_32...) are
# import libraries named lib*.a and so are still found. Note that a library given by its full
# path (find_library prefers lib*.dll.a) is linked as it is: hence ZLIB_USE_STATIC_LIBS below,
# and the deps prefix holds static libraries only.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")
# FindZLIB (CMake >= 3.24): libz.a, not the import library libz.dll.a of zlib1.dll
set(ZLIB_USE_STATIC_LIBS ON)

# The tests and try_run run under Wine. Debian 12's wine64 package installs the loader as
# /usr/lib/wine/wine64 (not on PATH); the `wine` package adds /usr/bin/wine (a script that picks
# wine64 where wine32 is missing). The prefix and WINEDEBUG are set on the command line, through
# env, so that ctest needs no environment of its own (without WINEPREFIX every test would use,
# and the first one create, ~/.wine).
find_program(CLT_WINE64 NAMES wine64 PATHS /usr/lib/wine /usr/lib64/wine /opt/wine-stable/bin
             DOC "Wine's 64-bit loader: runs the cross-built tests")
if(NOT DEFINED CLT_WINEPREFIX)
  if(DEFINED ENV{WINEPREFIX} AND NOT "$ENV{WINEPREFIX}" STREQUAL "")
    set(_clt_wp "$ENV{WINEPREFIX}")
  else()
    set(_clt_wp "${_clt_tree}/build-windows/wineprefix")
  endif()
  set(CLT_WINEPREFIX "${_clt_wp}" CACHE PATH "Wine prefix the cross-built tests run in")
endif()
if(NOT DEFINED CLT_WINEDEBUG)
  if(DEFINED ENV{WINEDEBUG})
    set(_clt_wd "$ENV{WINEDEBUG}")
  else()
    set(_clt_wd "-all")
  endif()
  set(CLT_WINEDEBUG "${_clt_wd}" CACHE STRING "WINEDEBUG for the cross-built tests")
endif()
# The first Wine program of a session starts wineserver and Wine's services (services.exe,
# winedevice.exe, plugplay.exe), which inherit that program's stdout and stderr and live until
# the session ends, 3 s after the last program exits. Under ctest that is the test's output pipe:
# ctest then waits for them (each test that starts a session takes 2.5 s more, and a persistent
# `wineserver -p` makes ctest hang). So the emulator first runs a trivial program (Wine's
# hostname.exe: 0.04 s when a session is up, 0.4 s when not) with its output on /dev/null: a
# session it starts holds no pipe of ctest's. The script is passed to sh -c as one argument
# (newlines, no semicolons: CMake would split the list there); wine64, the prefix and WINEDEBUG
# are its first three arguments, then the test program and its arguments.
set(_clt_wine_run [=[
wine=$1 WINEPREFIX=$2 WINEDEBUG=$3
export WINEPREFIX WINEDEBUG
shift 3
"$wine" hostname.exe </dev/null >/dev/null 2>&1
exec "$wine" "$@"
]=])
if(CLT_WINE64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      /bin/sh -c "${_clt_wine_run}" clt-wine "${CLT_WINE64}" "${CLT_WINEPREFIX}" "${CLT_WINEDEBUG}")
endif()

list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CLT_WINDOWS_DEPS CLT_WINEPREFIX CLT_WINEDEBUG)
