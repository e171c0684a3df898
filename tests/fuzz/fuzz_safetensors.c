/* libFuzzer target for the safetensors reader (untrusted input): each input is written to one
 * scratch file, loaded with clt_safetensors_load on the cpu device, and, when that succeeds,
 * loaded again into a small MLP with clt_module_load (not strict, with a report), whose names
 * ("0.weight", "0.bias", "2.weight", "2.bias") match tests/data/torch_mlp.safetensors.
 * The reader has no in-memory entry point, so the file is rewritten for every input.
 * Build with -DCLT_FUZZ=ON (clang); see the README's Tests section. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cltensor/io.h"
#include "cltensor/nn.h"

static char path[4096];
static char empty_dir[4096];
static clt_module *model;

static void cleanup(void)
{
    if (path[0])
        unlink(path);
    if (empty_dir[0])
        rmdir(empty_dir);
    clt_module_release(model);
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
        perror("fuzz_safetensors: mkdtemp");
        abort();
    }
    setenv("OCL_ICD_VENDORS", empty_dir, 1);
    setenv("OCL_ICD_FILENAMES", "", 1);
    snprintf(path, sizeof path, "%s/clt_fuzz_%ld.safetensors", base, (long)getpid());

    clt_module *layers[3] = {clt_nn_linear(6, 8, true), clt_nn_relu(), clt_nn_linear(8, 3, true)};
    if (!layers[0] || !layers[1] || !layers[2] || !(model = clt_nn_sequential(layers, 3))) {
        fprintf(stderr, "fuzz_safetensors: cannot build the model\n");
        abort();
    }
    for (int i = 0; i < 3; i++)
        clt_module_release(layers[i]);
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz_safetensors: writing the scratch file");
        abort();
    }
    clt_safetensors st;
    if (clt_safetensors_load(path, clt_device_cpu(), &st) != CLT_OK) {
        /* A failed load leaves st empty. */
        if (st.count || st.tensors || st.metadata_count || st.metadata)
            abort();
        return 0;
    }
    /* Touch what the load returned. */
    for (int i = 0; i < st.count; i++)
        if (!st.tensors[i].name || !st.tensors[i].tensor ||
            clt_safetensors_get(&st, st.tensors[i].name) == NULL)
            abort();
    for (int i = 0; i < st.metadata_count; i++)
        if (!clt_safetensors_metadata_get(&st, st.metadata[i].key))
            abort();
    clt_safetensors_clear(&st);

    clt_load_report report;
    clt_module_load(model, path, false, &report);
    clt_load_report_clear(&report);
    return 0;
}
