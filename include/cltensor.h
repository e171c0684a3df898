/* cltensor: devices, tensors and explicit casting between them on any OpenCL device and the
 * host. Include this header to get the whole public API. */
#ifndef CLTENSOR_H
#define CLTENSOR_H

#include "cltensor/status.h"
#include "cltensor/device.h"
#include "cltensor/tensor.h"
#include "cltensor/ops.h"
#include "cltensor/autograd.h"
#include "cltensor/nn.h"
#include "cltensor/optim.h"
#include "cltensor/data.h"
#include "cltensor/parallel.h"
#include "cltensor/io.h"

#endif
