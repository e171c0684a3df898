/* The digits samples' models (see digits_models.h). Each constructor returns a new module, or
 * NULL with the library's last error set. */
#include <string.h>

#include "digits_models.h"

/* nn.Sequential(*layers), taking over the layers' references (NULL entries: a failure). */
static clt_module *sequential(clt_module *const *layers, int n)
{
    clt_module *seq = NULL;
    bool made = true;
    for (int i = 0; i < n; i++)
        made = made && layers[i];
    if (made)
        seq = clt_nn_sequential(layers, n);
    for (int i = 0; i < n; i++)
        clt_module_release(layers[i]);
    return seq;
}

clt_module *digits_mlp_new(void)
{
    return sequential((clt_module *[]){clt_nn_linear(64, 256, true), clt_nn_relu(),
                                       clt_nn_linear(256, 10, true)},
                      3);
}

/* class DigitsCNN(nn.Module): the 64 pixels as one 8x8 channel through two convolutions. */
typedef struct DigitsCNN {
    clt_module base; /* first, like the base class */
    clt_module *layers;
} DigitsCNN;

static clt_tensor *cnn_forward(clt_module *self, clt_tensor *x)
{
    clt_tensor *image = clt_view(x, CLT_SHAPE(-1, 1, 8, 8)); /* x.view(-1, 1, 8, 8) */
    if (!image)
        return NULL;
    clt_tensor *y = clt_module_forward(((DigitsCNN *)self)->layers, image);
    clt_tensor_release(image);
    return y;
}

static const clt_module_type cnn_type = {.name = "DigitsCNN",
                                         .size = sizeof(DigitsCNN),
                                         .forward = cnn_forward};

clt_module *digits_cnn_new(void)
{
    const clt_conv2d_options same = {.padding = {1, 1}};
    const clt_pool2d_options halve = {.kernel = {2, 2}};
    DigitsCNN *m = (DigitsCNN *)clt_module_new(&cnn_type);
    if (!m)
        return NULL;
    m->layers = sequential((clt_module *[]){clt_nn_conv2d(1, 16, 3, 3, &same, true), clt_nn_relu(),
                                            clt_nn_max_pool2d(&halve),
                                            clt_nn_conv2d(16, 32, 3, 3, &same, true), clt_nn_relu(),
                                            clt_nn_flatten(), clt_nn_linear(32 * 4 * 4, 10, true)},
                           7);
    clt_status st = m->layers ? clt_module_register_module(&m->base, "layers", m->layers)
                              : clt_last_status();
    clt_module_release(m->layers); /* the model holds it */
    if (st != CLT_OK) {
        clt_module_release(&m->base);
        return NULL;
    }
    return &m->base;
}

clt_module *digits_model_new(const char *name)
{
    if (name && !strcmp(name, "mlp"))
        return digits_mlp_new();
    if (name && !strcmp(name, "cnn"))
        return digits_cnn_new();
    clt_set_error(CLT_ERR_INVALID_ARGUMENT, "digits_model_new", "no model named \"%s\" (mlp or cnn)",
                  name ? name : "(null)");
    return NULL;
}
