/* Matrix products: see lib/ops/linalg.c. */
