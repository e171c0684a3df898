#include "helpers.h"

Suite *suite_linalg(void)
{
    Suite *s = suite_create("linalg");
    return s;
}
