/* A program that uses an installed cltensor_models: ResNet-18 with random weights
 * (torchvision.models.resnet18()) classifies a (1, 3, 224, 224) image on cpu into (1, 1000)
 * logits, and a config the library does not implement is refused with a message. */
#include <stdio.h>
#include <string.h>

#include <cltensor/models.h>

int main(void)
{
    clt_manual_seed(0);
    clt_module *model = clt_resnet18(1000);
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(1, 3, 224, 224), CLT_F32, clt_device_cpu());
    clt_tensor *logits = NULL;
    if (!model || !x) {
        fprintf(stderr, "models_consumer: %s\n", clt_last_error());
        return 1;
    }
    clt_module_train(model, false);
    CLT_NO_GRAD {
        logits = clt_module_forward(model, x);
    }
    if (!logits || clt_tensor_ndim(logits) != 2 || clt_tensor_size(logits, 0) != 1 ||
        clt_tensor_size(logits, 1) != 1000) {
        fprintf(stderr, "models_consumer: ResNet-18's logits: %s\n",
                logits ? "not (1, 1000)" : clt_last_error());
        return 1;
    }
    clt_resnet_config c = clt_resnet_config_default();
    c.groups = 2;
    if (clt_resnet_new(&c) != NULL || strstr(clt_last_error(), "BasicBlock") == NULL) {
        fprintf(stderr, "models_consumer: no error for a grouped BasicBlock (\"%s\")\n",
                clt_last_error());
        return 1;
    }
    printf("models_consumer: ResNet-18 on cpu, logits (1, 1000), %lld parameters\n",
           (long long)clt_module_parameter_count(model));
    clt_tensor_release(logits);
    clt_tensor_release(x);
    clt_module_release(model);
    return 0;
}
