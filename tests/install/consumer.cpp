// The same program in C++: the headers' extern "C" declarations, CLT_SHAPE, CLT_NO_GRAD and
// CLT_WITH_DEVICE.
#include <cltensor.h>

#include <cstdio>
#include <cstring>

int main()
{
    const float data[6] = {1, 2, 3, 4, 5, 6};
    clt_device *dev = clt_device_default();
    double total = 0;

    if (std::strcmp(clt_version_string(), CLT_VERSION_STRING) != 0) {
        std::fprintf(stderr, "consumer_cxx: header %s, library %s\n", CLT_VERSION_STRING,
                     clt_version_string());
        return 1;
    }
    clt_tensor *host = clt_tensor_from_data(CLT_SHAPE(2, 3), data, CLT_F32, clt_device_cpu());
    clt_tensor *x = clt_tensor_to(host, dev);
    clt_tensor *s = clt_sum(x, nullptr, 0, false);
    if (!s || clt_tensor_item(s, &total) != CLT_OK || total != 21) {
        std::fprintf(stderr, "consumer_cxx: sum %g on %s: %s\n", total, clt_device_name(dev),
                     clt_last_error());
        return 1;
    }
    bool ran = clt_device_count() == 0;
    if (!ran) {
        CLT_WITH_DEVICE(clt_device_get("gpu:0")) { ran = clt_device_current() != nullptr; }
    }
    CLT_NO_GRAD { std::printf("consumer_cxx: sum %g on %s\n", total, clt_device_name(dev)); }
    clt_tensor_release(s);
    clt_tensor_release(x);
    clt_tensor_release(host);
    return ran ? 0 : 1;
}
