#!/usr/bin/env bash
# The layers of lib/ as docs/architecture.md draws them, checked on the sources:
# - only the OpenCL backend (lib/backends/opencl/) and include/cltensor/opencl.h name OpenCL;
# - nothing outside a backend's folder includes its headers, and only the backends and the seam
#   (lib/backends/backend.h, whose elementwise operations are the shared table's) include the
#   shared math (the cl/ sources that lib/backends/shared/scalar_host.h compiles as C);
# - lib/tensor/ includes nothing of autograd or of the operations;
# - lib/core/ includes nothing of the library but core/, the platform layer and the public headers;
# - a backend (lib/backends/) includes nothing above the seam but what an allow-list names, with
#   the reason for each entry;
# - no two folders of lib/ include each other, directly or through others;
# - cltensor_models (lib/models/) is built on cltensor's public API: it includes the public
#   headers and its own, nothing else of lib/;
# - only the platform layer (lib/platform/) includes an operating system's own headers (files,
#   folders, libraries, scheduling, Windows): the rest of lib/ reaches them through
#   lib/platform/platform.h (<unistd.h> for read, write and close, and <sys/types.h>, which
#   MinGW-w64 has too, excepted).
#   layers_check.sh SOURCE_DIR
set -euo pipefail
cd "$1"
status=0
fail() {
  echo "layers: $1:" >&2
  sed 's/^/  /' >&2
  status=1
}

opencl=$(grep -rlE 'CL/cl|cl_mem|cl_command_queue|clt__cl_' lib include |
  grep -vE '^lib/backends/opencl/|^include/cltensor/opencl\.h$' || true)
[[ -z $opencl ]] || fail "OpenCL outside its backend" <<<"$opencl"

for b in host opencl; do
  found=$(grep -rnE "#include \"backends/$b/" lib | grep -v "^lib/backends/$b/" || true)
  [[ -z $found ]] || fail "a header of backends/$b/ included outside it" <<<"$found"
done
found=$(grep -rnE '#include "(backends/shared/|cl/)' lib | grep -vE '^lib/backends/' || true)
[[ -z $found ]] || fail "the shared math included outside the backends" <<<"$found"

tensor=$(grep -nE '#include "(autograd|ops|nn|optim|data|parallel|io)/|#include "cltensor/(autograd|ops|nn|optim)\.h"' lib/tensor/* || true)
[[ -z $tensor ]] || fail "lib/tensor/ includes a layer above it" <<<"$tensor"

core=$(grep -nE '#include "[a-z]+/' lib/core/* | grep -vE '#include "(core|cltensor|platform)/' || true)
[[ -z $core ]] || fail "lib/core/ includes another part of the library" <<<"$core"

os=$(grep -rnE '#include <(dlfcn|dirent|fcntl|sched|windows|io|direct|sys/(stat|random|wait|mman|time))\.h>' lib |
  grep -v '^lib/platform/' || true)
[[ -z $os ]] || fail "an operating system's header outside lib/platform/" <<<"$os"

# The backends include nothing above the seam: only backends/, core/ and platform/ (and the
# public headers), but for these, each with its reason.
backend_allowed=(
  # the public interop of include/cltensor/opencl.h hands out a tensor's cl_mem and queue: it
  # reads the tensor's storage and device, and finds a device by its cl_device_id
  "lib/backends/opencl/interop.c device/registry.h"
  "lib/backends/opencl/interop.c tensor/tensor_internal.h"
)
found=$(grep -rnoE '#include "[a-z_]+/[a-z_/]+\.(h|inc)"' lib/backends |
  grep -vE '#include "(backends|core|platform|cltensor)/' |
  while IFS=: read -r file line inc; do
    inc=${inc#\#include \"} inc=${inc%\"}
    allowed=0
    for a in "${backend_allowed[@]}"; do [[ "$file $inc" == "$a" ]] && allowed=1; done
    ((allowed)) || echo "$file:$line: $inc"
  done)
[[ -z $found ]] || fail "a backend includes a layer above the seam" <<<"$found"

models=$(grep -rnE '#include "' lib/models | grep -vE '#include "(cltensor/[a-z_/]+|[a-z_0-9]+)\.h"' || true)
[[ -z $models ]] || fail "lib/models/ includes more than the public API and its own headers" <<<"$models"

# The folders of lib/ include each other without a cycle: an edge from a file's folder to the
# folder of each header of lib/ it includes by path, sorted by tsort, which names a loop.
edges=$(for file in $(find lib -name '*.[ch]' -o -name '*.inc' | sort); do
  from=$(dirname "${file#lib/}")
  grep -oE '^#include "[a-z_]+(/[a-z_]+)*/[a-z_0-9]+\.(h|inc)"' "$file" |
    sed -E 's/^#include "//; s/"$//' | while read -r inc; do
      to=$(dirname "$inc")
      [[ -e lib/$inc && $to != "$from" ]] && echo "$from $to"
    done
done | sort -u)
if ! loop=$(tsort <<<"$edges" 2>&1 >/dev/null) || [[ -n $loop ]]; then
  fail "the folders of lib/ include each other in a loop" <<<"$loop"
fi

((status == 0)) && echo "layers: every include follows the layers"
exit $status
