/* libFuzzer target for the CSV dataset reader (untrusted input, plain or gzip-compressed): each
 * input is written to one scratch file and read with clt_dataset_csv on the cpu device, the
 * first byte choosing the options (the label column, a feature shape); when that succeeds,
 * the first and last items are read. A failure must come with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cltensor/data.h"
#include "fuzz_file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_file_init("fuzz_csv", ".csv");
    return 0;
}

static void read_item(clt_dataset *d, int64_t index)
{
    clt_tensor *fields[2] = {NULL, NULL};
    if (clt_dataset_get(d, index, fields) != CLT_OK || !fields[0] || !fields[1])
        abort();
    clt_tensor_release(fields[0]);
    clt_tensor_release(fields[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    fuzz_file_write("fuzz_csv", data + 1, size - 1);
    clt_csv_options o = {.label_column = (data[0] & 3) == 3 ? -1 : data[0] & 3,
                         .scale = data[0] & 4 ? 1.0 / 255 : 0};
    if (data[0] & 8) { /* features shaped (2, 2) */
        o.ndim = 2;
        o.shape[0] = o.shape[1] = 2;
    }
    clt_dataset *d = clt_dataset_csv(fuzz_path, &o);
    if (!d) {
        if (clt_last_status() == CLT_OK || clt_last_error()[0] == '\0')
            abort();
        return 0;
    }
    int64_t n = clt_dataset_length(d);
    if (n < 1 || clt_dataset_fields(d) != 2)
        abort();
    read_item(d, 0);
    read_item(d, n - 1);
    clt_dataset_release(d);
    return 0;
}
