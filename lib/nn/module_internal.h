/* What the library's own module types need from the module base beyond nn.h. */
#ifndef CLT_MODULE_INTERNAL_H
#define CLT_MODULE_INTERNAL_H

#include "cltensor/nn.h"

/* Lets clt_module_forward pass m an input on any device: m's forward moves it itself
 * (DataParallel scatters it). */
void clt__module_accept_any_device(clt_module *m);

/* m's first parameter (parameters_only) or first parameter or buffer, depth first; NULL when it
 * has none. Allocates nothing, so that device checks cannot fail on memory. */
clt_tensor *clt__module_first_tensor(const clt_module *m, bool parameters_only);

#endif
