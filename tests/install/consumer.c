/* A program that uses an installed cltensor: the header's version matches the library's, a sum
 * on the default device is right, a bad device name is an error with a message. */
#include <stdio.h>
#include <string.h>

#include <cltensor.h>

int main(void)
{
    const float data[6] = {1, 2, 3, 4, 5, 6};
    clt_device *dev = clt_device_default();
    clt_tensor *host, *x, *s;
    double total = 0;

    if (clt_version_number() != CLT_VERSION_NUMBER ||
        strcmp(clt_version_string(), CLT_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: header %s, library %s\n", CLT_VERSION_STRING,
                clt_version_string());
        return 1;
    }
    if (clt_device_get("gpu:99") != NULL || strstr(clt_last_error(), "gpu:99") == NULL) {
        fprintf(stderr, "consumer: no error for gpu:99 (\"%s\")\n", clt_last_error());
        return 1;
    }
    host = clt_tensor_from_data(CLT_SHAPE(2, 3), data, CLT_F32, clt_device_cpu());
    x = clt_tensor_to(host, dev);
    s = clt_sum(x, NULL, 0, false);
    if (!s || clt_tensor_item(s, &total) != CLT_OK || total != 21) {
        fprintf(stderr, "consumer: sum %g on %s: %s\n", total, clt_device_name(dev),
                clt_last_error());
        return 1;
    }
    CLT_NO_GRAD {
        printf("consumer: cltensor %s, sum %g on %s\n", clt_version_string(), total,
               clt_device_name(dev));
    }
    clt_tensor_release(s);
    clt_tensor_release(x);
    clt_tensor_release(host);
    return 0;
}
