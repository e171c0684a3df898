#!/usr/bin/env bash
# The layers of lib/ as docs/architecture.md draws them, checked on the sources:
# - only the OpenCL backend (lib/backends/opencl/) and include/cltensor/opencl.h name OpenCL;
# - nothing outside a backend's folder includes its headers, and only the backends and the seam
#   (lib/backends/backend.h, whose elementwise operations are the shared table's) include the
#   shared math (the cl/ sources that lib/backends/shared/scalar_host.h compiles as C);
# - lib/tensor/ includes nothing of autograd or of the operations;
# - lib/core/ includes nothing of the library but core/, the platform layer and the public headers;
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

((status == 0)) && echo "layers: every include follows the layers"
exit $status
