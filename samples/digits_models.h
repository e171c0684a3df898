/* The two models of the digits samples (train_digits, infer_digits): an MLP and a small CNN over
 * the 64 pixels of an 8x8 image, as the PyTorch quoted in train_digits.c builds them. */
#ifndef DIGITS_MODELS_H
#define DIGITS_MODELS_H

#include <cltensor.h>

/* nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)). */
clt_module *digits_mlp_new(void);
/* DigitsCNN: x.view(-1, 1, 8, 8), Conv2d(1, 16, 3, padding=1), ReLU, MaxPool2d(2),
 * Conv2d(16, 32, 3, padding=1), ReLU, Flatten, Linear(32 * 4 * 4, 10). */
clt_module *digits_cnn_new(void);
/* "mlp" or "cnn"; NULL (with the library's last error set) for another name or a failure. */
clt_module *digits_model_new(const char *name);

#endif
