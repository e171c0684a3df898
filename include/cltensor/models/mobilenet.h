/* MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks") as
 * torchvision builds it, with its structure and parameter names, so that a torchvision
 * state_dict saved as safetensors loads strictly (clt_module_load): features.0 (conv, bn,
 * ReLU6), features.1 ... features.17 of InvertedResiduals (features.2.conv.1.0.weight is a
 * depthwise convolution), features.18, classifier.1. Built on cpu with PyTorch's default
 * initialisation (torchvision's own differs: load weights to use one). Its forward
 * (clt_module_forward) maps f32 images (N, 3, H, W) to logits (N, num_classes). */
#ifndef CLTENSOR_MODELS_MOBILENET_H
#define CLTENSOR_MODELS_MOBILENET_H

#include "cltensor.h"
#include "cltensor/models/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torchvision.models.MobileNetV2's arguments. Start from clt_mobilenet_v2_config_default(). */
typedef struct clt_mobilenet_v2_config {
    double width_mult; /* 1.0; every width rounded to a multiple of 8 as torchvision does */
    int num_classes;   /* 1000 */
    double dropout;    /* before the classifier, 0 to 1: 0.2 */
    /* torchvision's inverted_residual_setting: per stage the expansion t, channels c, blocks n
     * and first stride s (borrowed: it must outlive clt_mobilenet_v2_new's call); NULL for
     * MobileNetV2's 7 stages */
    const int (*setting)[4];
    int stages; /* the rows of setting */
} clt_mobilenet_v2_config;

/* torchvision's defaults: width 1.0, 1000 classes, dropout 0.2, MobileNetV2's stages. */
CLT_MODELS_API clt_mobilenet_v2_config clt_mobilenet_v2_config_default(void);

/* A new MobileNetV2; NULL with the library's last error set (CLT_ERR_INVALID_ARGUMENT naming
 * clt_mobilenet_v2_new and the value), also for a width_mult that is not positive and finite
 * or makes more channels than an int holds, a dropout outside 0 to 1, and a stage whose t, c or
 * s is below 1 or whose n is negative or brings the blocks of all stages past 64. */
CLT_MODELS_API clt_module *clt_mobilenet_v2_new(const clt_mobilenet_v2_config *config);
/* torchvision.models.mobilenet_v2(num_classes=...), random weights. */
CLT_MODELS_API clt_module *clt_mobilenet_v2(int num_classes);

#ifdef __cplusplus
}
#endif

#endif
