#include "helpers.h"

Suite *suite_reduce(void)
{
    Suite *s = suite_create("reduce");
    return s;
}
