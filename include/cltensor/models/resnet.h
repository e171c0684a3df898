/* ResNet (He et al., "Deep Residual Learning for Image Recognition") as torchvision builds it,
 * with its structure and parameter names, so that a torchvision state_dict saved as
 * safetensors loads strictly (clt_module_load): conv1, bn1, layer1 ... layer4 of BasicBlocks
 * (conv1, bn1, conv2, bn2) or Bottlenecks (conv1, bn1, conv2, bn2, conv3, bn3; the stride on
 * the 3 x 3 convolution, ResNet v1.5), each stage's first block with downsample.0 (1 x 1
 * convolution) and downsample.1 (BatchNorm) where the shape changes, then fc. torchvision's
 * groups and width_per_group give ResNeXt and the wide ResNets, replace_stride_with_dilation
 * dilated stages. Built on cpu with PyTorch's default initialisation (torchvision's own
 * differs: load weights to use one). Its forward (clt_module_forward) maps f32 images
 * (N, 3, H, W) to logits (N, num_classes). */
#ifndef CLTENSOR_MODELS_RESNET_H
#define CLTENSOR_MODELS_RESNET_H

#include <stdbool.h>

#include "cltensor.h"
#include "cltensor/models/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clt_resnet_block {
    CLT_RESNET_BASIC_BLOCK, /* two 3 x 3 convolutions, expansion 1: ResNet-18 and 34 */
    CLT_RESNET_BOTTLENECK   /* 1 x 1, 3 x 3, 1 x 1, expansion 4: ResNet-50, 101 and 152 */
} clt_resnet_block;

/* torchvision.models.ResNet's arguments. Start from clt_resnet_config_default(); a 0 left in
 * planes, groups or width_per_group means its default. */
typedef struct clt_resnet_config {
    clt_resnet_block block;     /* CLT_RESNET_BASIC_BLOCK */
    int layers[4];              /* blocks per stage, 1 to 64 each: {2, 2, 2, 2} */
    int num_classes;            /* 1000 */
    int groups;                 /* 1: the 3 x 3 convolutions' groups (32 in ResNeXt-50 32x4d) */
    int width_per_group;        /* 64: a Bottleneck's width per group (4 in ResNeXt-50 32x4d,
                                 * 128 in Wide ResNet-50-2) */
    bool replace_stride_with_dilation[3]; /* false: layer2-4 dilate instead of striding */
    int planes;                 /* 64: the stem's channels and layer1's planes, doubled by each
                                 * next stage (torchvision's are always 64) */
} clt_resnet_config;

/* ResNet-18's config with 1000 classes: torchvision's defaults. */
CLT_MODELS_API clt_resnet_config clt_resnet_config_default(void);

/* A new ResNet; NULL with the library's last error set (CLT_ERR_INVALID_ARGUMENT naming
 * clt_resnet_new and the value) for a NULL config, a stage of fewer than 1 or more than 64
 * blocks, a count that is not positive, and what torchvision refuses: a BasicBlock with groups
 * other than 1, width_per_group other than 64 or a dilated stage. */
CLT_MODELS_API clt_module *clt_resnet_new(const clt_resnet_config *config);
/* torchvision.models.resnet18 / 34 / 50 / 101 / 152(num_classes=...), random weights. */
CLT_MODELS_API clt_module *clt_resnet18(int num_classes);
CLT_MODELS_API clt_module *clt_resnet34(int num_classes);
CLT_MODELS_API clt_module *clt_resnet50(int num_classes);
CLT_MODELS_API clt_module *clt_resnet101(int num_classes);
CLT_MODELS_API clt_module *clt_resnet152(int num_classes);

#ifdef __cplusplus
}
#endif

#endif
