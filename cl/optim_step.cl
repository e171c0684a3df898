/* One optimizer update of one element, shared by the OpenCL kernel (cl/optim.cl) and the host
 * backend (lib/backends/host/host_optim.c), so that both compute the same expressions in the same order.
 * p, g, m, v are variables of the compute type (the parameter, its gradient, and the first and
 * second state values), updated in place; the other arguments are of the compute type too,
 * except kind (0 SGD, 1 Adam, 2 AdamW), nesterov and first (the first step of SGD's momentum).
 * sqrt comes from the including file. This file holds only a macro, so any C file may include
 * it. */

#define CLT_OPTIM_STEP(kind, p, g, m, v, lr, momentum, dampening, weight_decay, nesterov, first, \
                       beta1, beta2, eps, bias1, bias2)                                          \
    do {                                                                                         \
        if ((kind) == 2)                                                                         \
            p = p * (1 - (lr) * (weight_decay));                                                 \
        else if ((weight_decay) != 0)                                                            \
            g = g + (weight_decay) * p;                                                          \
        if ((kind) == 0) {                                                                       \
            if ((momentum) != 0) {                                                               \
                m = (first) ? g : (momentum) * m + (1 - (dampening)) * g;                        \
                g = (nesterov) ? g + (momentum) * m : m;                                         \
            }                                                                                    \
            p = p - (lr) * g;                                                                    \
        } else {                                                                                 \
            m = (beta1) * m + (1 - (beta1)) * g;                                                 \
            v = (beta2) * v + (1 - (beta2)) * g * g;                                             \
            p = p - ((lr) / (bias1)) * m / (sqrt(v) / sqrt(bias2) + (eps));                      \
        }                                                                                        \
    } while (0)
