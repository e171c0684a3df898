/* Reductions: see lib/ops/reduce.c. */
