/* Helpers of the OpenCL backend's own tests: one GEMM variant checked against the product
 * computed here. */
#include <math.h>
#include <stdlib.h>

#include "opencl_helpers.h"
#include "device/allocator.h"
#include "tensor/tensor_internal.h"

/* Where element (i, j) of C's matrix bt lies in its buffer. */
static size_t c_index(const clt__gemm_call *c, size_t bt, size_t i, size_t j)
{
    size_t g = c->c_group;
    return c->c_offset + bt * c->c_stride + i * c->ldc +
           (g ? j / g * c->c_group_stride + j % g : j);
}

/* A device buffer of n values from the generator (also returned in host, as doubles); with
 * the matrices of C (c not NULL, beta 0) NaN, which C = alpha A B must ignore. */
static clt_tensor *gemm_operand(clt_device *dev, clt_dtype dt, size_t n, double *host,
                                const clt__gemm_call *c)
{
    for (size_t i = 0; i < n; i++)
        host[i] = (double)(rand() % 2001 - 1000) / 256.0; /* exact in f32 */
    for (size_t bt = 0; c && c->beta == 0 && bt < c->batch; bt++)
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++)
                host[c_index(c, bt, i, j)] = NAN;
    clt_tensor *t = test_tensor(dev, dt, host, 1, (int64_t[]){(int64_t)n});
    ck_assert_ptr_nonnull(t);
    return t;
}

void test_gemm_check(clt_device *dev, clt_dtype dt, clt__gemm_variant v, const test_gemm_case *gc)
{
    test_gemm_check_groups(dev, dt, v, gc, 0);
}

/* The variant that run_variant runs (the tests run one at a time). */
static clt__gemm_variant run_as;

static clt_status run_variant(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    return clt__cl_gemm_run(fn, dev, run_as, c, NULL);
}

void test_gemm_check_groups(clt_device *dev, clt_dtype dt, clt__gemm_variant v,
                            const test_gemm_case *gc, size_t group)
{
    size_t ar = gc->ta ? gc->k : gc->m, ac = gc->ta ? gc->m : gc->k;
    size_t br = gc->tb ? gc->n : gc->k, bc = gc->tb ? gc->k : gc->n;
    const bool rsum = gc->ep & TEST_EP_RSUM; /* (A dense) */
    clt__gemm_call c = {.dtype = dt, .trans_a = gc->ta, .trans_b = gc->tb, .m = gc->m,
                        .n = gc->n, .k = gc->k, .batch = gc->batch, .alpha = gc->alpha,
                        .beta = gc->beta, .a_offset = 2, .b_offset = 1, .c_offset = 3,
                        .lda = ac + (rsum ? 0 : 3), .ldb = bc + 1, .ldc = gc->n + 2};
    ck_assert(!rsum || gc->batch == 1);
    c.a_stride = ar * c.lda + 5;
    c.b_stride = gc->shared_b ? 0 : br * c.ldb + 1;
    c.c_stride = gc->m * c.ldc + 4;
    if (group) /* groups with gaps between them and padded rows */
        c.c_group = group, c.ldc = group + 2, c.c_group_stride = gc->m * c.ldc + 3;
    /* a variant that stores C's rows whole runs into a buffer, then copies into the groups */
    bool composed = group && v != CLT__GEMM_PACKED && v != CLT__GEMM_DIRECT;
    clt__gemm_call plain = c;
    plain.c_group = plain.c_group_stride = 0, plain.ldc = gc->n;
    if (!clt__cl_gemm_fits(dev, v, composed ? &plain : &c))
        return;
    size_t na = c.a_offset + c.a_stride * c.batch;
    size_t nc = c_index(&c, c.batch - 1, c.m - 1, c.n - 1) + 5;
    size_t nb = c.b_offset + (gc->shared_b ? br * c.ldb : c.b_stride * c.batch);
    double *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    double *hc = malloc(nc * sizeof *hc), *bound = calloc(nc, sizeof *bound);
    clt_tensor *a = gemm_operand(dev, dt, na, ha, NULL), *b = gemm_operand(dev, dt, nb, hb, NULL);
    clt_tensor *out = gemm_operand(dev, dt, nc, hc, &c);
    size_t nbias = 2 + (gc->ep & TEST_EP_ROWS ? gc->m : gc->n);
    double *hbias = malloc(nbias * sizeof *hbias), *hsum = malloc((c.m + 5) * sizeof *hsum);
    clt_tensor *bias = gemm_operand(dev, dt, nbias, hbias, NULL);
    clt_tensor *sums = gemm_operand(dev, dt, c.m + 5, hsum, NULL);
    double *sum_bound = calloc(c.m + 5, sizeof *sum_bound);
    void *panels = NULL;
    size_t capacity = 0;
    c.a = a->storage->buf, c.b = b->storage->buf, c.c = out->storage->buf;
    if (gc->ep & TEST_EP_BIAS)
        c.bias = bias->storage->buf, c.bias_offset = 2, c.bias_rows = gc->ep & TEST_EP_ROWS;
    c.act = gc->ep & TEST_EP_RELU ? CLT__ACT_RELU : CLT__ACT_NONE;
    if (rsum)
        c.row_sums = sums->storage->buf, c.row_sums_offset = 3;
    if (v == CLT__GEMM_PACKED)
        ck_assert_int_eq(clt__device_alloc("test", dev, clt__cl_gemm_panel_bytes(dev, &c), false,
                                           &panels, &capacity), CLT_OK);
    run_as = v;
    ck_assert_msg((composed ? clt__gemm_composed_groups("test", dev, &c, run_variant)
                            : clt__cl_gemm_run("test", dev, v, &c, panels)) == CLT_OK,
                  "%s", clt_last_error());
    for (size_t bt = 0; bt < c.batch; bt++)
        for (size_t i = 0; i < c.m; i++)
            for (size_t j = 0; j < c.n; j++) {
                double sum = 0, abs_sum = 0;
                for (size_t l = 0; l < c.k; l++) {
                    size_t ai = c.a_offset + bt * c.a_stride + (c.trans_a ? l * c.lda + i
                                                                         : i * c.lda + l);
                    size_t bi = c.b_offset + bt * c.b_stride + (c.trans_b ? j * c.ldb + l
                                                                         : l * c.ldb + j);
                    sum += ha[ai] * hb[bi];
                    abs_sum += fabs(ha[ai] * hb[bi]);
                }
                size_t o = c_index(&c, bt, i, j);
                double add = c.bias ? hbias[2 + (c.bias_rows ? i : j)] : 0;
                bound[o] = fabs(c.alpha) * abs_sum + (c.beta != 0 ? fabs(c.beta * hc[o]) : 0) +
                           fabs(add);
                hc[o] = c.alpha * sum + (c.beta != 0 ? c.beta * hc[o] : 0) + add;
                if (c.act == CLT__ACT_RELU && hc[o] < 0)
                    hc[o] = 0;
            }
    for (size_t i = 0; rsum && i < c.m; i++) { /* op(A)'s rows, alpha left out */
        double s = 0, abs_s = 0;
        for (size_t l = 0; l < c.k; l++) {
            double x = ha[c.a_offset + (c.trans_a ? l * c.lda + i : i * c.lda + l)];
            s += x, abs_s += fabs(x);
        }
        hsum[3 + i] = s, sum_bound[3 + i] = abs_s;
    }
    double *got = test_values(out), tol = dt == CLT_F64 ? 1e-12 : 1e-5;
    for (size_t i = 0; i < nc; i++)
        ELEMENT_CHECK(fabs(got[i] - hc[i]) <= tol * bound[i],
                      "%s on %s, %zu x %zu x %zu batch %zu%s%s epilogue %d groups %zu: element "
                      "%zu is %.9g, expected %.9g",
                      clt__gemm_variant_names[v], clt_device_name(dev), c.m, c.n, c.k, c.batch,
                      c.trans_a ? " A^T" : "", c.trans_b ? " B^T" : "", gc->ep, group, i,
                      got[i], hc[i]);
    free(got);
    got = test_values(sums);
    for (size_t i = 0; i < c.m + 5; i++)
        ELEMENT_CHECK(fabs(got[i] - hsum[i]) <= tol * sum_bound[i],
                      "%s on %s, %zu x %zu x %zu%s%s row sums %d: element %zu is %.9g, expected "
                      "%.9g", clt__gemm_variant_names[v], clt_device_name(dev), c.m, c.n, c.k,
                      c.trans_a ? " A^T" : "", c.trans_b ? " B^T" : "", rsum, i, got[i], hsum[i]);
    if (panels)
        clt__device_free(dev, panels, capacity);
    free(got), free(bound), free(hc), free(hb), free(ha), free(hbias), free(hsum), free(sum_bound);
    clt_tensor_release(sums), clt_tensor_release(bias), clt_tensor_release(out);
    clt_tensor_release(b), clt_tensor_release(a);
}
