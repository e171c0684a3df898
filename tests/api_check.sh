#!/usr/bin/env bash
# The public API as the libraries show it: the shared library exports exactly the functions the
# public headers declare with CLT_API (nothing internal, nothing undeclared), every global symbol
# of the static library carries the clt_ prefix, and every CLT_API declaration (or group of
# adjacent ones) has a comment right above it.
# With CLT_API_NO_OPENCL=1 (a build without the OpenCL backend) without cltensor/opencl.h.
# With --mpi, the same for cltensor_mpi and include/cltensor/distributed.h; with --models, for
# cltensor_models, its static library and the CLT_MODELS_API functions of
# include/cltensor/models/ (internal names there: clt__models_).
#   api_check.sh SHARED_LIB STATIC_LIB INCLUDE_DIR [--mpi MPI_LIB] [--models LIB STATIC_LIB]
set -euo pipefail
shared=$1 static=$2 include=$3 mpi_lib="" models_lib="" models_static=""
shift 3
while (($#)); do
  case $1 in
    --mpi) mpi_lib=$2; shift 2 ;;
    --models) models_lib=$2 models_static=$3; shift 3 ;;
    *) echo "api_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/clt-api.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
headers=("$include/cltensor.h")
for h in "$include"/cltensor/*.h; do
  [[ $h == */distributed.h ]] && continue
  [[ $h == */opencl.h && ${CLT_API_NO_OPENCL:-} == 1 ]] && continue # a host-only build
  headers+=("$h")
done

# The name of each function declared with the export macro (CLT_API, or $macro): the identifier
# before the first "(" after it, across lines. A declaration with no comment block (or
# blank-line-free group of declarations under one) right above it is reported.
# HEADER... : the exported function names, to stdout; uncommented ones to $work/uncommented
declared() {
awk -v lint="$work/uncommented" -v macro="${macro:-CLT_API}" '
  FNR == 1 { commented = 0; incomment = 0; naming = 0; instmt = 0 }
  $0 ~ ("^#define " macro) { next }
  incomment { if ($0 ~ /\*\//) { incomment = 0; commented = 1 } next }
  /^[ \t]*\/\*/ { if ($0 !~ /\*\//) incomment = 1; else commented = 1; next }
  /^[ \t]*$/ { commented = 0; next }
  /^#/ { next }
  $0 ~ macro {
    if (!commented) print FILENAME ":" FNR ": " $0 >> lint
    decl = ""; naming = 1; instmt = 1
  }
  naming {
    decl = decl " " $0
    if (decl ~ /\(/) {
      sub(/\(.*/, "", decl); n = split(decl, w, /[^A-Za-z0-9_]+/)
      while (n > 0 && w[n] == "") n--
      print w[n]; naming = 0
    }
  }
  instmt { if ($0 ~ /;/) instmt = 0; next }
  /^typedef .*;[ \t]*$/ { next }
  { commented = 0 }
' "$@" | sort -u
}
# exports LIB NAME: LIB's exported symbols into $work/NAME.exported, compared with the
# functions in $work/NAME.declared both ways
exports() {
  nm -D --defined-only "$1" | awk 'NF == 3 && $2 ~ /[TWDBRV]/ {print $3}' | sort -u \
    >"$work/$2.exported"
  if ! cmp -s "$work/$2.declared" "$work/$2.exported"; then
    status=1
    comm -13 "$work/$2.declared" "$work/$2.exported" | sed "s/^/$2: exported but not declared: /" >&2
    comm -23 "$work/$2.declared" "$work/$2.exported" | sed "s/^/$2: declared but not exported: /" >&2
  fi
}
declared "${headers[@]}" >"$work/cltensor.declared"
exports "$shared" cltensor
if grep -q '^clt__' "$work/cltensor.exported"; then
  status=1
  grep '^clt__' "$work/cltensor.exported" | sed 's/^/internal symbol exported: /' >&2
fi

# (a sanitizer build adds __odr_asan.<name> (GCC) or __odr_asan_gen_<name> (Clang) beside each
# global: instrumentation, not the API)
nm -g --defined-only "$static" |
  awk 'NF == 3 && $3 !~ /^clt_/ && $3 !~ /^__odr_asan(\.|_gen_)/ {print $3}' |
  sort -u >"$work/unprefixed"
if [[ -s $work/unprefixed ]]; then
  status=1
  sed 's/^/global symbol without the clt_ prefix in the static library: /' "$work/unprefixed" >&2
fi

if [[ -n $mpi_lib ]]; then
  declared "$include/cltensor/distributed.h" >"$work/cltensor_mpi.declared"
  exports "$mpi_lib" cltensor_mpi
  echo "api_check: cltensor_mpi: $(wc -l <"$work/cltensor_mpi.declared") functions"
fi
if [[ -n $models_lib ]]; then
  macro=CLT_MODELS_API declared "$include"/cltensor/models/*.h >"$work/cltensor_models.declared"
  exports "$models_lib" cltensor_models
  nm -g --defined-only "$models_static" |
    awk 'NF == 3 && $3 !~ /^clt_/ && $3 !~ /^__odr_asan(\.|_gen_)/ {print $3}' |
    sort -u >"$work/models_unprefixed"
  if [[ -s $work/models_unprefixed ]]; then
    status=1
    sed 's/^/global symbol without the clt_ prefix in the static cltensor_models: /' \
      "$work/models_unprefixed" >&2
  fi
  echo "api_check: cltensor_models: $(wc -l <"$work/cltensor_models.declared") functions"
fi
if [[ -s $work/uncommented ]]; then
  status=1
  sed 's/^/no comment above the declaration: /' "$work/uncommented" >&2
fi

echo "api_check: $(wc -l <"$work/cltensor.declared") public functions, $(wc -l <"$work/cltensor.exported") exported"
exit $status
