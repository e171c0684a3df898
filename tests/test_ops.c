#include "helpers.h"

Suite *suite_ops(void)
{
    Suite *s = suite_create("ops");
    return s;
}
