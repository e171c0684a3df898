/* What the models suite's two files share: test_models.c's helpers for the reference files, and
 * models_hf.c's tests (config.json fields, the options they implement, the Hugging Face head
 * classes' files, ResNet-50 and its kin). */
#ifndef CLT_TEST_MODELS_HF_H
#define CLT_TEST_MODELS_HF_H

#include <check.h>

#include <cltensor.h>

#define MODELS_REFERENCE(name) CLT_TEST_REFERENCE_DIR "/" name

/* A reference file's tensors on dev (failing the test when it cannot be read). */
void models_load_reference(const char *path, clt_device *dev, clt_safetensors *st);
/* The reference's tensor `name` (failing the test when it has none). */
clt_tensor *models_ref(const clt_safetensors *st, const char *name);
/* Loads the reference's weights (every entry that is not an input, output or gradient) into m,
 * strictly. */
void models_load_weights(clt_module *m, const clt_safetensors *st);
/* |got - want| <= atol + rtol |want| elementwise, naming the first that is not. */
void models_assert_close(clt_tensor *got, clt_tensor *want, double atol, double rtol,
                         const char *what, clt_device *dev);
/* The reference's "config" metadata as a config.json file; its path, written into file. */
const char *models_config_file(const clt_safetensors *st, char *file, size_t size);
/* Every name and shape of m is the names file's, which has no other but `tied` ones. */
void models_check_names(clt_module *m, const char *path, int tied);

/* Adds models_hf.c's tests to tc. */
void models_hf_add_tests(TCase *tc);

#endif
