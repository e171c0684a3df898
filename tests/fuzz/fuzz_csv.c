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

static char path[4096];
static char empty_dir[4096];

static void cleanup(void)
{
    if (path[0])
        unlink(path);
    if (empty_dir[0])
        rmdir(empty_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    /* No OpenCL platform: only the cpu device, before the first library call. */
    snprintf(empty_dir, sizeof empty_dir, "%s/clt_fuzz_vendors_XXXXXX", base);
    if (!mkdtemp(empty_dir)) {
        perror("fuzz_csv: mkdtemp");
        abort();
    }
    setenv("OCL_ICD_VENDORS", empty_dir, 1);
    setenv("OCL_ICD_FILENAMES", "", 1);
    snprintf(path, sizeof path, "%s/clt_fuzz_%ld.csv", base, (long)getpid());
    atexit(cleanup);
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
    FILE *f = fopen(path, "wb");
    if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) || fclose(f) != 0) {
        perror("fuzz_csv: writing the scratch file");
        abort();
    }
    clt_csv_options o = {.label_column = (data[0] & 3) == 3 ? -1 : data[0] & 3,
                         .scale = data[0] & 4 ? 1.0 / 255 : 0};
    if (data[0] & 8) { /* features shaped (2, 2) */
        o.ndim = 2;
        o.shape[0] = o.shape[1] = 2;
    }
    clt_dataset *d = clt_dataset_csv(path, &o);
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
