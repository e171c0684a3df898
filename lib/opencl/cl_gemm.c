/* The OpenCL backend's matrix products: a strided-batched GEMM (see clt__gemm_call in
 * backend.h) through CLBlast on the device's in-order queue, and CLBlast's status codes turned
 * into the library's. */
#include <pthread.h>
#include <stdio.h>

#include "cl_internal.h" /* first: it sets the OpenCL version CLBlast's header then sees */
#include "core/core.h"

#include <clblast_c.h>

/* The name of one of CLBlast's own status codes (those that are not OpenCL codes). */
static const char *clblast_code_name(CLBlastStatusCode s)
{
    switch (s) {
#define CLT__CLBLAST_CODE(name) case name: return #name;
    CLT__CLBLAST_CODE(CLBlastNotImplemented)
    CLT__CLBLAST_CODE(CLBlastInvalidMatrixA)
    CLT__CLBLAST_CODE(CLBlastInvalidMatrixB)
    CLT__CLBLAST_CODE(CLBlastInvalidMatrixC)
    CLT__CLBLAST_CODE(CLBlastInvalidVectorX)
    CLT__CLBLAST_CODE(CLBlastInvalidVectorY)
    CLT__CLBLAST_CODE(CLBlastInvalidDimension)
    CLT__CLBLAST_CODE(CLBlastInvalidLeadDimA)
    CLT__CLBLAST_CODE(CLBlastInvalidLeadDimB)
    CLT__CLBLAST_CODE(CLBlastInvalidLeadDimC)
    CLT__CLBLAST_CODE(CLBlastInvalidIncrementX)
    CLT__CLBLAST_CODE(CLBlastInvalidIncrementY)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryA)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryB)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryC)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryX)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryY)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryTemp)
    CLT__CLBLAST_CODE(CLBlastInvalidBatchCount)
    CLT__CLBLAST_CODE(CLBlastInvalidOverrideKernel)
    CLT__CLBLAST_CODE(CLBlastMissingOverrideParameter)
    CLT__CLBLAST_CODE(CLBlastInvalidLocalMemUsage)
    CLT__CLBLAST_CODE(CLBlastNoHalfPrecision)
    CLT__CLBLAST_CODE(CLBlastNoDoublePrecision)
    CLT__CLBLAST_CODE(CLBlastInvalidVectorScalar)
    CLT__CLBLAST_CODE(CLBlastInsufficientMemoryScalar)
    CLT__CLBLAST_CODE(CLBlastDatabaseError)
    CLT__CLBLAST_CODE(CLBlastUnknownError)
    CLT__CLBLAST_CODE(CLBlastUnexpectedError)
#undef CLT__CLBLAST_CODE
    default: return "an unknown CLBlast status";
    }
}

/* CLBlast's status as the library's: OpenCL codes (above -1000) pass through unchanged,
 * CLBlast's own become CLT_ERR_INTERNAL naming the code. */
static clt_status clblast_status(const char *fn, clt_device *dev, CLBlastStatusCode s,
                                 const char *routine, const clt__gemm_call *c)
{
    char what[192];
    if (s == CLBlastSuccess)
        return CLT_OK;
    snprintf(what, sizeof what, "%s (%zu x %zu by %zu x %zu, batch %zu)", routine, c->m, c->k,
             c->k, c->n, c->batch);
    if (s > -1000)
        return clt__cl_error(fn, dev, (cl_int)s, what);
    return clt__error(CLT_ERR_INTERNAL, fn, "%s on %s failed with CLBlast status %d (%s)", what,
                      dev->name, (int)s, clblast_code_name(s));
}

/* CLBlast's caches (its tuning database, its built programs) are not safe to fill from two
 * threads at once, which DataParallel's replicas on two devices would do: one call at a time.
 * A call only queues the work, so the devices still compute concurrently. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

clt_status clt__cl_gemm(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    const CLBlastLayout row = CLBlastLayoutRowMajor;
    const CLBlastTranspose ta = c->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tb = c->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    cl_mem a = c->a, b = c->b, out = c->c;
    cl_command_queue q;
    CLBlastStatusCode s;
    const char *routine;
    clt_status st = clt__cl_start(fn, dev);

    if (st != CLT_OK)
        return st;
    q = clt__cl(dev)->queue;
    pthread_mutex_lock(&clblast_lock);
    if (c->batch == 1 && c->dtype == CLT_F64) {
        routine = "CLBlastDgemm";
        s = CLBlastDgemm(row, ta, tb, c->m, c->n, c->k, c->alpha, a, c->a_offset, c->lda, b,
                         c->b_offset, c->ldb, c->beta, out, c->c_offset, c->ldc, &q, NULL);
    } else if (c->batch == 1) {
        routine = "CLBlastSgemm";
        s = CLBlastSgemm(row, ta, tb, c->m, c->n, c->k, (float)c->alpha, a, c->a_offset, c->lda,
                         b, c->b_offset, c->ldb, (float)c->beta, out, c->c_offset, c->ldc, &q,
                         NULL);
    } else if (c->dtype == CLT_F64) {
        routine = "CLBlastDgemmStridedBatched";
        s = CLBlastDgemmStridedBatched(row, ta, tb, c->m, c->n, c->k, c->alpha, a, c->a_offset,
                                       c->lda, c->a_stride, b, c->b_offset, c->ldb, c->b_stride,
                                       c->beta, out, c->c_offset, c->ldc, c->c_stride, c->batch,
                                       &q, NULL);
    } else {
        routine = "CLBlastSgemmStridedBatched";
        s = CLBlastSgemmStridedBatched(row, ta, tb, c->m, c->n, c->k, (float)c->alpha, a,
                                       c->a_offset, c->lda, c->a_stride, b, c->b_offset, c->ldb,
                                       c->b_stride, (float)c->beta, out, c->c_offset, c->ldc,
                                       c->c_stride, c->batch, &q, NULL);
    }
    pthread_mutex_unlock(&clblast_lock);
    return clblast_status(fn, dev, s, routine, c);
}
