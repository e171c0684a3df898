/* cltensor_models: the models an application ships, as a library of its own beside cltensor
 * (link cltensor_models; find_package(cltensor COMPONENTS models) gives
 * cltensor::cltensor_models, pkg-config cltensor_models). ResNet and MobileNetV2 as torchvision
 * builds them; GPT-2 and BERT as Hugging Face transformers does, their config.json read and
 * their safetensors files loaded; images read and preprocessed as torchvision does it
 * (models/image.h); GPT-2's byte-level BPE tokenizer (models/tokenizer.h). Include this header for all of it; each model's header says
 * what it builds. The conventions are cltensor's (cltensor.h): new references to release,
 * errors through clt_last_error. */
#ifndef CLTENSOR_MODELS_H
#define CLTENSOR_MODELS_H

#include "cltensor.h"
#include "cltensor/models/export.h"
#include "cltensor/models/activation.h"
#include "cltensor/models/resnet.h"
#include "cltensor/models/mobilenet.h"
#include "cltensor/models/gpt2.h"
#include "cltensor/models/bert.h"
#include "cltensor/models/image.h"
#include "cltensor/models/tokenizer.h"

#endif
