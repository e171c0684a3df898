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
#include "fuzz_file.h"

static clt_module *model;

static void release_model(void)
{
    clt_module_release(model);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_file_init("fuzz_safetensors", ".safetensors");
    clt_module *layers[3] = {clt_nn_linear(6, 8, true), clt_nn_relu(), clt_nn_linear(8, 3, true)};
    if (!layers[0] || !layers[1] || !layers[2] || !(model = clt_nn_sequential(layers, 3))) {
        fprintf(stderr, "fuzz_safetensors: cannot build the model\n");
        abort();
    }
    for (int i = 0; i < 3; i++)
        clt_module_release(layers[i]);
    atexit(release_model);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file_write("fuzz_safetensors", data, size);
    clt_safetensors st;
    if (clt_safetensors_load(fuzz_path, clt_device_cpu(), &st) != CLT_OK) {
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
    clt_module_load(model, fuzz_path, false, &report);
    clt_load_report_clear(&report);
    return 0;
}
