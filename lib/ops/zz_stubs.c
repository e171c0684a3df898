#include "ops/ops_internal.h"
#include "core/core.h"
clt_tensor *clt__index_add(const char *fn, clt_tensor *src, int dim, const int64_t *host_idx, int64_t k){(void)src;(void)dim;(void)host_idx;(void)k;clt__error(CLT_ERR_UNSUPPORTED,fn,"stub");return NULL;}
clt_tensor *clt__col2im(const char *fn, clt_tensor *cols, const clt__conv_call *g){(void)cols;(void)g;clt__error(CLT_ERR_UNSUPPORTED,fn,"stub");return NULL;}
clt_tensor *clt__pool2d_backward(const char *fn, clt_tensor *go, clt_tensor *i, const clt__conv_call *g){(void)go;(void)i;(void)g;clt__error(CLT_ERR_UNSUPPORTED,fn,"stub");return NULL;}
