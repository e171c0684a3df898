/* Shape arithmetic that must not overflow: the element count of a caller's shape. (The checked
 * additions and multiplications themselves are inline in core.h.) */
#include "core.h"

bool clt__shape_numel(int ndim, const int64_t *shape, int64_t *numel)
{
    int64_t spread = 1;
    bool empty = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || !clt__mul_i64(spread, shape[d] ? shape[d] : 1, &spread))
            return false;
        empty = empty || shape[d] == 0;
    }
    *numel = empty ? 0 : spread;
    return true;
}
