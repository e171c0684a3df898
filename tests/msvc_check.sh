#!/usr/bin/env bash
# cltensor.dll as an MSVC program sees it: tests/msvc/app.c compiled for MSVC's ABI (clang's
# x86_64-pc-windows-msvc target), linked by lld-link (MSVC's linker's counterpart) against an
# import library made from cltensor.def, as `lib /def:cltensor.def` makes it, and run under Wine
# beside the DLL. The program checks its results itself and exits with the count of failures.
#   msvc_check.sh SOURCE_DIR DLL_DIR DEF_FILE RUNNER...   (RUNNER: the toolchain's emulator)
set -euo pipefail
src=$1 dll_dir=$2 def=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/clt-msvc.XXXXXX")
trap 'rm -rf "$work"' EXIT
clang --target=x86_64-pc-windows-msvc -ffreestanding -fno-builtin -O1 -Wall -Wextra -Werror \
  -I "$src/include" -c "$src/tests/msvc/app.c" -o "$work/app.obj"
cd "$work"
cp "$def" cltensor.def
llvm-dlltool -m i386:x86-64 -d cltensor.def -D cltensor.dll -l cltensor.lib
printf 'LIBRARY kernel32.dll\nEXPORTS\nGetStdHandle\nWriteFile\nExitProcess\n' >kernel32.def
llvm-dlltool -m i386:x86-64 -d kernel32.def -l kernel32.lib
lld-link /nologo /entry:start /subsystem:console /nodefaultlib app.obj cltensor.lib kernel32.lib \
  /out:"$dll_dir/msvc_app.exe"
"$@" "$dll_dir/msvc_app.exe"
