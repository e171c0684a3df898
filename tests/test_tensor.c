#include "helpers.h"

Suite *suite_tensor(void)
{
    Suite *s = suite_create("tensor");
    return s;
}
