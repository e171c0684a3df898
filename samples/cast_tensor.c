/* Explicit device casting, as in PyTorch:
 *
 *     device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
 *     x = torch.randn(1, 10)
 *     x = x.to(device)
 *
 * and the identity rule: x.to(device) on a tensor already there returns that same tensor. */
#include <stdio.h>
#include <stdlib.h>

#include <cltensor.h>

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "%s\n", clt_last_error());                                         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    /* a device named on the command line ("gpu:0"), else the default one */
    clt_device *device = argc > 1 ? clt_device_get(argv[1]) : clt_device_default();
    CHECK(device);
    printf("Using device: %s\n", clt_device_name(device));

    clt_manual_seed(0);
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(1, 10), CLT_F32, clt_device_cpu());
    CHECK(x);
    printf("\nx = randn(1, 10):\n");
    CHECK(clt_tensor_print(x) == CLT_OK);

    /* x = x.to(device): a new tensor on the device, the old one released */
    clt_tensor *moved = clt_tensor_to(x, device);
    CHECK(moved);
    clt_tensor_release(x);
    x = moved;
    printf("\nx = x.to(device):\n");
    CHECK(clt_tensor_print(x) == CLT_OK);
    printf("x is on %s\n", clt_device_name(clt_tensor_device(x)));

    /* Already there: the same tensor comes back, no copy is made */
    clt_tensor *again = clt_tensor_to(x, device);
    CHECK(again);
    printf("\nx.to(device) again is the same tensor: %s\n", again == x ? "true" : "false");
    clt_tensor_release(again);

    /* Explicit dtype casting works the same way */
    clt_tensor *half = clt_tensor_to_dtype(x, CLT_F16);
    CHECK(half);
    printf("\nx.to(f16):\n");
    CHECK(clt_tensor_print(half) == CLT_OK);
    clt_tensor_release(half);

    clt_tensor_release(x);
    return 0;
}
