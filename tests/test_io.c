/* The io suite: safetensors files. A module saved on one device and loaded into a fresh one on
 * another gives the same output; every dtype and a strided view round trip bit for bit;
 * metadata round trips; strict loads reject missing, unexpected and mismatched names and change
 * nothing; non-strict loads report what they skipped; every kind of malformed file, written
 * byte by byte here, is rejected with its message; allocation failures leak nothing; a model
 * PyTorch wrote (tests/data/torch_mlp.safetensors) gives PyTorch's output; FIFOs, links planted
 * at temporary names and modules holding broadcast views are handled. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#endif

static char *path_in(const char *dir, const char *name)
{
    static char path[8][512];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    return p;
}

static clt_tensor *forward_on_cpu(clt_module *m, clt_tensor *x)
{
    clt_tensor *xd = clt_tensor_to(x, clt_module_device(m));
    clt_tensor *y = clt_module_forward(m, xd);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    clt_tensor *yc = clt_tensor_to(y, clt_device_cpu());
    clt_tensor_release(y), clt_tensor_release(xd);
    return yc;
}

static clt_tensor *mlp_input(void)
{
    double v[8];
    test_noise(v, 8, 7, -1, 1);
    return test_tensor(clt_device_cpu(), CLT_F32, v, CLT_SHAPE(2, 4));
}

/* ---- round trips ---------------------------------------------------------------------------- */

START_TEST(test_io_module_round_trip)
{
    clt_device *from = test_device(_i), *to = test_device((_i + 1) % test_device_total);
    const char *dir = test_temp_dir();
    const char *path = path_in(dir, "mlp.safetensors");
    clt_module *a = test_mlp(4, 5, 3, clt_nn_tanh(), 1), *b = test_mlp(4, 5, 3, clt_nn_tanh(), 2);
    ck_assert_int_eq(clt_module_to(a, from), CLT_OK);
    ck_assert_int_eq(clt_module_to(b, to), CLT_OK);
    clt_tensor *w_before = clt_module_get_parameter(b, "0.weight");
    test_live base = test_live_now();
    ck_assert_msg(clt_module_save(a, path, NULL, 0) == CLT_OK, "%s", clt_last_error());
    ck_assert_msg(clt_module_load(b, path, true, NULL) == CLT_OK, "%s", clt_last_error());
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
    /* in place: the same handles, on the same device */
    ck_assert_ptr_eq(clt_module_get_parameter(b, "0.weight"), w_before);
    ck_assert_ptr_eq(clt_tensor_device(w_before), to);
    const char *names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    for (int i = 0; i < 4; i++)
        test_assert_same_bytes(clt_module_get_parameter(a, names[i]),
                               clt_module_get_parameter(b, names[i]));
    /* the same output (up to the devices' rounding of tanh) */
    clt_tensor *x = mlp_input();
    clt_tensor *ya = forward_on_cpu(a, x), *yb = forward_on_cpu(b, x);
    double *va = test_values(ya), *vb = test_values(yb);
    for (int i = 0; i < 6; i++)
        ck_assert_double_eq_tol(va[i], vb[i], 1e-6);
    free(va), free(vb);
    clt_tensor_release(ya), clt_tensor_release(yb), clt_tensor_release(x);
    clt_module_release(a), clt_module_release(b);
}
END_TEST

/* state_dict in memory both ways: from a module on one device into one on another, with
 * PyTorch's strict rules and the report, and from a file's tensors without a second read. */
START_TEST(test_io_state_dict_in_memory)
{
    clt_device *from = test_device(_i), *to = test_device((_i + 1) % test_device_total);
    clt_module *a = test_mlp(4, 5, 3, clt_nn_tanh(), 1), *b = test_mlp(4, 5, 3, clt_nn_tanh(), 2);
    ck_assert_int_eq(clt_module_to(a, from), CLT_OK);
    ck_assert_int_eq(clt_module_to(b, to), CLT_OK);
    test_live base = test_live_now();
    clt_state_dict sd;
    ck_assert_int_eq(clt_module_state_dict(a, &sd), CLT_OK);
    ck_assert_int_eq(sd.count, 4);
    ck_assert_str_eq(sd.tensors[0].name, "0.weight");
    ck_assert_str_eq(sd.tensors[3].name, "2.bias");
    ck_assert_ptr_eq(sd.tensors[0].tensor, clt_module_get_parameter(a, "0.weight"));
    clt_tensor *w_before = clt_module_get_parameter(b, "0.weight");
    ck_assert_msg(clt_module_load_state_dict(b, sd.tensors, sd.count, true, NULL) == CLT_OK, "%s",
                  clt_last_error());
    ck_assert_ptr_eq(clt_module_get_parameter(b, "0.weight"), w_before);
    ck_assert_ptr_eq(clt_tensor_device(w_before), to);
    for (int i = 0; i < sd.count; i++)
        test_assert_same_bytes(sd.tensors[i].tensor,
                               clt_module_get_parameter(b, sd.tensors[i].name));
    /* strict: a missing name is refused and changes nothing; not strict: reported, skipped */
    clt_module *c = test_mlp(4, 5, 3, clt_nn_tanh(), 3);
    clt_tensor *c_w = clt_tensor_to_ex(clt_module_get_parameter(c, "0.weight"),
                                       &(clt_to_options){.copy = true});
    ck_assert_int_eq(clt_module_load_state_dict(c, sd.tensors, 3, true, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_load_state_dict: the state dict does not fit the module: "
                        "missing \"2.bias\"");
    test_assert_same_bytes(clt_module_get_parameter(c, "0.weight"), c_w);
    clt_load_report r;
    ck_assert_int_eq(clt_module_load_state_dict(c, sd.tensors, 3, false, &r), CLT_OK);
    ck_assert_int_eq(r.missing_count, 1);
    ck_assert_str_eq(r.missing[0], "2.bias");
    test_assert_same_bytes(clt_module_get_parameter(c, "0.weight"), sd.tensors[0].tensor);
    clt_load_report_clear(&r);
    clt_named_tensor twice[2] = {sd.tensors[0], sd.tensors[0]};
    ck_assert_int_eq(clt_module_load_state_dict(c, twice, 2, false, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("the name \"0.weight\" is given twice");
    ck_assert_int_eq(clt_module_load_state_dict(c, NULL, 1, false, NULL), CLT_ERR_INVALID_ARGUMENT);
    clt_state_dict none = {.count = 7};
    ck_assert_int_eq(clt_module_state_dict(NULL, &none), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(none.count, 0);
    /* a file read once, its tensors loaded from memory */
    const char *path = path_in(test_temp_dir(), "sd.safetensors");
    ck_assert_int_eq(clt_module_save(a, path, NULL, 0), CLT_OK);
    clt_safetensors st;
    ck_assert_int_eq(clt_safetensors_load(path, to, &st), CLT_OK);
    ck_assert_int_eq(clt_module_load_state_dict(c, st.tensors, st.count, true, NULL), CLT_OK);
    test_assert_same_bytes(clt_module_get_parameter(c, "2.bias"),
                           clt_module_get_parameter(a, "2.bias"));
    clt_safetensors_clear(&st);
    clt_tensor_release(c_w);
    clt_module_release(c);
    clt_state_dict_clear(&sd);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
    clt_module_release(a), clt_module_release(b);
}
END_TEST

/* Every dtype, on each device, with bytes chosen to catch any conversion (NaN payloads,
 * subnormals, negative zero); a transposed view is written row-major. */
START_TEST(test_io_dtypes_bit_exact)
{
    clt_device *dev = test_device(_i);
    const char *path = path_in(test_temp_dir(), "all.safetensors");
    static const char *names[CLT_DTYPE_COUNT] = {NULL, "f32", "f64", "f16", "bf16", "i32",
                                                 "i64", "u8", "bool"};
    clt_named_tensor nt[CLT_DTYPE_COUNT + 1];
    int n = 0;
    uint8_t bytes[6 * 8];
    for (int k = 0; k < (int)sizeof bytes; k++)
        bytes[k] = (uint8_t)(k * 37 + 11);
    for (int d = CLT_F32; d < CLT_DTYPE_COUNT; d++) {
        if (d == CLT_F64 && !clt_device_get_info(dev)->fp64)
            continue;
        if (d == CLT_BOOL)
            for (int k = 0; k < 6; k++)
                bytes[k] = (uint8_t)(k & 1);
        if (d == CLT_F32) /* a NaN with a payload and -0 */
            memcpy(bytes, (const uint32_t[]){0x7fc12345u, 0x80000000u}, 8);
        clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2, 3), bytes, (clt_dtype)d, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        nt[n++] = (clt_named_tensor){names[d], t};
    }
    clt_tensor *view = clt_transpose(nt[0].tensor, 0, 1);
    nt[n++] = (clt_named_tensor){"f32.T", view};
    ck_assert_msg(clt_safetensors_save(path, nt, n, NULL, 0) == CLT_OK, "%s", clt_last_error());
    clt_safetensors st;
    ck_assert_msg(clt_safetensors_load(path, dev, &st) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(st.count, n);
    for (int i = 0; i < n; i++) {
        clt_tensor *t = clt_safetensors_get(&st, nt[i].name);
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_eq(clt_tensor_device(t), dev);
        ck_assert_int_eq(clt_tensor_dtype(t), clt_tensor_dtype(nt[i].tensor));
        ck_assert_int_eq(clt_tensor_ndim(t), 2);
        ck_assert_int_eq(clt_tensor_size(t, 0), clt_tensor_size(nt[i].tensor, 0));
        test_assert_same_bytes(t, nt[i].tensor);
    }
    ck_assert_ptr_null(clt_safetensors_get(&st, "absent"));
    clt_safetensors_clear(&st);
    clt_safetensors_clear(&st); /* twice is harmless */
    ck_assert_int_eq(st.count, 0);
    for (int i = 0; i < n; i++)
        clt_tensor_release(nt[i].tensor);
}
END_TEST

START_TEST(test_io_metadata)
{
    const char *path = path_in(test_temp_dir(), "meta.safetensors");
    const clt_metadata md[3] = {{"format", "pt"}, {"quote\"back\\slash", "line\nfeed\ttab"},
                                {"utf8", "caf\xc3\xa9"}};
    clt_tensor *t = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, clt_device_cpu());
    ck_assert_int_eq(clt_safetensors_save(path, &(clt_named_tensor){"empty", t}, 1, md, 3),
                     CLT_OK);
    clt_safetensors st;
    ck_assert_msg(clt_safetensors_load(path, NULL, &st) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(st.metadata_count, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_str_eq(clt_safetensors_metadata_get(&st, md[i].key), md[i].value);
    ck_assert_ptr_null(clt_safetensors_metadata_get(&st, "absent"));
    ck_assert_int_eq(clt_tensor_numel(clt_safetensors_get(&st, "empty")), 0);
    clt_safetensors_clear(&st);
    /* no tensors at all */
    ck_assert_int_eq(clt_safetensors_save(path, NULL, 0, md, 1), CLT_OK);
    ck_assert_int_eq(clt_safetensors_load(path, NULL, &st), CLT_OK);
    ck_assert_int_eq(st.count, 0);
    ck_assert_str_eq(clt_safetensors_metadata_get(&st, "format"), "pt");
    clt_safetensors_clear(&st);
    /* argument errors */
    clt_named_tensor twice[2] = {{"a", t}, {"a", t}};
    ck_assert_int_eq(clt_safetensors_save(path, twice, 2, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("\"a\" is given twice");
    ck_assert_int_eq(clt_safetensors_save(path, &(clt_named_tensor){"__metadata__", t}, 1, NULL,
                                          0), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_safetensors_load(path, NULL, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_safetensors_save("/nonexistent/dir/x", &(clt_named_tensor){"a", t}, 1,
                                          NULL, 0), CLT_ERR_IO);
    ck_assert_int_eq(clt_safetensors_load("/nonexistent/x", NULL, &st), CLT_ERR_IO);
    ck_assert_error_has("/nonexistent/x: cannot open");
    clt_tensor_release(t);
}
END_TEST

/* A path in UTF-8 (not ASCII) names the file on disk as written: saved, replaced by a second
 * save and loaded, and found under that very name by the system's own calls (the wide-character
 * ones on Windows, the bytes on POSIX). */
START_TEST(test_io_utf8_path)
{
    static const char name[] = "caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac.safetensors";
    const char *path = path_in(test_temp_dir(), name);
    float v[3] = {1.5f, -2, 3}, got[3];
    for (int round = 0; round < 2; round++) { /* the second replaces the file in one step */
        v[0] += (float)round;
        clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), v, CLT_F32, clt_device_cpu());
        ck_assert_int_eq(clt_safetensors_save(path, &(clt_named_tensor){"w", t}, 1, NULL, 0),
                         CLT_OK);
        clt_tensor_release(t);
    }
    clt_safetensors st;
    ck_assert_msg(clt_safetensors_load(path, NULL, &st) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_copy_to_host(clt_safetensors_get(&st, "w"), got, sizeof got),
                     CLT_OK);
    ck_assert(got[0] == 2.5f && got[1] == -2 && got[2] == 3);
    clt_safetensors_clear(&st);
#ifdef _WIN32
    wchar_t wide[512];
    ck_assert_int_gt(MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, wide, 512), 0);
    ck_assert_msg(GetFileAttributesW(wide) != INVALID_FILE_ATTRIBUTES, "%s is not on disk", path);
#else
    struct stat sb;
    ck_assert_msg(stat(path, &sb) == 0 && S_ISREG(sb.st_mode), "%s is not on disk", path);
#endif
}
END_TEST

/* ---- strict and non-strict loads ------------------------------------------------------------- */

/* Saves the tensors of a Sequential(Linear(4, 5), Tanh, Linear(5, 3)) with one change. */
static void save_changed(const char *path, const char *drop, const char *rename_to,
                         const char *reshape, clt_dtype dtype_of_bias)
{
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 9);
    const char *names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    clt_named_tensor nt[5];
    int n = 0;
    for (int i = 0; i < 4; i++) {
        if (drop && strcmp(names[i], drop) == 0)
            continue;
        clt_tensor *t = clt_tensor_retain(clt_module_get_parameter(m, names[i]));
        if (reshape && strcmp(names[i], reshape) == 0) {
            clt_tensor_release(t);
            t = clt_tensor_zeros(CLT_SHAPE(7), CLT_F32, clt_device_cpu());
        }
        if (dtype_of_bias && strcmp(names[i], "0.bias") == 0) {
            clt_tensor *c = clt_tensor_to_dtype(t, dtype_of_bias);
            clt_tensor_release(t);
            t = c;
        }
        nt[n++] = (clt_named_tensor){names[i], t};
    }
    if (rename_to)
        nt[n++] = (clt_named_tensor){rename_to, clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, NULL)};
    ck_assert_msg(clt_safetensors_save(path, nt, n, NULL, 0) == CLT_OK, "%s", clt_last_error());
    for (int i = 0; i < n; i++)
        clt_tensor_release(nt[i].tensor);
    clt_module_release(m);
}

static void assert_unchanged_after(clt_module *m, const char *path, bool strict,
                                   const char *message)
{
    clt_tensor *w = clt_module_get_parameter(m, "0.weight");
    clt_tensor *b = clt_module_get_parameter(m, "0.bias");
    void *wb = test_bytes(w), *bb = test_bytes(b);
    clt_load_report r;
    ck_assert_int_eq(clt_module_load(m, path, strict, &r), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has(message);
    ck_assert_error_has(path);
    void *wa = test_bytes(w), *ba = test_bytes(b);
    ck_assert(memcmp(wa, wb, (size_t)clt_tensor_numel(w) * 4) == 0);
    ck_assert(memcmp(ba, bb, (size_t)clt_tensor_numel(b) * 4) == 0);
    free(wa), free(wb), free(ba), free(bb);
    clt_load_report_clear(&r);
}

START_TEST(test_io_strict_errors)
{
    const char *dir = test_temp_dir();
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 1);
    ck_assert_int_eq(clt_module_to(m, test_device(_i)), CLT_OK);
    test_live base = test_live_now();
    save_changed(path_in(dir, "missing"), "2.bias", NULL, NULL, CLT_DTYPE_NONE);
    assert_unchanged_after(m, path_in(dir, "missing"), true, "missing \"2.bias\"");
    save_changed(path_in(dir, "extra"), NULL, "extra.weight", NULL, CLT_DTYPE_NONE);
    assert_unchanged_after(m, path_in(dir, "extra"), true, "unexpected \"extra.weight\"");
    save_changed(path_in(dir, "shape"), NULL, NULL, "0.bias", CLT_DTYPE_NONE);
    assert_unchanged_after(m, path_in(dir, "shape"), true,
                           "shape mismatch \"0.bias\" (file (7,), module (5,))");
    assert_unchanged_after(m, path_in(dir, "shape"), false,
                           "shape mismatch \"0.bias\" (file (7,), module (5,))");
    save_changed(path_in(dir, "dtype"), NULL, NULL, NULL, CLT_F64);
    assert_unchanged_after(m, path_in(dir, "dtype"), true,
                           "dtype mismatch \"0.bias\" (file F64, module F32)");
    /* all at once: every fault listed */
    save_changed(path_in(dir, "all"), "2.bias", "x", "2.weight", CLT_F64);
    assert_unchanged_after(m, path_in(dir, "all"), true, "missing \"2.bias\"; ");
    ck_assert_error_has("shape mismatch \"2.weight\"");
    ck_assert_error_has("dtype mismatch \"0.bias\"");
    ck_assert_error_has("unexpected \"x\"");
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
    clt_module_release(m);
}
END_TEST

/* Names that differ from the module's by a prefix (a checkpoint of a model with a head loaded
 * into the bare model, and the other way round): the error names the prefix, first. */
START_TEST(test_io_prefix_hint)
{
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 1);
    clt_state_dict sd = {0};
    char names[4][32];
    clt_named_tensor given[4];
    ck_assert_int_eq(clt_module_to(m, test_device(_i)), CLT_OK);
    ck_assert_int_eq(clt_module_state_dict(m, &sd), CLT_OK);
    ck_assert_int_eq(sd.count, 4);
    for (int i = 0; i < 4; i++) {
        snprintf(names[i], sizeof names[i], "bert.%s", sd.tensors[i].name);
        given[i] = (clt_named_tensor){names[i], sd.tensors[i].tensor};
    }
    ck_assert_int_eq(clt_module_load_state_dict(m, given, 4, true, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("does not fit the module: the file's names have the prefix \"bert.\" "
                        "that the module's lack (4 of the 4 missing names match with it); "
                        "missing \"0.weight\"");
    /* the module's "0." on names the state dict gives bare ("weight", "bias") */
    given[0] = (clt_named_tensor){sd.tensors[0].name + 2, sd.tensors[0].tensor};
    given[1] = (clt_named_tensor){sd.tensors[1].name + 2, sd.tensors[1].tensor};
    ck_assert_str_eq(given[0].name, "weight");
    ck_assert_int_eq(clt_module_load_state_dict(m, given, 2, true, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("the module's names have the prefix \"0.\" that the file's lack (2 of "
                        "the 4 missing names match without it)");
    /* no prefix in common: no hint */
    given[0] = (clt_named_tensor){"other", sd.tensors[0].tensor};
    ck_assert_int_eq(clt_module_load_state_dict(m, given, 1, true, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(strstr(clt_last_error(), "prefix"));
    clt_state_dict_clear(&sd);
    clt_module_release(m);
}
END_TEST

START_TEST(test_io_non_strict_report)
{
    const char *dir = test_temp_dir();
    const char *path = path_in(dir, "partial");
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 1), *src = test_mlp(4, 5, 3, clt_nn_tanh(), 9);
    ck_assert_int_eq(clt_module_to(m, test_device(_i)), CLT_OK);
    save_changed(path, "2.bias", "extra", NULL, CLT_F64);
    void *kept = test_bytes(clt_module_get_parameter(m, "2.bias"));
    clt_load_report r;
    ck_assert_msg(clt_module_load(m, path, false, &r) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(r.missing_count, 1);
    ck_assert_str_eq(r.missing[0], "2.bias");
    ck_assert_int_eq(r.unexpected_count, 1);
    ck_assert_str_eq(r.unexpected[0], "extra");
    clt_load_report_clear(&r);
    ck_assert_int_eq(r.missing_count, 0);
    clt_load_report_clear(NULL);
    /* the matched tensors came in (0.bias converted from F64), the missing one stayed */
    test_assert_same_bytes(clt_module_get_parameter(m, "0.weight"),
                           clt_module_get_parameter(src, "0.weight"));
    test_assert_same_bytes(clt_module_get_parameter(m, "0.bias"),
                           clt_module_get_parameter(src, "0.bias"));
    void *now = test_bytes(clt_module_get_parameter(m, "2.bias"));
    ck_assert(memcmp(now, kept, 3 * 4) == 0);
    free(now), free(kept);
    /* the same file, strictly: the report still comes */
    ck_assert_int_eq(clt_module_load(m, path, true, &r), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(r.missing_count, 1);
    ck_assert_int_eq(r.unexpected_count, 1);
    clt_load_report_clear(&r);
    clt_module_release(m), clt_module_release(src);
}
END_TEST

/* ---- malformed files -------------------------------------------------------------------------- */

/* Writes an 8-byte length (header_len, or the header's length when negative), the header and
 * data_len bytes of data. */
static const char *write_raw(const char *dir, const char *name, int64_t header_len,
                             const char *header, size_t data_len)
{
    const char *path = path_in(dir, name);
    FILE *f = fopen(path, "wb");
    uint64_t n = header_len < 0 ? strlen(header) : (uint64_t)header_len;
    uint8_t len[8];
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    fwrite(len, 1, 8, f);
    fputs(header, f);
    for (size_t i = 0; i < data_len; i++)
        fputc((int)(i & 0xff), f);
    fclose(f);
    return path;
}

static void assert_rejected(const char *path, const char *message)
{
    clt_safetensors st;
    test_live base = test_live_now();
    ck_assert_int_eq(clt_safetensors_load(path, NULL, &st), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_safetensors_load: ");
    ck_assert_error_has(path);
    ck_assert_error_has(message);
    ck_assert_int_eq(st.count, 0);
    ck_assert_ptr_null(st.tensors);
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 1);
    ck_assert_int_eq(clt_module_load(m, path, false, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_load: ");
    ck_assert_error_has(message);
    clt_module_release(m);
    ck_assert_live_eq(test_live_now(), base);
}

#define T(name, dtype, shape, b, e)                                                            \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

START_TEST(test_io_malformed_files)
{
    const char *d = test_temp_dir();
    clt_device_cpu();
    /* a valid file first, to show the writer below is right */
    clt_safetensors st;
    const char *ok = write_raw(d, "ok", -1, "{" T("a", "F32", "[2]", 0, 8) "," T("b", "U8", "[3]", 8, 11) "}", 11);
    ck_assert_msg(clt_safetensors_load(ok, NULL, &st) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(st.count, 2);
    ck_assert_str_eq(st.tensors[0].name, "a");
    clt_safetensors_clear(&st);

    test_write_file(d, "short", "abc");
    assert_rejected(path_in(d, "short"), "truncated: 3 bytes");
    test_write_file(d, "empty", "");
    assert_rejected(path_in(d, "empty"), "truncated: 0 bytes");
    assert_rejected(write_raw(d, "beyond", 1000, "{}", 0), "header length 1000 exceeds the file's 2");
    assert_rejected(write_raw(d, "huge", (int64_t)1 << 40, "{}", 0), "exceeds the limit");
    assert_rejected(write_raw(d, "json", -1, "{\"a\":", 0), "not valid JSON");
    assert_rejected(write_raw(d, "array", -1, "[1, 2]", 0), "not a JSON object");
    assert_rejected(write_raw(d, "dtype", -1, "{" T("a", "F8", "[2]", 0, 2) "}", 2),
                    "tensor \"a\" has the unknown dtype \"F8\"");
    assert_rejected(write_raw(d, "nodtype", -1, "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                    "tensor \"a\" lacks a dtype");
    assert_rejected(write_raw(d, "notobj", -1, "{\"a\":3}", 0), "tensor \"a\" lacks");
    assert_rejected(write_raw(d, "negshape", -1, "{" T("a", "F32", "[-1]", 0, 4) "}", 4),
                    "invalid shape");
    assert_rejected(write_raw(d, "fracshape", -1, "{" T("a", "F32", "[1.5]", 0, 4) "}", 4),
                    "invalid shape");
    assert_rejected(write_raw(d, "bigshape", -1,
                              "{" T("a", "F32", "[4294967296,4294967296]", 0, 4) "}", 4),
                    "invalid shape");
    /* No elements, but the other sizes' product (the strides) overflows int64_t: found by
     * tests/fuzz/fuzz_safetensors under UBSan. 2^40 = 1099511627776. */
    assert_rejected(write_raw(d, "zerohuge", -1,
                              "{" T("a", "F32", "[0,1099511627776,1099511627776]", 0, 0) "}", 0),
                    "invalid shape");
    assert_rejected(write_raw(d, "dims", -1, "{" T("a", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1),
                    "9 dimensions");
    assert_rejected(write_raw(d, "offsets3", -1,
                              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1),
                    "invalid data_offsets");
    assert_rejected(write_raw(d, "reversed", -1, "{" T("a", "U8", "[0]", 4, 2) "}", 4),
                    "invalid data_offsets");
    assert_rejected(write_raw(d, "size", -1, "{" T("a", "F32", "[2]", 0, 4) "}", 4),
                    "spans 4 bytes but its shape and dtype need 8");
    assert_rejected(write_raw(d, "range", -1, "{" T("a", "F32", "[2]", 0, 8) "}", 4),
                    "cover 8 bytes of data but the file holds 4");
    assert_rejected(write_raw(d, "far", -1, "{" T("a", "U8", "[2]", 1000000000, 1000000002) "}", 2),
                    "starts at byte 1000000000 of the data, not 0");
    assert_rejected(write_raw(d, "overlap", -1,
                              "{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 2, 6) "}", 6),
                    "tensor \"b\" starts at byte 2 of the data, not 4");
    assert_rejected(write_raw(d, "gap", -1,
                              "{" T("a", "U8", "[2]", 0, 2) "," T("b", "U8", "[2]", 3, 5) "}", 5),
                    "leave a gap");
    assert_rejected(write_raw(d, "trailing", -1, "{" T("a", "U8", "[2]", 0, 2) "}", 3),
                    "cover 2 bytes of data but the file holds 3");
    assert_rejected(write_raw(d, "dup", -1,
                              "{" T("a", "U8", "[2]", 0, 2) "," T("a", "U8", "[2]", 2, 4) "}", 4),
                    "the name \"a\" appears twice");
    assert_rejected(write_raw(d, "meta", -1, "{\"__metadata__\":{\"k\":1}}", 0),
                    "metadata \"k\" is not a string");
    assert_rejected(write_raw(d, "meta2", -1, "{\"__metadata__\":[]}", 0),
                    "\"__metadata__\" is not an object");
    assert_rejected(write_raw(d, "meta3", -1, "{\"__metadata__\":{},\"__metadata__\":{}}", 0),
                    "\"__metadata__\" appears twice");
    /* a directory is unreadable, not malformed */
    ck_assert_int_eq(clt_safetensors_load(d, NULL, &st), CLT_ERR_IO);
    ck_assert_error_has("not a readable regular file");
}
END_TEST

/* ---- hostile paths and modules ---------------------------------------------------------------- */

#ifndef _WIN32 /* FIFOs, symbolic links and the umask: none of them on Windows */
/* A FIFO is refused at once instead of blocking the reader forever; a save writes through no
 * link planted at a predictable temporary name, leaves no temporary file, and makes the file
 * with the umask's mode. */
START_TEST(test_io_hostile_paths)
{
    const char *dir = test_temp_dir();
    clt_safetensors st;
    char victim[600], planted[600];
    clt_module *m = test_mlp(4, 5, 3, clt_nn_tanh(), 1);
    ck_assert_int_eq(mkfifo(path_in(dir, "fifo.safetensors"), 0600), 0);
    ck_assert_int_eq(clt_safetensors_load(path_in(dir, "fifo.safetensors"), NULL, &st), CLT_ERR_IO);
    ck_assert_error_has("fifo.safetensors: not a readable regular file");
    ck_assert_int_eq(clt_module_load(m, path_in(dir, "fifo.safetensors"), true, NULL), CLT_ERR_IO);
    ck_assert_error_has("clt_module_load: ");

    snprintf(victim, sizeof victim, "%s/victim", dir);
    test_write_file(dir, "victim", "precious");
    for (long pid = (long)getpid() - 2; pid <= (long)getpid() + 2; pid++) {
        snprintf(planted, sizeof planted, "%s/model.safetensors.%ld.tmp", dir, pid);
        ck_assert_int_eq(symlink(victim, planted), 0);
    }
    for (int k = 0; k < 2; k++) {
        mode_t mask = k ? 077 : 022, old = umask(mask);
        struct stat sb;
        ck_assert_msg(clt_module_save(m, path_in(dir, "model.safetensors"), NULL, 0) == CLT_OK,
                      "%s", clt_last_error());
        umask(old);
        ck_assert_int_eq(stat(path_in(dir, "model.safetensors"), &sb), 0);
        ck_assert_int_eq(sb.st_mode & 0777, 0666 & ~mask);
    }
    FILE *f = fopen(victim, "r");
    char text[16] = {0};
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(text, sizeof text, f));
    fclose(f);
    ck_assert_str_eq(text, "precious");
    /* the folder holds the FIFO, the victim, the planted links and the file: nothing else */
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') {
            files++;
            ck_assert_msg(strstr(e->d_name, ".tmp-") == NULL, "left behind: %s", e->d_name);
        }
    closedir(d);
    ck_assert_int_eq(files, 2 + 5 + 1);
    ck_assert_int_eq(clt_module_load(m, path_in(dir, "model.safetensors"), true, NULL), CLT_OK);
    clt_module_release(m);
}
END_TEST
#endif

static const clt_module_type holder_type = {.name = "Holder", .size = sizeof(clt_module)};

/* A load checks every value before it writes the first: a broadcast view among the module's
 * buffers (registration accepts one) fails the load with nothing overwritten. */
START_TEST(test_io_load_all_or_nothing)
{
    clt_device *dev = test_device(_i);
    const char *dir = test_temp_dir();
    clt_module *m = clt_module_new(&holder_type), *src = clt_module_new(&holder_type);
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(2), 1, CLT_F32, dev);
    clt_tensor *one = clt_tensor_full(CLT_SHAPE(1), 5, CLT_F32, dev);
    clt_tensor *wide = clt_expand(one, CLT_SHAPE(2));
    clt_tensor *sw = clt_tensor_full(CLT_SHAPE(2), 7, CLT_F32, dev);
    clt_tensor *sb = clt_tensor_full(CLT_SHAPE(2), 8, CLT_F32, dev);
    ck_assert_int_eq(clt_module_register_parameter(m, "w", w), CLT_OK);
    ck_assert_int_eq(clt_module_register_buffer(m, "wide", wide), CLT_OK);
    ck_assert_int_eq(clt_module_register_parameter(src, "w", sw), CLT_OK);
    ck_assert_int_eq(clt_module_register_buffer(src, "wide", sb), CLT_OK);
    ck_assert_int_eq(clt_module_save(src, path_in(dir, "src.safetensors"), NULL, 0), CLT_OK);
    ck_assert_int_eq(clt_module_load(m, path_in(dir, "src.safetensors"), true, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_load: \"wide\" of the module is a broadcast view");
    double *v = test_values(w);
    ck_assert(v[0] == 1 && v[1] == 1); /* not overwritten with 7 */
    free(v);
    v = test_values(one);
    ck_assert(v[0] == 5);
    free(v);
    clt_tensor *all[] = {sb, sw, wide, one, w};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    clt_module_release(src);
    clt_module_release(m);
}
END_TEST

/* ---- PyTorch interop ------------------------------------------------------------------------- */

/* tests/data/torch_mlp.safetensors, from tests/data/make_safetensors.py: a PyTorch MLP's
 * state_dict, an input and PyTorch's output. Loaded into the same architecture on each device,
 * the module gives PyTorch's output; saved again with its input and output, the file checks in
 * PyTorch (make_safetensors.py check FILE, with CLT_TEST_TORCH_OUT=FILE naming where). */
START_TEST(test_io_torch_mlp)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    clt_load_report r;
    clt_module *m = test_mlp(6, 8, 3, clt_nn_tanh(), 1);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    ck_assert_msg(clt_module_load(m, CLT_TEST_DATA_DIR "/torch_mlp.safetensors", false, &r) ==
                      CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(r.missing_count, 0);
    ck_assert_int_eq(r.unexpected_count, 2); /* "input" and "expected" */
    clt_load_report_clear(&r);
    ck_assert_msg(clt_safetensors_load(CLT_TEST_DATA_DIR "/torch_mlp.safetensors", dev, &st) ==
                      CLT_OK, "%s", clt_last_error());
    ck_assert_str_eq(clt_safetensors_metadata_get(&st, "format"), "pt");
    clt_tensor *x = clt_safetensors_get(&st, "input"), *expected = clt_safetensors_get(&st, "expected");
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(expected);
    clt_tensor *y = clt_module_forward(m, x);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    double *vy = test_values(y), *ve = test_values(expected);
    for (int i = 0; i < 12; i++)
        ck_assert_double_eq_tol(vy[i], ve[i], 1e-5);
    free(vy), free(ve);
    /* back to PyTorch: the state_dict, the input and this output */
    const char *out = getenv("CLT_TEST_TORCH_OUT");
    char *path = path_in(test_temp_dir(), "to_torch.safetensors");
    clt_named_tensor nt[6] = {{"input", x}, {"expected", y}};
    const char *names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    for (int i = 0; i < 4; i++)
        nt[2 + i] = (clt_named_tensor){names[i], clt_module_get_parameter(m, names[i])};
    const clt_metadata md = {"format", "pt"};
    ck_assert_int_eq(clt_safetensors_save(out && _i == 0 ? out : path, nt, 6, &md, 1), CLT_OK);
    clt_tensor_release(y);
    clt_safetensors_clear(&st);
    clt_module_release(m);
}
END_TEST

/* ---- allocation failures ------------------------------------------------------------------------ */

typedef struct io_case {
    clt_module *m;
    const char *path;
    clt_device *dev;
} io_case;

static bool run_module_save(void *ctx)
{
    io_case *c = ctx;
    const clt_metadata md = {"k", "v"};
    return clt_module_save(c->m, c->path, &md, 1) == CLT_OK;
}

static bool run_module_load(void *ctx)
{
    io_case *c = ctx;
    clt_load_report r;
    bool ok = clt_module_load(c->m, c->path, false, &r) == CLT_OK;
    clt_load_report_clear(&r);
    return ok;
}

static bool run_load(void *ctx)
{
    io_case *c = ctx;
    clt_safetensors st;
    bool ok = clt_safetensors_load(c->path, c->dev, &st) == CLT_OK;
    clt_safetensors_clear(&st);
    return ok;
}

START_TEST(test_io_fault_sweeps)
{
    clt_device *dev = test_device(_i);
    const char *path = path_in(test_temp_dir(), "m.safetensors");
    io_case c = {test_mlp(4, 5, 3, clt_nn_tanh(), 1), path, dev};
    ck_assert_int_eq(clt_module_to(c.m, dev), CLT_OK);
    ck_assert_int_ge(test_fault_sweep(run_module_save, &c, "clt_module_save", CLT__HOST), 4);
    ck_assert_int_ge(test_fault_sweep(run_load, &c, "clt_safetensors_load", CLT__HOST), 4);
    ck_assert_int_ge(test_fault_sweep(run_module_load, &c, "clt_module_load", CLT__HOST), 4);
    /* a report with names in it */
    save_changed(path, "2.bias", "extra", NULL, CLT_DTYPE_NONE);
    ck_assert_int_ge(test_fault_sweep(run_module_load, &c, "clt_module_load", CLT__HOST), 4);
    if (_i > 0) {
        test_fault_sweep(run_load, &c, "clt_safetensors_load", CLT__DEVICE);
        test_fault_sweep(run_module_load, &c, "clt_module_load", CLT__DEVICE);
    }
    clt_module_release(c.m);
}
END_TEST

Suite *suite_io(void)
{
    Suite *s = suite_create("io");
    TCase *tc = test_case("safetensors", 120);
    ADD_DEVICE_TEST(tc, test_io_module_round_trip);
    ADD_DEVICE_TEST(tc, test_io_dtypes_bit_exact);
    ADD_DEVICE_TEST(tc, test_io_state_dict_in_memory);
    tcase_add_test(tc, test_io_metadata);
    tcase_add_test(tc, test_io_utf8_path);
    ADD_DEVICE_TEST(tc, test_io_strict_errors);
    ADD_DEVICE_TEST(tc, test_io_prefix_hint);
    ADD_DEVICE_TEST(tc, test_io_non_strict_report);
    tcase_add_test(tc, test_io_malformed_files);
#ifndef _WIN32 /* FIFOs, symbolic links and the umask: none of them on Windows */
    tcase_add_test(tc, test_io_hostile_paths);
#endif
    ADD_DEVICE_TEST(tc, test_io_load_all_or_nothing);
    ADD_DEVICE_TEST(tc, test_io_torch_mlp);
    ADD_DEVICE_TEST(tc, test_io_fault_sweeps);
    suite_add_tcase(s, tc);
    return s;
}
