/* Normalisation suite: batch normalisation (training with its running statistics, and
 * evaluation) and layer normalisation on every device against references computed here in
 * double. */
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

START_TEST(test_normalisation)
{
    clt_device *dev = test_device(_i);
    double *xv = test_noise_new(2 * 3 * 4, 5), want[24], mean[3], var[3], uvar[3];
    clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(2, 3, 4));
    for (int ch = 0; ch < 3; ch++) {
        double s = 0, q = 0;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                s += xv[(b * 3 + ch) * 4 + i];
        mean[ch] = s / 8;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                q += pow(xv[(b * 3 + ch) * 4 + i] - mean[ch], 2);
        var[ch] = q / 8, uvar[ch] = q / 7;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) {
                int at = (b * 3 + ch) * 4 + i;
                want[at] = (xv[at] - mean[ch]) / sqrt(var[ch] + 1e-5) * 2 + 0.5;
            }
    }
    clt_tensor *rm = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev), *rv = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(3), 2, CLT_F32, dev), *b = clt_tensor_full(CLT_SHAPE(3), 0.5, CLT_F32, dev);
    test_assert_values(clt_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5), want, 24, 1e-5, "batch norm, training");
    double rmw[3], rvw[3];
    for (int ch = 0; ch < 3; ch++)
        rmw[ch] = 0.1 * mean[ch], rvw[ch] = 0.9 + 0.1 * uvar[ch];
    test_assert_values(clt_tensor_retain(rm), rmw, 3, 1e-6, "running mean");
    test_assert_values(clt_tensor_retain(rv), rvw, 3, 1e-6, "running variance (unbiased)");
    for (int at = 0; at < 24; at++) {
        int ch = (at / 4) % 3;
        want[at] = (xv[at] - rmw[ch]) / sqrt(rvw[ch] + 1e-5);
    }
    test_assert_values(clt_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5), want, 24, 1e-5, "batch norm, evaluation");
    ck_assert_ptr_null(clt_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5));
    ck_assert_error_has("evaluation needs the running mean and variance");

    for (int r = 0; r < 6; r++) { /* layer norm over the last dimension */
        double s = 0, q = 0;
        for (int i = 0; i < 4; i++)
            s += xv[r * 4 + i];
        for (int i = 0; i < 4; i++)
            q += pow(xv[r * 4 + i] - s / 4, 2);
        for (int i = 0; i < 4; i++)
            want[r * 4 + i] = (xv[r * 4 + i] - s / 4) / sqrt(q / 4 + 1e-5);
    }
    test_assert_values(clt_layer_norm(x, 1, NULL, NULL, 1e-5), want, 24, 1e-5, "layer norm");
    ck_assert_ptr_null(clt_layer_norm(x, 4, NULL, NULL, 1e-5));
    ck_assert_error_has("normalized_ndim 4 is outside 1..3");
    clt_tensor *all[] = {b, w, rv, rm, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    free(xv);
}
END_TEST

Suite *suite_norm(void)
{
    Suite *s = suite_create("norm");
    TCase *tc = test_case("norm", 600);
    ADD_DEVICE_TEST(tc, test_normalisation);
    suite_add_tcase(s, tc);
    return s;
}
