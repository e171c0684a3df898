/* Neural-network suite: softmax, prelu, the gathers (index_select, embedding, gather,
 * masked_fill), cumsum and sorting, multinomial sampling, attention, padding and resizing, and
 * dropout on every device, against the host and against references computed here in double;
 * index_select's adjoint (index_add) against the scatter form; and edge cases and allocation
 * failures across the neural-network operations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "ops/ops_internal.h"

START_TEST(test_softmax)
{
    clt_device *dev = test_device(_i);
    double *v = test_noise_new(28, 3), want[28], lwant[28];
    clt_tensor *x = test_tensor(dev, CLT_F32, v, CLT_SHAPE(4, 7));
    for (int r = 0; r < 4; r++) { /* along dim 1 */
        double m = -INFINITY, s = 0;
        for (int c = 0; c < 7; c++)
            m = fmax(m, v[r * 7 + c]);
        for (int c = 0; c < 7; c++)
            s += exp(v[r * 7 + c] - m);
        for (int c = 0; c < 7; c++) {
            want[r * 7 + c] = exp(v[r * 7 + c] - m) / s;
            lwant[r * 7 + c] = v[r * 7 + c] - m - log(s);
        }
    }
    clt_tensor *s = clt_softmax(x, -1), *l = clt_log_softmax(x, 1);
    test_assert_values(clt_tensor_retain(s), want, 28, 1e-6, "softmax");
    test_assert_values(clt_tensor_retain(l), lwant, 28, 1e-6, "log_softmax");
    clt_tensor *s0 = clt_softmax(x, 0), *cs = clt_sum(s0, (int[]){0}, 1, false);
    test_assert_values(clt_tensor_retain(cs), (double[]){1, 1, 1, 1, 1, 1, 1}, 7, 1e-6, "softmax along dim 0 sums to 1");
    clt_tensor *xi = clt_tensor_ones(CLT_SHAPE(3), CLT_I32, dev);
    ck_assert_ptr_null(clt_softmax(xi, 0));
    ck_assert_error_has("clt_softmax: dtype i32 is not supported");
    ck_assert_ptr_null(clt_softmax(x, 2));
    ck_assert_error_has("valid: -2..1");
    clt_tensor *all[] = {xi, cs, s0, l, s, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    free(v);
}
END_TEST

/* Scaled dot-product attention against PyTorch 1.13's softmax(q k^T / sqrt(E) + mask) v (f64
 * there): no mask, a padding mask, causal; a fully masked row; the errors. */
START_TEST(test_attention)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    static const double plain[] = {
        0.1808937618493223,  0.2487990040975313,   0.28303046831003004, 0.3270726732762341,
        0.3633776070318377,  0.3505010863570978,   -0.22949230116479982, -0.375930889662041,
        -0.4714889958150516, 0.4667249454096294,   0.2450018373497552,  -0.009881120039831302,
        -0.17682357137697166, -0.20824168475192725, -0.21147526300161357, -0.3437646408076281,
        -0.2440333427087202, -0.11127327648634894};
    static const double padded[] = {
        0.6035346895030866,  0.5490163875501964,   0.42019129309469033, 0.7386283920366771,
        0.6549520823352775,  0.482631080808911,    -0.058276859687308114, -0.14994349970773796,
        -0.22131599045948103, 0.7008474321032323,  0.613139905992978,   0.44244676997590054,
        0.015586254891847062, -0.018798820919667447, -0.050639564508960344, 0.1084215750953973,
        0.17300546539391848, 0.2141738775567003};
    static const double causal[] = {
        0.963558185417193,   0.9950833498101802,  0.8919286509533796,   0.8579846149929508,
        0.7659606993842275,  0.5702675963979262,  0.06360351068868764,  -0.20672093643567396,
        -0.44906667458521893, -0.4870325980319231, -0.6578194019199075, -0.7395734357283498,
        0.03327551360817105, 0.07225627327848431, 0.101457485330056,    0.536947602448011,
        0.8056753507392133,  0.9653587199017918,  0.795547796544539,    0.8526826450679839,
        0.7944108976965922,  0.6218291287469128,  0.39178668758523977,  0.10871775621334245,
        0.20767548294394023, 0.05353183822936952, -0.10785708966034024, -0.3642163276791739,
        -0.27646848038837424, -0.15130192124927944};
    const clt_dtype dts[] = {CLT_F32, CLT_F64, CLT_F16};
    for (int d = 0; d < 3; d++) {
        clt_dtype dt = dts[d];
        double tol = dt == CLT_F16 ? 4e-3 : dt == CLT_F32 ? 2e-6 : 1e-12;
        if (!test_has_dtype(dev, dt))
            continue;
        clt_tensor *q = test_sines(dev, dt, CLT_SHAPE(1, 2, 3, 4), 0.1);
        clt_tensor *k = test_sines(dev, dt, CLT_SHAPE(1, 2, 5, 4), 0.7);
        clt_tensor *v = test_sines(dev, dt, CLT_SHAPE(1, 2, 5, 3), 1.3);
        clt_tensor *qc = test_sines(dev, dt, CLT_SHAPE(1, 2, 5, 4), 0.1);
        if (dt == CLT_F16) { /* f16 operands: PyTorch's numbers are for the exact values */
            tol = 6e-3;
        }
        test_assert_values(clt_scaled_dot_product_attention(q, k, v, NULL), plain, 18, tol, "attention");
        uint8_t keep[] = {1, 1, 0, 1, 0};
        clt_tensor *m = clt_tensor_from_data(CLT_SHAPE(1, 1, 1, 5), keep, CLT_BOOL, dev);
        clt_attention_options o = clt_attention_options_default();
        o.mask = m;
        test_assert_values(clt_scaled_dot_product_attention(q, k, v, &o), padded, 18, tol, "padding mask");
        o = clt_attention_options_default();
        o.causal = true;
        test_assert_values(clt_scaled_dot_product_attention(qc, k, v, &o), causal, 30, tol, "causal");
        clt_tensor_release(m), clt_tensor_release(qc), clt_tensor_release(v);
        clt_tensor_release(k), clt_tensor_release(q);
    }
    /* against the same operations composed, on larger shapes, with an additive mask */
    clt_tensor *q = test_sines(dev, CLT_F32, CLT_SHAPE(2, 3, 7, 40), 0.2);
    clt_tensor *k = test_sines(dev, CLT_F32, CLT_SHAPE(2, 3, 9, 40), 0.5);
    clt_tensor *v = test_sines(dev, CLT_F32, CLT_SHAPE(2, 3, 9, 37), 0.9);
    clt_tensor *add = test_sines(dev, CLT_F32, CLT_SHAPE(7, 9), 2.0);
    clt_attention_options o = clt_attention_options_default();
    o.mask = add, o.scale = 0.3;
    clt_tensor *got = clt_scaled_dot_product_attention(q, k, v, &o);
    clt_tensor *kt = clt_transpose(k, -1, -2), *qk = clt_matmul(q, kt);
    clt_tensor *s = clt_mul_scalar(qk, 0.3), *sm = clt_add(s, add), *p = clt_softmax(sm, -1);
    clt_tensor *want = clt_matmul(p, v);
    ck_assert_msg(got && want, "%s", clt_last_error());
    double *g = test_values(got), *w = test_values(want);
    for (int64_t i = 0; i < clt_tensor_numel(want); i++)
        ELEMENT_CHECK(fabs(g[i] - w[i]) <= 2e-5, "element %lld: %.9g, composed %.9g on %s",
                      (long long)i, g[i], w[i], clt_device_name(dev));
    free(g), free(w);
    clt_tensor *tmp[] = {want, p, sm, s, qk, kt, got};
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
        clt_tensor_release(tmp[i]);
    /* a row with every key masked is NaN, as in PyTorch */
    uint8_t none[9] = {0};
    clt_tensor *m0 = clt_tensor_from_data(CLT_SHAPE(9), none, CLT_BOOL, dev);
    o = clt_attention_options_default();
    o.mask = m0;
    got = clt_scaled_dot_product_attention(q, k, v, &o);
    g = test_values(got);
    ck_assert(isnan(g[0]) && isnan(g[clt_tensor_numel(got) - 1]));
    free(g);
    clt_tensor_release(got);
    /* errors change nothing */
    o.causal = true;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_error_has("clt_scaled_dot_product_attention: a mask and causal together");
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, v, v, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("q (2, 3, 7, 40), k (2, 3, 9, 37) and v (2, 3, 9, 37) do not fit");
    clt_tensor *q64 = clt_tensor_to_dtype(q, CLT_I32);
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q64, k, v, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    o = clt_attention_options_default();
    o.mask = k;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    o.mask = NULL, o.scale = -1;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_error_has("scale -1");
    clt_tensor *rest[] = {q64, m0, add, v, k, q};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_release(rest[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_gathers)
{
    clt_device *dev = test_device(_i);
    const double w[] = {0, 1, 10, 11, 20, 21, 30, 31};
    clt_tensor *weight = test_tensor(dev, CLT_F32, w, CLT_SHAPE(4, 2));
    int64_t iv[] = {3, 0, 3, 1};
    clt_tensor *idx = clt_tensor_from_data(CLT_SHAPE(2, 2), iv, CLT_I64, dev);
    clt_tensor *e = clt_embedding(idx, weight);
    ck_assert_int_eq(clt_tensor_ndim(e), 3);
    ck_assert_int_eq(clt_tensor_size(e, 2), 2);
    test_assert_values(clt_tensor_retain(e), (double[]){30, 31, 0, 1, 30, 31, 10, 11}, 8, 0, "embedding");
    clt_tensor *flat = clt_reshape(idx, CLT_SHAPE(4));
    clt_tensor *t = clt_transpose(weight, 0, 1); /* (2, 4): columns picked */
    test_assert_values(clt_index_select(t, 1, flat), (double[]){30, 0, 30, 10, 31, 1, 31, 11}, 8, 0, "index_select on a view");
    int64_t bad = 4;
    clt_tensor *b = clt_tensor_from_data(CLT_SHAPE(1), &bad, CLT_I64, dev);
    ck_assert_ptr_null(clt_embedding(b, weight));
    ck_assert_error_has("clt_embedding: index 4 (element 0) is out of range for size 4 (valid: 0..3)");
    clt_tensor *all[] = {b, t, flat, e, idx, weight};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* A stable sort on the host: positions of v (n values) in order, NaN above every number. */
static void host_order(const double *v, int n, bool descending, int64_t *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: stable */
        for (int j = i; j > 0; j--) {
            double a = v[order[j - 1]], b = v[order[j]];
            bool before = descending ? (b > a || (isnan(b) && !isnan(a)))
                                     : (b < a || (!isnan(b) && isnan(a)));
            if (!before)
                break;
            int64_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
}

/* cumsum, sort, argsort and topk on every device against the host: along every dimension, rows
 * of lengths that are no power of two, ties kept in order, NaN and infinities, integers that
 * doubles cannot hold, bool and integer running sums in i64. */
START_TEST(test_cumsum_sort)
{
    clt_device *dev = test_device(_i);
    /* cumsum along each dimension of a 3 x 5 x 7 f32 tensor, against the host's sums */
    double *xv = test_noise_new(105, 21);
    clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(3, 5, 7));
    double *xf = test_values(x); /* the f32 values */
    const int sizes[3] = {3, 5, 7}, strides[3] = {35, 7, 1};
    for (int dim = 0; dim < 3; dim++) {
        double want[105];
        for (int i = 0; i < 105; i++) {
            int at = (i / strides[dim]) % sizes[dim];
            want[i] = 0;
            for (int k = 0; k <= at; k++)
                want[i] += xf[i - (at - k) * strides[dim]];
        }
        char what[32];
        snprintf(what, sizeof what, "cumsum along %d", dim);
        test_assert_values(clt_cumsum(x, dim - 3), want, 105, 1e-5, what);
    }
    clt_tensor *b =
        clt_tensor_from_data(CLT_SHAPE(2, 3), (bool[]){1, 0, 1, 1, 1, 0}, CLT_BOOL, dev);
    clt_tensor *cb = clt_cumsum(b, 1);
    ck_assert_int_eq(clt_tensor_dtype(cb), CLT_I64);
    test_assert_values(cb, (double[]){1, 1, 2, 1, 2, 2}, 6, 0, "cumsum of bool");
    clt_tensor *big =
        clt_tensor_from_data(CLT_SHAPE(3), (int64_t[]){INT64_C(1) << 60, 1, 1}, CLT_I64, dev);
    clt_tensor *cbig = clt_cumsum(big, 0);
    int64_t *cv = test_bytes(cbig);
    ck_assert(cv[2] == (INT64_C(1) << 60) + 2);
    free(cv), clt_tensor_release(cbig);
    /* sort with ties, NaN and infinities, both ways */
    static const double sv[] = {3, 1, NAN, 2, 1, -INFINITY, 3, INFINITY};
    clt_tensor *s = test_tensor(dev, CLT_F32, sv, CLT_SHAPE(8)), *idx = NULL;
    test_assert_values(clt_sort(s, 0, false, &idx), (double[]){-INFINITY, 1, 1, 2, 3, 3, INFINITY, NAN}, 8,
          0, "ascending");
    test_assert_values(idx, (double[]){5, 1, 4, 3, 0, 6, 7, 2}, 8, 0, "ascending indices (stable)");
    test_assert_values(clt_sort(s, -1, true, &idx), (double[]){NAN, INFINITY, 3, 3, 2, 1, 1, -INFINITY}, 8,
          0, "descending");
    test_assert_values(idx, (double[]){2, 7, 0, 6, 3, 1, 4, 5}, 8, 0, "descending indices (stable)");
    test_assert_values(clt_argsort(s, 0, true), (double[]){2, 7, 0, 6, 3, 1, 4, 5}, 8, 0, "argsort");
    /* along dimension 1 of the 3 x 5 x 7 tensor, with ties (values rounded to halves) */
    for (int i = 0; i < 105; i++)
        xv[i] = round(xv[i] * 2) / 2;
    clt_tensor *xt =
        test_tensor(dev, test_has_dtype(dev, CLT_F64) ? CLT_F64 : CLT_F32, xv, CLT_SHAPE(3, 5, 7));
    for (int desc = 0; desc < 2; desc++) {
        double want[105], want_idx[105], row[5];
        int64_t order[5];
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 7; c++) {
                for (int k = 0; k < 5; k++)
                    row[k] = xv[a * 35 + k * 7 + c];
                host_order(row, 5, desc, order);
                for (int k = 0; k < 5; k++)
                    want[a * 35 + k * 7 + c] = row[order[k]],
                                          want_idx[a * 35 + k * 7 + c] = (double)order[k];
            }
        test_assert_values(clt_sort(xt, 1, desc, &idx), want, 105, 0,
              desc ? "dim 1 descending" : "dim 1 ascending");
        test_assert_values(idx, want_idx, 105, 0, "dim 1 indices");
    }
    /* rows of 37 (no power of two) and of 1 */
    double *lv = test_noise_new(74, 5);
    clt_tensor *l = test_tensor(dev, CLT_F32, lv, CLT_SHAPE(2, 37));
    double *lf = test_values(l), lw[74], lwi[74];
    for (int r = 0; r < 2; r++) {
        int64_t order[37];
        host_order(lf + 37 * r, 37, false, order);
        for (int k = 0; k < 37; k++)
            lw[37 * r + k] = lf[37 * r + order[k]], lwi[37 * r + k] = (double)order[k];
    }
    test_assert_values(clt_sort(l, 1, false, &idx), lw, 74, 0, "rows of 37");
    test_assert_values(idx, lwi, 74, 0, "rows of 37, indices");
    for (int k = 0; k < 37; k++)
        lw[k] = fmin(lf[k], lf[37 + k]), lw[37 + k] = fmax(lf[k], lf[37 + k]);
    test_assert_values(clt_sort(l, 0, false, NULL), lw, 74, 0, "columns of 2");
    clt_tensor *one = test_tensor(dev, CLT_F32, (double[]){4, 2}, CLT_SHAPE(2, 1));
    test_assert_values(clt_sort(one, 1, true, &idx), (double[]){4, 2}, 2, 0, "rows of one");
    test_assert_values(idx, (double[]){0, 0}, 2, 0, "rows of one, indices");
    /* integers beyond doubles' precision keep their order */
    clt_tensor *ints =
        clt_tensor_from_data(CLT_SHAPE(3),
                             (int64_t[]){(INT64_C(1) << 60) + 1, INT64_C(1) << 60, -3}, CLT_I64,
                             dev);
    clt_tensor *si = clt_sort(ints, 0, false, &idx);
    int64_t *iv = test_bytes(si);
    ck_assert(iv[0] == -3 && iv[1] == INT64_C(1) << 60 && iv[2] == (INT64_C(1) << 60) + 1);
    free(iv), clt_tensor_release(si);
    test_assert_values(idx, (double[]){2, 1, 0}, 3, 0, "i64 indices");
    /* topk: the largest and the smallest, ties in order */
    test_assert_values(clt_topk(s, 3, 0, true, &idx), (double[]){NAN, INFINITY, 3}, 3, 0, "top 3");
    test_assert_values(idx, (double[]){2, 7, 0}, 3, 0, "top 3 indices");
    test_assert_values(clt_topk(s, 2, 0, false, &idx), (double[]){-INFINITY, 1}, 2, 0, "bottom 2");
    test_assert_values(idx, (double[]){5, 1}, 2, 0, "bottom 2 indices");
    ck_assert_ptr_null(clt_topk(s, 9, 0, true, &idx));
    ck_assert_ptr_null(idx);
    ck_assert_error_has("clt_topk: k 9 is outside 0..8, the size of dimension 0");
    ck_assert_ptr_null(clt_sort(s, 1, false, NULL));
    ck_assert_error_has("clt_sort: ");
    ck_assert_ptr_null(clt_cumsum(NULL, 0));
    ck_assert_error_has("clt_cumsum: ");
    clt_tensor_release(x), clt_tensor_release(b), clt_tensor_release(big), clt_tensor_release(s);
    clt_tensor_release(xt), clt_tensor_release(l), clt_tensor_release(one),
        clt_tensor_release(ints);
    free(xv), free(xf), free(lv), free(lf);
}
END_TEST

/* gather and masked_fill on every device against torch.gather's and masked_fill's rule, and
 * their refusals. */
START_TEST(test_gather_masked_fill)
{
    clt_device *dev = test_device(_i);
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = 10 * i;
    clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(3, 4));
    clt_tensor *i1 =
        clt_tensor_from_data(CLT_SHAPE(2, 3), (int64_t[]){3, 0, 0, 1, 2, 3}, CLT_I64, dev);
    /* dim 1: out[i][j] = x[i][index[i][j]] */
    test_assert_values(clt_gather(x, 1, i1), (double[]){30, 0, 0, 50, 60, 70}, 6, 0, "gather along 1");
    /* dim 0: out[i][j] = x[index[i][j]][j] */
    clt_tensor *i0 = clt_tensor_from_data(CLT_SHAPE(2, 4), (int64_t[]){2, 0, 1, 2, 0, 0, 2, 1},
                                          CLT_I64, dev);
    test_assert_values(clt_gather(x, 0, i0), (double[]){80, 10, 60, 110, 0, 10, 100, 70}, 8, 0,
          "gather along 0");
    clt_tensor *bad = clt_tensor_from_data(CLT_SHAPE(1, 1), (int64_t[]){4}, CLT_I64, dev);
    ck_assert_ptr_null(clt_gather(x, 1, bad));
    ck_assert_error_has(
        "clt_gather: index 4 (element 0) is out of range for size 4 (valid: 0..3)");
    clt_tensor *wide = clt_tensor_zeros(CLT_SHAPE(4, 1), CLT_I64, dev),
               *flat = clt_tensor_zeros(CLT_SHAPE(2), CLT_I64, dev);
    ck_assert_ptr_null(clt_gather(x, 1, wide));
    ck_assert_error_has(
        "clt_gather: index (4, 1) must have x's 2 dimensions and no size above x's (3, 4)");
    ck_assert_ptr_null(clt_gather(x, 1, flat));
    clt_tensor *f32 = clt_tensor_zeros(CLT_SHAPE(1, 1), CLT_F32, dev);
    ck_assert_ptr_null(clt_gather(x, 1, f32));
    ck_assert_error_has("clt_gather: index must be i64, not f32");
    /* masked_fill with a mask broadcast over the rows */
    clt_tensor *m =
        clt_tensor_from_data(CLT_SHAPE(4), (bool[]){true, false, false, true}, CLT_BOOL, dev);
    test_assert_values(clt_masked_fill(x, m, -INFINITY),
          (double[]){-INFINITY, 10, 20, -INFINITY, -INFINITY, 50, 60, -INFINITY, -INFINITY, 90,
                     100, -INFINITY},
          12, 0, "masked_fill");
    clt_tensor *big = clt_tensor_zeros(CLT_SHAPE(2, 3, 4), CLT_BOOL, dev);
    ck_assert_ptr_null(clt_masked_fill(x, big, 0));
    ck_assert_error_has("clt_masked_fill: mask (2, 3, 4) does not broadcast to x's shape (3, 4)");
    ck_assert_ptr_null(clt_masked_fill(x, f32, 0));
    ck_assert_error_has("clt_masked_fill: mask must be bool, not f32");
    clt_tensor_release(x), clt_tensor_release(i1), clt_tensor_release(i0),
        clt_tensor_release(bad);
    clt_tensor_release(wide), clt_tensor_release(flat), clt_tensor_release(f32),
        clt_tensor_release(m);
    clt_tensor_release(big);
}
END_TEST

/* multinomial on every device: zero weights never drawn, frequencies within 5 standard
 * deviations of the weights (the draws are the seeded generator's, the same on every device),
 * draws without replacement distinct and from the nonzero weights, bad weights refused. */
static void count_draws(clt_tensor *draws, int c, int64_t *counts)
{
    int64_t *v = test_bytes(draws);
    for (int i = 0; i < c; i++)
        counts[i] = 0;
    for (int64_t i = 0; i < clt_tensor_numel(draws); i++) {
        ELEMENT_CHECK(v[i] >= 0 && v[i] < c, "draw %lld is %lld", (long long)i, (long long)v[i]);
        counts[v[i]]++;
    }
    free(v);
}

START_TEST(test_multinomial)
{
    clt_device *dev = test_device(_i);
    int64_t counts[5];
    clt_manual_seed(3);
    clt_tensor *p = test_tensor(dev, CLT_F32, (double[]){0, 2, 0, 8, 0},
                         CLT_SHAPE(5)); /* weights, not normalised */
    clt_tensor *d = clt_multinomial(p, 4000, true);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(d), 1);
    count_draws(d, 5, counts);
    ck_assert(counts[0] == 0 && counts[2] == 0 && counts[4] == 0);
    ck_assert_msg(fabs(counts[3] / 4000.0 - 0.8) < 5 * sqrt(0.16 / 4000),
                  "%lld of 4000 draws are 3", (long long)counts[3]);
    clt_tensor_release(d);
    /* without replacement: 3 of the 3 nonzero weights, each once; the first draw of 2000 rows
     * [0, 3, 1] is 1 three times in four */
    d = clt_multinomial(p, 2, false);
    count_draws(d, 5, counts);
    ck_assert(counts[1] == 1 && counts[3] == 1);
    clt_tensor_release(d);
    double *rows = malloc(3 * 2000 * sizeof *rows);
    for (int r = 0; r < 2000; r++)
        rows[3 * r] = 0, rows[3 * r + 1] = 3, rows[3 * r + 2] = 1;
    clt_tensor *pr = test_tensor(dev, CLT_F32, rows, CLT_SHAPE(2000, 3));
    d = clt_multinomial(pr, 2, false);
    ck_assert(clt_tensor_size(d, 0) == 2000 && clt_tensor_size(d, 1) == 2);
    int64_t *v = test_bytes(d), first1 = 0;
    for (int r = 0; r < 2000; r++) {
        ck_assert(v[2 * r] != v[2 * r + 1] && v[2 * r] != 0 && v[2 * r + 1] != 0);
        first1 += v[2 * r] == 1;
    }
    ck_assert_msg(fabs(first1 / 2000.0 - 0.75) < 5 * sqrt(0.1875 / 2000),
                  "%lld of 2000 first draws are 1", (long long)first1);
    free(v), free(rows), clt_tensor_release(d), clt_tensor_release(pr);
    /* refused */
    ck_assert_ptr_null(clt_multinomial(p, 4, false));
    ck_assert_error_has(
        "clt_multinomial: row 0 has 2 nonzero probabilities, fewer than the 4 samples");
    clt_tensor *neg = test_tensor(dev, CLT_F32, (double[]){1, -1}, CLT_SHAPE(2)),
               *zero = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev);
    ck_assert_ptr_null(clt_multinomial(neg, 1, true));
    ck_assert_error_has(
        "clt_multinomial: probabilities must not be negative or NaN (the smallest is -1)");
    ck_assert_ptr_null(clt_multinomial(zero, 1, true));
    ck_assert_error_has("clt_multinomial: row 0 of the probabilities sums to 0");
    ck_assert_ptr_null(clt_multinomial(p, 0, true));
    ck_assert_error_has("clt_multinomial: needs 1-D or 2-D probabilities");
    clt_tensor_release(neg), clt_tensor_release(zero), clt_tensor_release(p);
}
END_TEST

/* F.pad in its four modes and F.interpolate (nearest, bilinear with and without
 * align_corners, up and down) on every device, against PyTorch 1.13's results for the same
 * small inputs; bad arguments refused. */
START_TEST(test_pad_interpolate)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = test_tensor(dev, CLT_F32, (double[]){1, 2, 3, 4, 5, 6}, CLT_SHAPE(1, 2, 3));
    test_assert_values(clt_pad(x, 2, (int64_t[]){1, 2}, CLT_PAD_CONSTANT, 9),
          (double[]){9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9}, 12, 0, "constant");
    test_assert_values(clt_pad(x, 4, (int64_t[]){2, 1, 1, 0}, CLT_PAD_REFLECT, 0),
          (double[]){6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}, 18, 0, "reflect");
    test_assert_values(clt_pad(x, 2, (int64_t[]){1, 1}, CLT_PAD_REPLICATE, 0),
          (double[]){1, 1, 2, 3, 3, 4, 4, 5, 6, 6}, 10, 0, "replicate");
    test_assert_values(clt_pad(x, 2, (int64_t[]){1, 2}, CLT_PAD_CIRCULAR, 0),
          (double[]){3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5}, 12, 0, "circular");
    ck_assert_ptr_null(clt_pad(x, 2, (int64_t[]){3, 0}, CLT_PAD_REFLECT, 0));
    ck_assert_error_has("clt_pad: pad[0] = 3 does not suit dimension 2 of size 3 in this mode");
    ck_assert_ptr_null(clt_pad(x, 3, (int64_t[]){1, 1, 1}, CLT_PAD_CONSTANT, 0));
    ck_assert_error_has("clt_pad: needs an even number of pads");
    ck_assert_ptr_null(clt_pad(x, 2, (int64_t[]){-1, 0}, CLT_PAD_CONSTANT, 0));

    clt_tensor *q = test_tensor(dev, CLT_F32, (double[]){1, 2, 3, 4}, CLT_SHAPE(1, 1, 2, 2));
    test_assert_values(clt_interpolate2d(q, 4, 4, CLT_INTERPOLATE_NEAREST, false),
          (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 16, 0, "nearest 2 -> 4");
    test_assert_values(clt_interpolate2d(q, 3, 3, CLT_INTERPOLATE_NEAREST, false),
          (double[]){1, 1, 2, 1, 1, 2, 3, 3, 4}, 9, 0, "nearest 2 -> 3");
    test_assert_values(clt_interpolate2d(q, 4, 4, CLT_INTERPOLATE_BILINEAR, false),
          (double[]){1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25,
                     3.75, 4},
          16, 1e-6, "bilinear 2 -> 4");
    test_assert_values(clt_interpolate2d(q, 3, 3, CLT_INTERPOLATE_BILINEAR, true),
          (double[]){1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, 9, 1e-6,
          "bilinear 2 -> 3, align_corners");
    double v16[16];
    for (int i = 0; i < 16; i++)
        v16[i] = i;
    clt_tensor *b = test_tensor(dev, CLT_F32, v16, CLT_SHAPE(1, 4, 4)); /* unbatched */
    test_assert_values(clt_interpolate2d(b, 2, 2, CLT_INTERPOLATE_BILINEAR, false),
          (double[]){2.5, 4.5, 10.5, 12.5}, 4, 1e-6, "bilinear 4 -> 2");
    clt_tensor *flat = clt_reshape(q, CLT_SHAPE(2, 2));
    ck_assert_ptr_null(clt_interpolate2d(flat, 2, 2, CLT_INTERPOLATE_NEAREST, false));
    ck_assert_error_has("(got 2 dimensions)");
    clt_tensor_release(flat);
    ck_assert_ptr_null(clt_interpolate2d(q, 0, 2, CLT_INTERPOLATE_NEAREST, false));
    ck_assert_error_has(
        "clt_interpolate2d: needs a non-empty (N, C, H, W) or (C, H, W) input (got 4 dimensions), a positive output size (got 0x2)");
    clt_tensor_release(x), clt_tensor_release(q), clt_tensor_release(b);
}
END_TEST

START_TEST(test_dropout)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(100, 100), CLT_F32, dev);
    clt_tensor *h = clt_tensor_ones(CLT_SHAPE(100, 100), CLT_F32, cpu);
    clt_manual_seed(42);
    clt_tensor *y = clt_dropout(x, 0.3, true);
    clt_manual_seed(42);
    clt_tensor *z = clt_dropout(h, 0.3, true);
    float *a = test_bytes(y), *b = test_bytes(z);
    int kept = 0;
    for (int i = 0; i < 10000; i++) {
        ELEMENT_CHECK(a[i] == b[i], "element %d: %g on %s, %g on cpu", i, a[i],
                      clt_device_name(dev), b[i]);
        ck_assert(a[i] == 0.0f || fabsf(a[i] - 1.0f / 0.7f) < 1e-6f);
        kept += a[i] != 0;
    }
    ck_assert_int_gt(kept, 6700); /* 7000 expected; 4 standard deviations is 183 */
    ck_assert_int_lt(kept, 7300);
    clt_tensor *same = clt_dropout(x, 0.3, false);
    ck_assert_ptr_eq(same, x);
    clt_tensor_release(same);
    clt_tensor *none = clt_dropout(x, 1, true);
    test_assert_values(clt_sum(none, NULL, 0, false), (double[]){0}, 1, 0, "dropout p=1");
    clt_tensor_release(none);
    /* p = 1 on a tensor that requires grad: recorded, the gradient is 0 */
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    none = clt_dropout(x, 1, true);
    ck_assert(clt_tensor_requires_grad(none));
    clt_tensor *total = clt_sum(none, NULL, 0, false);
    ck_assert_int_eq(clt_backward(total, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(x);
    ck_assert_int_eq(clt_tensor_numel(g), 10000);
    test_assert_values(clt_sum(g, NULL, 0, false), (double[]){0}, 1, 0, "dropout p=1 grad");
    clt_tensor_release(g);
    clt_tensor_release(total);
    clt_tensor_release(none);
    ck_assert_ptr_null(clt_dropout(x, 1.5, true));
    ck_assert_error_has("clt_dropout: probability 1.5 is outside 0..1");
    free(a), free(b);
    clt_tensor_release(z), clt_tensor_release(y), clt_tensor_release(h), clt_tensor_release(x);
}
END_TEST

/* clt__index_add of src along dim against the scatter form out[a, idx[m], b] += src[a, m, b]. */
static void check_index_add(clt_tensor *src, int dim, const int64_t *idx, int64_t k, double tol,
                            const char *what)
{
    int nd = clt_tensor_ndim(src);
    int64_t a_n = 1, m_n = clt_tensor_size(src, dim), b_n = 1, shape[CLT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = d == dim ? k : clt_tensor_size(src, d);
        a_n *= d < dim ? shape[d] : 1;
        b_n *= d > dim ? shape[d] : 1;
    }
    double *sv = test_values(src), *want = calloc((size_t)(a_n * k * b_n) + 1, sizeof *want);
    for (int64_t a = 0; a < a_n; a++)
        for (int64_t m = 0; m < m_n; m++)
            for (int64_t b = 0; b < b_n; b++)
                want[(a * k + idx[m]) * b_n + b] += sv[(a * m_n + m) * b_n + b];
    clt_tensor *out = clt__index_add("test_index_add", src, dim, idx, k);
    ck_assert_msg(out != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(out), nd);
    for (int d = 0; d < nd; d++)
        ck_assert_int_eq(clt_tensor_size(out, d), shape[d]);
    test_assert_values(out, want, a_n * k * b_n, tol, what);
    free(want), free(sv);
}

START_TEST(test_index_add)
{
    static const int64_t idx[] = {3, 0, 3, 3, 0}; /* repeated; 1, 2 (and 4, 5) never hit */
    clt_device *dev = test_device(_i);
    for (int t = 0; t < TEST_ADJOINT_DTYPES; t++) {
        clt_dtype dt = test_adjoint_dtypes[t].dtype;
        double tol = test_adjoint_dtypes[t].tol, *v, *u;
        char what[64];
        if (!test_has_dtype(dev, dt))
            continue;
        clt_tensor *src = test_noisy(dev, dt, 40, &v, CLT_SHAPE(2, 5, 3));
        clt_tensor *base = test_noisy(dev, dt, 41, &u, CLT_SHAPE(3, 2, 5)), *view = clt_transpose(base, 0, 2);
        snprintf(what, sizeof what, "index_add %s", clt_dtype_name(dt));
        check_index_add(src, 1, idx, 4, tol, what);
        check_index_add(view, 0, idx, 6, tol, what); /* a transposed view, along dim 0 */
        check_index_add(base, 2, idx, 4, tol, what); /* along the last */
        clt_tensor *out = clt__index_add("test_index_add", base, -1, idx, 4);
        ck_assert_int_eq(clt_tensor_size(out, 2), 4);
        clt_tensor_release(out), clt_tensor_release(view), clt_tensor_release(base), clt_tensor_release(src);
        free(u), free(v);
    }
    clt_tensor *none = clt_tensor_zeros(CLT_SHAPE(2, 0, 3), CLT_F32, dev);
    const double zeros[18] = {0};
    test_assert_values(clt__index_add("test_index_add", none, 1, NULL, 3), zeros, 18, 0, "no indices");
    clt_tensor *ints = clt_tensor_ones(CLT_SHAPE(5), CLT_I32, dev);
    ck_assert_ptr_null(clt__index_add("test_index_add", ints, 0, idx, 4));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    clt_tensor_release(ints), clt_tensor_release(none);
}
END_TEST

/* Edge cases: masked (-inf) log-probabilities under ignored targets, integer mse, empty inputs,
 * windows wholly in the padding, mismatched bias. */
START_TEST(test_nn_edges)
{
    clt_device *dev = test_device(_i);
    const double lp[] = {-INFINITY, -0.1, -2, -1, -0.5, -3};
    clt_tensor *x = test_tensor(dev, CLT_F32, lp, CLT_SHAPE(2, 3));
    int64_t tv[] = {-100, 1};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
    test_assert_values(clt_nll_loss(x, t, NULL), (double[]){0.5}, 1, 1e-7, "nll ignoring a -inf row");
    test_assert_values(clt_nll_loss(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), (double[]){0, 0.5}, 2, 1e-7, "nll none");
    const double a[] = {0, 3}, b[] = {20, 5};
    clt_tensor *ua = test_tensor(dev, CLT_U8, a, CLT_SHAPE(2)), *ub = test_tensor(dev, CLT_U8, b, CLT_SHAPE(2));
    test_assert_values(clt_mse_loss(ua, ub, CLT_REDUCTION_NONE), (double[]){400, 4}, 2, 0, "mse of u8 does not wrap");
    clt_tensor *empty = clt_tensor_zeros(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *se = clt_softmax(empty, 1);
    ck_assert_msg(se != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(se), 0);
    clt_tensor *e4 = clt_tensor_zeros(CLT_SHAPE(2, 0, 3), CLT_F32, dev), *rs = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, dev);
    clt_tensor *bn = clt_batch_norm(e4, rs, rs, NULL, NULL, true, 0.1, 1e-5);
    ck_assert_msg(bn != NULL, "%s", clt_last_error());
    clt_tensor *one = clt_tensor_full(CLT_SHAPE(1, 1, 1, 1), 5, CLT_F32, dev);
    clt_tensor *idx = NULL;
    clt_tensor *mp = clt_max_pool2d(one, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}}, &idx);
    test_assert_values(clt_tensor_retain(mp), (double[]){-INFINITY}, 1, 0, "a window wholly in the padding");
    test_assert_values(clt_tensor_retain(idx), (double[]){-1}, 1, 0, "its index");
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(1, 1, 1, 1), CLT_F32, dev);
    clt_tensor *b64 = clt_tensor_ones(CLT_SHAPE(1), CLT_F16, dev);
    ck_assert_ptr_null(clt_conv2d(one, w, b64, NULL));
    ck_assert_error_has("clt_conv2d: the bias is f16, the input f32: they must match");
    clt_tensor *all[] = {b64, w, idx, mp, one, bn, rs, e4, se, empty, ub, ua, t, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

typedef struct nn_case {
    clt_tensor *x, *w, *t, *img, *xt, *img2, *dw, *big, *w3;
    int which;
} nn_case;

static bool run_nn_case(void *ctx)
{
    nn_case *c = ctx;
    clt_tensor *r = NULL;
    switch (c->which) {
    case 0: r = clt_softmax(c->x, 1); break;
    case 1: r = clt_cross_entropy(c->x, c->t, NULL); break;
    case 2: r = clt__index_add("clt__index_add", c->xt, 0, (const int64_t[]){1, 0, 3, 1}, 5); break;
    case 3: r = clt_conv2d(c->img, c->w, NULL, NULL); break;
    case 4: /* an image cpu convolves in bands */
        r = clt_conv2d(c->big, c->w3, NULL, &(clt_conv2d_options){.padding = {1, 1}});
        break;
    case 5: /* depthwise, two channels */
        r = clt_conv2d(c->img2, c->dw, NULL,
                       &(clt_conv2d_options){.padding = {1, 1}, .groups = 2});
        break;
    default: /* Winograd's, in blocks of 8 tile rows */
        clt__conv_winograd = 1, clt__winograd_rows = 8;
        r = clt_conv2d(c->big, c->w3, NULL, &(clt_conv2d_options){.padding = {1, 1}});
        clt__conv_winograd = -1, clt__winograd_rows = 0;
        break;
    }
    clt_tensor_release(r);
    return r != NULL;
}

START_TEST(test_nn_allocation_failures)
{
    static const char *const fns[] = {"clt_softmax", "clt_cross_entropy", "clt__index_add",
                                      "clt_conv2d",  "clt_conv2d",        "clt_conv2d",
                                      "clt_conv2d"};
    clt_device *dev = test_device(_i);
    int64_t tv[] = {1, 0, 3, 2};
    nn_case c = {clt_tensor_rand(CLT_SHAPE(4, 4), CLT_F32, dev),
                 clt_tensor_ones(CLT_SHAPE(2, 1, 2, 2), CLT_F32, dev),
                 clt_tensor_from_data(CLT_SHAPE(4), tv, CLT_I64, dev),
                 NULL,
                 NULL,
                 NULL,
                 clt_tensor_ones(CLT_SHAPE(2, 1, 3, 3), CLT_F32, dev),
                 clt_tensor_rand(CLT_SHAPE(1, 4, 40, 40), CLT_F32, dev),
                 clt_tensor_ones(CLT_SHAPE(2, 4, 3, 3), CLT_F32, dev),
                 0};
    c.img = clt_reshape(c.x, CLT_SHAPE(1, 1, 4, 4));
    c.img2 = clt_reshape(c.x, CLT_SHAPE(1, 2, 2, 4));
    c.xt = clt_transpose(c.x, 0, 1); /* index_add copies it contiguous first */
    for (c.which = 0; c.which < 7; c.which++) {
        test_fault_sweep(run_nn_case, &c, fns[c.which], CLT__HOST);
        test_fault_sweep(run_nn_case, &c, fns[c.which], CLT__DEVICE);
    }
    clt_tensor_release(c.img2), clt_tensor_release(c.dw);
    clt_tensor_release(c.big), clt_tensor_release(c.w3);
    clt_tensor_release(c.xt), clt_tensor_release(c.img), clt_tensor_release(c.t), clt_tensor_release(c.w), clt_tensor_release(c.x);
}
END_TEST

/* prelu in double from x's values: x where x > 0, else the slope of x's channel (dimension 1;
 * `inner` elements follow each channel's) or the one slope, times x. */
static void prelu_reference(const double *x, const double *w, int64_t n, int64_t nw,
                            int64_t inner, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        double slope = nw == 1 ? w[0] : w[(i / inner) % nw];
        out[i] = x[i] > 0 ? x[i] : slope * x[i];
    }
}

/* F.prelu against the host computation: one slope and one per channel, 0-d to 4-D inputs, a
 * transposed input, every floating dtype; then its errors. */
START_TEST(test_prelu)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    test_live before = test_live_now();
    static const struct {
        int ndim;
        int64_t shape[4], nw;
    } cases[] = {{2, {4, 3}, 3},    {2, {4, 3}, 1}, {4, {2, 3, 2, 5}, 3}, {4, {2, 3, 2, 5}, 1},
                 {3, {2, 4, 3}, 4}, {1, {7}, 1},    {0, {0}, 1}};
    static const test_dtype_tol dts[] = {{CLT_F32, 1e-6},
                                         {CLT_F64, 1e-12},
                                         {CLT_F16, 1e-3},
                                         {CLT_BF16, 8e-3}};
    for (int d = 0; d < 4; d++) {
        clt_dtype dt = dts[d].dtype;
        if (!test_has_dtype(dev, dt))
            continue;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            int64_t n = 1, inner = 1;
            for (int i = 0; i < cases[k].ndim; i++)
                n *= cases[k].shape[i];
            for (int i = 2; i < cases[k].ndim; i++)
                inner *= cases[k].shape[i];
            double *xv, *wv, *want = malloc((size_t)n * sizeof *want);
            clt_tensor *x =
                test_noisy(dev, dt, 50 + (unsigned)k, &xv, cases[k].ndim, cases[k].shape);
            clt_tensor *w = test_noisy(dev, dt, 60 + (unsigned)k, &wv, CLT_SHAPE(cases[k].nw));
            prelu_reference(xv, wv, n, cases[k].nw, inner, want);
            clt_tensor *y = clt_prelu(x, w);
            ck_assert_msg(y != NULL, "%s", clt_last_error());
            ck_assert_int_eq(clt_tensor_ndim(y), cases[k].ndim);
            ck_assert_int_eq(clt_tensor_dtype(y), dt);
            char what[64];
            snprintf(what, sizeof what, "prelu %s case %zu", clt_dtype_name(dt), k);
            test_assert_values(y, want, n, dts[d].tol, what);
            clt_tensor_release(w), clt_tensor_release(x);
            free(xv), free(wv), free(want);
        }
    }
    /* a transposed (4, 3) input: strided, per channel */
    double *bv, *wv, want[12], tv[12];
    clt_tensor *base = test_noisy(dev, CLT_F32, 70, &bv, CLT_SHAPE(3, 4));
    clt_tensor *w = test_noisy(dev, CLT_F32, 71, &wv, CLT_SHAPE(3));
    clt_tensor *xt = clt_transpose(base, 0, 1);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++)
            tv[r * 3 + c] = bv[c * 4 + r];
    prelu_reference(tv, wv, 12, 3, 1, want);
    test_assert_values(clt_prelu(xt, w), want, 12, 1e-6, "prelu of a transposed input");

    /* errors */
    clt_tensor *x3 = clt_tensor_ones(CLT_SHAPE(2, 3, 4), CLT_F32, dev);
    clt_tensor *x1 = clt_tensor_ones(CLT_SHAPE(5), CLT_F32, dev);
    clt_tensor *w4 = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, dev);
    clt_tensor *w2d = clt_tensor_ones(CLT_SHAPE(3, 1), CLT_F32, dev);
    clt_tensor *wh = clt_tensor_ones(CLT_SHAPE(3), CLT_F16, dev);
    clt_tensor *xi = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_I32, dev);
    ck_assert_ptr_null(clt_prelu(NULL, w));
    ck_assert_error_has("clt_prelu: tensor is NULL");
    ck_assert_ptr_null(clt_prelu(x3, NULL));
    ck_assert_error_has("clt_prelu: tensor is NULL");
    ck_assert_ptr_null(clt_prelu(x3, w4));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_prelu: weight has 4 elements; the input's 3 channels (dimension 1) "
                        "take 1 or 3");
    ck_assert_ptr_null(clt_prelu(x1, w));
    ck_assert_error_has("clt_prelu: weight has 3 elements; an input of 1 dimension takes 1");
    ck_assert_ptr_null(clt_prelu(x3, w2d));
    ck_assert_error_has("clt_prelu: weight must be 1-D (or 0-d), not of 2 dimensions");
    ck_assert_ptr_null(clt_prelu(x3, wh));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_prelu: weight is f16 and the input f32: both need one dtype");
    ck_assert_ptr_null(clt_prelu(xi, w));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_prelu: dtype i32 is not supported");
    if (dev != cpu) {
        clt_tensor *wc = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, cpu);
        ck_assert_ptr_null(clt_prelu(x3, wc));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        ck_assert_error_has("clt_prelu: expected all tensors on the same device");
        clt_tensor_release(wc);
    }
    clt_tensor *all[] = {x3, x1, w4, w2d, wh, xi, xt, w, base};
    TEST_RELEASE_ALL(all);
    free(bv), free(wv);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

Suite *suite_nn(void)
{
    Suite *s = suite_create("nn");
    TCase *tc = test_case("nn", 600);
    ADD_DEVICE_TEST(tc, test_softmax);
    ADD_DEVICE_TEST(tc, test_prelu);
    ADD_DEVICE_TEST(tc, test_attention);
    ADD_DEVICE_TEST(tc, test_gathers);
    ADD_DEVICE_TEST(tc, test_nn_edges);
    ADD_DEVICE_TEST(tc, test_cumsum_sort);
    ADD_DEVICE_TEST(tc, test_gather_masked_fill);
    ADD_DEVICE_TEST(tc, test_multinomial);
    ADD_DEVICE_TEST(tc, test_pad_interpolate);
    ADD_DEVICE_TEST(tc, test_index_add);
    ADD_DEVICE_TEST(tc, test_dropout);
    ADD_DEVICE_TEST(tc, test_nn_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
