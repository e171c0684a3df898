/* Moving a model between devices, as the PyTorch text this library started from does it:
 *
 *     class MyModel(nn.Module):
 *         def __init__(self):
 *             super().__init__()
 *             self.linear = nn.Linear(10, 5)
 *         def forward(self, x):
 *             return self.linear(x)
 *
 *     model = MyModel()
 *     device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
 *     model.to(device)             # in place: the same module, now on the device
 *     copied_model = model.to(device)
 *     x = torch.randn(1, 10).to(device)
 *     output = model(x)
 *
 * That text claims `model.to(device)` can make a copy; in PyTorch (and here) it returns the same
 * module. A real copy is explicit: clt_module_clone_to. */
#include <stdio.h>
#include <stdlib.h>

#include <cltensor.h>

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "%s\n", clt_last_error());                                         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* class MyModel(nn.Module) */
typedef struct MyModel {
    clt_module base; /* first, like the base class */
    clt_module *linear;
} MyModel;

static clt_tensor *my_model_forward(clt_module *self, clt_tensor *x)
{
    return clt_module_forward(((MyModel *)self)->linear, x);
}

static const clt_module_type my_model_type = {.name = "MyModel",
                                              .size = sizeof(MyModel),
                                              .forward = my_model_forward};

static MyModel *my_model_new(void)
{
    MyModel *m = (MyModel *)clt_module_new(&my_model_type);
    clt_module *linear = clt_nn_linear(10, 5, true); /* self.linear = nn.Linear(10, 5) */
    CHECK(m && linear);
    CHECK(clt_module_register_module(&m->base, "linear", linear) == CLT_OK);
    m->linear = linear;
    clt_module_release(linear); /* the model holds it */
    return m;
}

/* next(model.parameters()).device */
static const char *first_parameter_device(const clt_module *m)
{
    return clt_device_name(clt_module_device(m));
}

int main(int argc, char **argv)
{
    clt_manual_seed(0);
    MyModel *model = my_model_new();

    /* a device named on the command line ("gpu:0"), else the default one */
    clt_device *device = argc > 1 ? clt_device_get(argv[1]) : clt_device_default();
    CHECK(device);
    printf("Using device: %s\n", clt_device_name(device));

    printf("\n**In-place modification:**\n");
    clt_module *original_model = &model->base;
    CHECK(clt_module_to(&model->base, device) == CLT_OK);
    printf("Model device after in-place move: %s\n", first_parameter_device(&model->base));
    printf("Original model (reference) after in-place move: %s\n",
           &model->base == original_model ? "true" : "false");

    printf("\n**Copy creation:**\n");
    /* copied_model = model.to(device): the same module again, in PyTorch too */
    CHECK(clt_module_to(&model->base, device) == CLT_OK);
    clt_module *copied_model = &model->base;
    printf("model.to(device) again gives the same model: %s\n",
           copied_model == &model->base ? "true" : "false");
    /* a real copy is explicit */
    clt_module *clone = clt_module_clone_to(&model->base, device);
    CHECK(clone);
    printf("Cloned model device: %s\n", first_parameter_device(clone));
    printf("Are original and cloned models the same object: %s\n",
           clone == &model->base ? "true" : "false");

    printf("\n**Explicit device casting:**\n");
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(1, 10), CLT_F32, clt_device_cpu());
    CHECK(x);
    clt_tensor *moved = clt_tensor_to(x, device); /* x = x.to(device) */
    CHECK(moved);
    clt_tensor_release(x);
    x = moved;
    clt_tensor *output = clt_module_forward(&model->base, x); /* output = model(x) */
    CHECK(output);
    printf("output = model(x):\n");
    CHECK(clt_tensor_print(output) == CLT_OK);

    clt_tensor_release(output);
    clt_tensor_release(x);
    clt_module_release(clone);
    clt_module_release(&model->base);
    clt_device_synchronize(device);
    return 0;
}
