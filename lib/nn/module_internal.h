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

/* Appends m's parameters (or, with buffers, its buffers), borrowed, each once, in dotted-name
 * order, to the array *items of *count (NULL and 0 to start; freed with clt__free), keeping only
 * those that require grad when trainable_only. CLT_OK, or the error under fn (an allocation
 * failed) with *items and *count as they were. */
clt_status clt__module_collect(const char *fn, const clt_module *m, bool buffers,
                               bool trainable_only, clt_tensor ***items, int *count);

/* Whether m is a ReLU (activations.c), which a Sequential runs inside the Linear or Conv2d
 * before it. */
bool clt__module_is_relu(const clt_module *m);

/* Whether a Sequential runs a Linear or Conv2d and the ReLU after it as one operation (1, the
 * default; 0: each module by itself, for tests that compare the two). */
extern int clt__sequential_fuse;

#endif
