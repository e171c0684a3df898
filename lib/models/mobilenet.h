/* MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks") with
 * torchvision's structure and parameter names, so that a torchvision state_dict saved as
 * safetensors loads strictly: features.0 (conv, bn, ReLU6), features.1 ... features.17 of
 * InvertedResiduals (features.2.conv.1.0.weight is a depthwise convolution), features.18,
 * classifier.1. Built on cpu with PyTorch's default initialisation (torchvision's own differs:
 * load weights to use one). */
#ifndef CLT_SAMPLES_MOBILENET_H
#define CLT_SAMPLES_MOBILENET_H

#include <cltensor.h>

typedef struct mobilenet_config {
    double width_mult; /* 1.0; every width rounded to a multiple of 8 as torchvision does */
    int num_classes;   /* 1000 */
    double dropout;    /* before the classifier: 0.2 */
    /* torchvision's inverted_residual_setting: per stage the expansion t, channels c, blocks n
     * and first stride s; NULL for MobileNetV2's 7 stages */
    const int (*setting)[4];
    int stages;
} mobilenet_config;

/* A new MobileNetV2; NULL with the library's last error set, also for a width_mult that is not
 * positive and finite or makes more channels than an int holds, and for a stage whose t, c or s
 * is below 1 or whose n is negative or brings the blocks of all stages past 64. */
clt_module *mobilenet_v2_new(const mobilenet_config *config);
/* torchvision.models.mobilenet_v2(num_classes=...). */
clt_module *mobilenet_v2_default_new(int num_classes);

#endif
