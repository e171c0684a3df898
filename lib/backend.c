/* What the backends share about the elementwise operations: names, inputs and result kinds,
 * from the table in cl/elementwise_ops.cl. */
#include "backend.h"

#define CLT__EW_INFO(name, inputs, fe, ie, res) {#name, inputs, #res[0] == 'B'},
static const struct {
    const char *name;
    int inputs;
    bool gives_bool;
} ew_info[CLT_EW_COUNT] = {CLT_EW_OPS(CLT__EW_INFO){"copy", 1, false}, {"where", 3, false}};

const char *clt__ew_name(clt__ew_op op)
{
    return ew_info[op].name;
}

int clt__ew_inputs(clt__ew_op op)
{
    return ew_info[op].inputs;
}

bool clt__ew_gives_bool(clt__ew_op op)
{
    return ew_info[op].gives_bool;
}
