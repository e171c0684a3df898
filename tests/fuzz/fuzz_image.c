/* libFuzzer target for cltensor_models' image readers (untrusted input: PPM, PNG and JPEG
 * through libpng and libjpeg): each input is decoded from memory with clt_image_decode; an
 * image that decodes is put through the ImageNet transform when it has 3 channels. A failure
 * must come with a message. On the cpu device alone, so leak detection is on. */
#include <stdint.h>
#include <stdlib.h>

#include "cltensor/models.h"
#include "fuzz_file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_cpu_only("fuzz_image");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clt_tensor *img = clt_image_decode(data, size);
    if (!img) {
        if (clt_last_error()[0] == '\0')
            abort();
        return 0;
    }
    if (clt_tensor_ndim(img) != 3 || clt_tensor_size(img, 2) != 3)
        abort();
    clt_tensor *x = clt_image_imagenet(img);
    if (!x && clt_last_error()[0] == '\0')
        abort();
    clt_tensor_release(x);
    clt_tensor_release(img);
    return 0;
}
