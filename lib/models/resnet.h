/* ResNet (He et al., "Deep Residual Learning for Image Recognition") with torchvision's
 * structure and parameter names, so that a torchvision state_dict saved as safetensors loads
 * strictly: conv1, bn1, layer1 ... layer4 of BasicBlocks (layer2.0.downsample.0.weight ...),
 * fc. Built on cpu with PyTorch's default initialisation (torchvision's own differs: load
 * weights to use one). */
#ifndef CLT_SAMPLES_RESNET_H
#define CLT_SAMPLES_RESNET_H

#include <cltensor.h>

typedef struct resnet_config {
    int blocks[4];   /* BasicBlocks per stage: {2, 2, 2, 2} is ResNet-18, {3, 4, 6, 3} ResNet-34 */
    int width;       /* channels of the first stage, doubled by each next one: 64 */
    int num_classes; /* 1000 */
} resnet_config;

/* A new ResNet; NULL with the library's last error set, also for a stage of fewer than 1 or
 * more than 16 blocks. */
clt_module *resnet_new(const resnet_config *config);
/* torchvision.models.resnet18(num_classes=...) / resnet34(...). */
clt_module *resnet18_new(int num_classes);
clt_module *resnet34_new(int num_classes);

#endif
