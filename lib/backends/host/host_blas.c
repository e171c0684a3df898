/* The library's own GEMM (host_blas.h), blocked as in GotoBLAS and BLIS, with the roles of the
 * operands those describe for column-major C exchanged, since C here is row-major: a block of
 * A's rows (mc x kc) is packed into panels of mr rows, a block of B's columns (kc x nc) into
 * panels of nr columns, and a micro-kernel multiplies one panel of each into an mr x nr tile of
 * C held in registers, each of B's rows a few vectors, each of A's elements broadcast. A panel
 * of A stays in the first-level cache while the panels of B's block, sized for the second
 * level, stream past it. The kernels come in one width per instruction set, chosen once at run
 * time; products with one row or one column are dot products or row updates instead. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host_blas.h"
#include "host_simd.h"
#include "core/core.h"

#if CLT__VEC_EXT && (defined(__x86_64__) || defined(__i386__))
#define BLAS_X86 1
#include <immintrin.h>
#else
#define BLAS_X86 0
#endif

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define TARGET(isa) __attribute__((target(isa)))
#else
#define ALWAYS_INLINE inline
#endif

#define ALIGN 64 /* bytes: the packed panels' and tiles' alignment */
/* The packed blocks of a small product live on the stack, in this many bytes. */
#define STACK_BYTES 16384

/* The tile of C a kernel call ends in: rows x cols (at most mr x nr) at c, rows ldc elements
 * apart, set to alpha times the product plus beta times what it held (not read for beta 0). */
typedef struct tile_out {
    void *c;
    size_t ldc, rows, cols;
    double alpha, beta;
} tile_out;

/* C's tile (out) from a panel of A (k x mr, A's column p at a + p * mr) and one of B (k x nr,
 * B's row p at b + p * nr), both aligned to ALIGN. */
typedef void (*kernel_fn)(size_t k, const void *a, const void *b, const tile_out *out);

/* A kernel and the blocks it is fed, in elements. */
typedef struct gemm_shape {
    kernel_fn kernel;
    size_t mr, nr; /* the tile: rows of A's panels, columns of B's */
    size_t kc;     /* the depth of a block */
    size_t mc;     /* rows of A packed together (a multiple of mr) */
    size_t nc;     /* columns of B packed together (a multiple of nr) */
} gemm_shape;

typedef struct isa_kernels {
    gemm_shape f32, f64;
} isa_kernels;

/* ---- merging a tile into C ------------------------------------------------------------------ */

/* out = alpha t + beta out, t the kernel's whole tile with rows nr apart. Inlined into each
 * kernel, so that its loops take that kernel's instruction set. */
static ALWAYS_INLINE void merge_f32(const float *restrict t, size_t nr, const tile_out *out)
{
    const float alpha = (float)out->alpha, beta = (float)out->beta;
    for (size_t i = 0; i < out->rows; i++) {
        float *restrict c = (float *)out->c + i * out->ldc;
        const float *restrict r = t + i * nr;
        if (beta == 0)
            for (size_t j = 0; j < out->cols; j++)
                c[j] = alpha * r[j];
        else
            for (size_t j = 0; j < out->cols; j++)
                c[j] = alpha * r[j] + beta * c[j];
    }
}

static ALWAYS_INLINE void merge_f64(const double *restrict t, size_t nr, const tile_out *out)
{
    const double alpha = out->alpha, beta = out->beta;
    for (size_t i = 0; i < out->rows; i++) {
        double *restrict c = (double *)out->c + i * out->ldc;
        const double *restrict r = t + i * nr;
        if (beta == 0)
            for (size_t j = 0; j < out->cols; j++)
                c[j] = alpha * r[j];
        else
            for (size_t j = 0; j < out->cols; j++)
                c[j] = alpha * r[j] + beta * c[j];
    }
}

/* ---- kernels -------------------------------------------------------------------------------- */

#if BLAS_X86
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

/* AVX-512: 12 x 32 floats (12 x 16 doubles) in 24 of the 32 registers. */
static TARGET("avx512f") void kernel_f32_avx512(size_t k, const void *pa, const void *pb,
                                                const tile_out *out)
{
    const float *a = pa;
    const v16f *b = pb;
    v16f acc[12][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 12, b += 2) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            const v16f ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b[0], acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b[1], acc[i][1]);
        }
    }
    _Alignas(ALIGN) float t[12 * 32];
    memcpy(t, acc, sizeof t);
    merge_f32(t, 32, out);
}

static TARGET("avx512f") void kernel_f64_avx512(size_t k, const void *pa, const void *pb,
                                                const tile_out *out)
{
    const double *a = pa;
    const v8d *b = pb;
    v8d acc[12][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 12, b += 2) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            const v8d ai = _mm512_set1_pd(a[i]);
            acc[i][0] = _mm512_fmadd_pd(ai, b[0], acc[i][0]);
            acc[i][1] = _mm512_fmadd_pd(ai, b[1], acc[i][1]);
        }
    }
    _Alignas(ALIGN) double t[12 * 16];
    memcpy(t, acc, sizeof t);
    merge_f64(t, 16, out);
}

/* AVX2 with FMA: 6 x 16 floats (6 x 8 doubles) in 12 of the 16 registers. */
static TARGET("avx2,fma") void kernel_f32_avx2(size_t k, const void *pa, const void *pb,
                                               const tile_out *out)
{
    const float *a = pa;
    const v8f *b = pb;
    v8f acc[6][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 6, b += 2) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const v8f ai = _mm256_set1_ps(a[i]);
            acc[i][0] = _mm256_fmadd_ps(ai, b[0], acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b[1], acc[i][1]);
        }
    }
    _Alignas(ALIGN) float t[6 * 16];
    memcpy(t, acc, sizeof t);
    merge_f32(t, 16, out);
}

static TARGET("avx2,fma") void kernel_f64_avx2(size_t k, const void *pa, const void *pb,
                                               const tile_out *out)
{
    const double *a = pa;
    const v4d *b = pb;
    v4d acc[6][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 6, b += 2) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const v4d ai = _mm256_set1_pd(a[i]);
            acc[i][0] = _mm256_fmadd_pd(ai, b[0], acc[i][0]);
            acc[i][1] = _mm256_fmadd_pd(ai, b[1], acc[i][1]);
        }
    }
    _Alignas(ALIGN) double t[6 * 8];
    memcpy(t, acc, sizeof t);
    merge_f64(t, 8, out);
}
#endif

#if CLT__VEC_EXT
typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));

/* The baseline: 6 x 8 floats (6 x 4 doubles) in 12 vectors of 16 bytes, multiplied and added
 * apart (no fused multiply-add in the baseline instruction set). */
static void kernel_f32_base(size_t k, const void *pa, const void *pb, const tile_out *out)
{
    const float *a = pa;
    const v4f *b = pb;
    v4f acc[6][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 6, b += 2) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const v4f ai = {a[i], a[i], a[i], a[i]};
            acc[i][0] += ai * b[0];
            acc[i][1] += ai * b[1];
        }
    }
    _Alignas(ALIGN) float t[6 * 8];
    memcpy(t, acc, sizeof t);
    merge_f32(t, 8, out);
}

static void kernel_f64_base(size_t k, const void *pa, const void *pb, const tile_out *out)
{
    const double *a = pa;
    const v2d *b = pb;
    v2d acc[6][2] = {{{0}}};
    for (size_t p = 0; p < k; p++, a += 6, b += 2) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const v2d ai = {a[i], a[i]};
            acc[i][0] += ai * b[0];
            acc[i][1] += ai * b[1];
        }
    }
    _Alignas(ALIGN) double t[6 * 4];
    memcpy(t, acc, sizeof t);
    merge_f64(t, 4, out);
}
#define BASE_MR 6
#define BASE_NR_F32 8
#define BASE_NR_F64 4
#else
/* The baseline without vector extensions: 4 x 4 elements in scalars. */
static void kernel_f32_base(size_t k, const void *pa, const void *pb, const tile_out *out)
{
    const float *a = pa, *b = pb;
    float t[4 * 4] = {0};
    for (size_t p = 0; p < k; p++, a += 4, b += 4)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                t[i * 4 + j] += a[i] * b[j];
    merge_f32(t, 4, out);
}

static void kernel_f64_base(size_t k, const void *pa, const void *pb, const tile_out *out)
{
    const double *a = pa, *b = pb;
    double t[4 * 4] = {0};
    for (size_t p = 0; p < k; p++, a += 4, b += 4)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                t[i * 4 + j] += a[i] * b[j];
    merge_f64(t, 4, out);
}
#define BASE_MR 4
#define BASE_NR_F32 4
#define BASE_NR_F64 4
#endif

/* Per instruction set, by clt__blas_isa. The blocks: a panel of A (mr x kc) takes a part of a
 * 32 KiB first-level cache, a block of B (kc x nc) about half of a second-level one (256 KiB
 * for AVX2 and the baseline, 1 MiB for AVX-512), a block of A (mc x kc) a part of the last
 * level. */
static const isa_kernels isa_table[] = {
    {.f32 = {kernel_f32_base, BASE_MR, BASE_NR_F32, 256, 1536, 128},
     .f64 = {kernel_f64_base, BASE_MR, BASE_NR_F64, 256, 768, 64}},
#if BLAS_X86
    {.f32 = {kernel_f32_avx2, 6, 16, 256, 1536, 192},
     .f64 = {kernel_f64_avx2, 6, 8, 256, 768, 96}},
    {.f32 = {kernel_f32_avx512, 12, 32, 384, 3072, 480},
     .f64 = {kernel_f64_avx512, 12, 16, 256, 1536, 240}},
#endif
};

/* ---- the choice of kernels ------------------------------------------------------------------ */

static const isa_kernels *_Atomic chosen;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

/* The most capable kernels this processor (and this build) runs. */
static clt__blas_isa best_isa(void)
{
#if BLAS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return CLT__BLAS_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return CLT__BLAS_AVX2;
#endif
    return CLT__BLAS_BASELINE;
}

const char *clt__blas_isa_name(clt__blas_isa isa)
{
    static const char *const names[] = {"baseline", "avx2", "avx512"};
    return (unsigned)isa < sizeof names / sizeof *names ? names[isa] : "unknown";
}

/* The best kernels, or lesser ones that CLT_HOST_GEMM_ISA names; any other value is ignored
 * with a warning. */
static void choose(void)
{
    clt__blas_isa best = best_isa(), isa = best;
    const char *want = getenv("CLT_HOST_GEMM_ISA");
    int named = -1;
    for (int i = 0; want && i <= (int)CLT__BLAS_AVX512; i++)
        if (strcmp(want, clt__blas_isa_name((clt__blas_isa)i)) == 0)
            named = i;
    if (named >= 0 && named <= (int)best)
        isa = (clt__blas_isa)named;
    else if (named >= 0)
        clt__log(CLT_LOG_WARN, "CLT_HOST_GEMM_ISA=%s: the processor lacks it, %s used", want,
                 clt__blas_isa_name(best));
    else if (want && *want)
        clt__log(CLT_LOG_WARN,
                 "CLT_HOST_GEMM_ISA=\"%s\" is none of avx512, avx2 and baseline: ignored", want);
    atomic_store(&chosen, &isa_table[isa]);
}

static const isa_kernels *kernels(void)
{
    pthread_once(&choose_once, choose);
    return atomic_load(&chosen);
}

clt__blas_isa clt__blas_isa_get(void)
{
    return (clt__blas_isa)(kernels() - isa_table);
}

bool clt__blas_isa_set(clt__blas_isa isa)
{
    kernels(); /* the first choice made, so that it does not replace this one */
    if ((unsigned)isa > (unsigned)best_isa())
        return false;
    atomic_store(&chosen, &isa_table[isa]);
    return true;
}

/* ---- packing -------------------------------------------------------------------------------- */

/* One product, its elements es bytes (4 or 8) and its sizes in elements. */
typedef struct gemm_args {
    bool trans_a, trans_b;
    size_t m, n, k, es;
    const char *a, *b;
    char *c;
    size_t lda, ldb, ldc;
    double alpha, beta;
} gemm_args;

static size_t min_size(size_t x, size_t y)
{
    return x < y ? x : y;
}

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* Rows [i0, i0 + rows) of op(A) at depths [p0, p0 + depth) into panels of mr rows at dst, each
 * depth x mr, the rows past the last zeros. Inlined with es a constant, so that copying one
 * element is one move. */
static ALWAYS_INLINE void pack_a_es(size_t es, const gemm_args *g, size_t i0, size_t rows,
                                    size_t p0, size_t depth, size_t mr, char *restrict dst)
{
    for (size_t ir = 0; ir < rows; ir += mr, dst += mr * depth * es) {
        size_t n = min_size(mr, rows - ir);
        if (g->trans_a) /* A stored k x m: a panel's column p is a piece of a row */
            for (size_t p = 0; p < depth; p++)
                memcpy(dst + p * mr * es, g->a + ((p0 + p) * g->lda + i0 + ir) * es, n * es);
        else /* a panel's row r is A's row, its elements mr apart there */
            for (size_t r = 0; r < n; r++) {
                const char *src = g->a + ((i0 + ir + r) * g->lda + p0) * es;
                for (size_t p = 0; p < depth; p++)
                    memcpy(dst + (p * mr + r) * es, src + p * es, es);
            }
        for (size_t p = 0; p < depth && n < mr; p++)
            memset(dst + (p * mr + n) * es, 0, (mr - n) * es);
    }
}

/* Columns [j0, j0 + cols) of op(B) at depths [p0, p0 + depth) into panels of nr columns at
 * dst, each depth x nr, the columns past the last zeros. */
static ALWAYS_INLINE void pack_b_es(size_t es, const gemm_args *g, size_t j0, size_t cols,
                                    size_t p0, size_t depth, size_t nr, char *restrict dst)
{
    for (size_t jr = 0; jr < cols; jr += nr) {
        size_t n = min_size(nr, cols - jr);
        for (size_t p = 0; p < depth; p++, dst += nr * es) {
            if (!g->trans_b)
                memcpy(dst, g->b + ((p0 + p) * g->ldb + j0 + jr) * es, n * es);
            else
                for (size_t j = 0; j < n; j++)
                    memcpy(dst + j * es, g->b + ((j0 + jr + j) * g->ldb + p0 + p) * es, es);
            if (n < nr)
                memset(dst + n * es, 0, (nr - n) * es);
        }
    }
}

static void pack_a(const gemm_args *g, size_t i0, size_t rows, size_t p0, size_t depth,
                   size_t mr, char *dst)
{
    if (g->es == 4)
        pack_a_es(4, g, i0, rows, p0, depth, mr, dst);
    else
        pack_a_es(8, g, i0, rows, p0, depth, mr, dst);
}

static void pack_b(const gemm_args *g, size_t j0, size_t cols, size_t p0, size_t depth,
                   size_t nr, char *dst)
{
    if (g->es == 4)
        pack_b_es(4, g, j0, cols, p0, depth, nr, dst);
    else
        pack_b_es(8, g, j0, cols, p0, depth, nr, dst);
}

/* ---- the blocked product -------------------------------------------------------------------- */

/* The packed blocks of one product: a block of A and one of B, kc deep. */
typedef struct blocks {
    size_t kc, mc, nc;
    char *a, *b;
} blocks;

/* Every tile of C's block at rows i0.., columns j0.. from the packed blocks a (rows x depth)
 * and b (depth x cols). */
static void multiply_blocks(const gemm_args *g, const gemm_shape *s, const blocks *w, size_t i0,
                            size_t rows, size_t j0, size_t cols, size_t depth, double beta)
{
    for (size_t ir = 0; ir < rows; ir += s->mr) {
        const char *pa = w->a + ir * depth * g->es;
        for (size_t jr = 0; jr < cols; jr += s->nr) {
            tile_out out = {.c = g->c + ((i0 + ir) * g->ldc + j0 + jr) * g->es,
                            .ldc = g->ldc,
                            .rows = min_size(s->mr, rows - ir),
                            .cols = min_size(s->nr, cols - jr),
                            .alpha = g->alpha,
                            .beta = beta};
            s->kernel(depth, pa, w->b + jr * depth * g->es, &out);
        }
    }
}

static void blocked(const gemm_args *g, const gemm_shape *s, const blocks *w)
{
    for (size_t i0 = 0; i0 < g->m; i0 += w->mc) {
        size_t rows = min_size(w->mc, g->m - i0);
        for (size_t p0 = 0; p0 < g->k; p0 += w->kc) {
            size_t depth = min_size(w->kc, g->k - p0);
            pack_a(g, i0, rows, p0, depth, s->mr, w->a);
            for (size_t j0 = 0; j0 < g->n; j0 += w->nc) {
                size_t cols = min_size(w->nc, g->n - j0);
                pack_b(g, j0, cols, p0, depth, s->nr, w->b);
                multiply_blocks(g, s, w, i0, rows, j0, cols, depth, p0 == 0 ? g->beta : 1);
            }
        }
    }
}

/* The size of each of the fewest equal blocks, a multiple of unit, of at most `most` (itself a
 * multiple of unit) that cover `total`. */
static size_t even_blocks(size_t total, size_t most, size_t unit)
{
    size_t blocks = (total + most - 1) / most;
    return round_up((total + blocks - 1) / blocks, unit);
}

/* Blocks of at most kc x mc of A and kc x nc of B for g (mc and nc multiples of the tile's),
 * split evenly. Sets the bytes of the packed blocks of A (*a_bytes) and of B. */
static blocks size_blocks(const gemm_args *g, const gemm_shape *s, size_t kc, size_t mc,
                          size_t nc, size_t *a_bytes, size_t *b_bytes)
{
    blocks w = {.kc = even_blocks(g->k, kc, 1),
                .mc = even_blocks(g->m, mc, s->mr),
                .nc = even_blocks(g->n, nc, s->nr)};
    *a_bytes = round_up(w.mc * w.kc * g->es, ALIGN);
    *b_bytes = round_up(w.kc * w.nc * g->es, ALIGN);
    return w;
}

/* The blocked product, its packed blocks on the stack where they fit, else on the heap, or,
 * where the heap has none to give, one tile's panels on the stack (the last error then tells
 * of that allocation). */
static void gemm_packed(const gemm_args *g, const gemm_shape *s)
{
    _Alignas(ALIGN) char stack[STACK_BYTES];
    size_t a_bytes, b_bytes;
    blocks w = size_blocks(g, s, s->kc, s->mc, s->nc, &a_bytes, &b_bytes);
    char *heap = NULL;
    if (a_bytes + b_bytes > sizeof stack) {
        clt__fault_suspend(true); /* not a failure of the product: it has the stack */
        heap = clt__alloc_aligned("clt__blas_gemm", a_bytes + b_bytes, ALIGN);
        clt__fault_suspend(false);
    }
    if (a_bytes + b_bytes > sizeof stack && !heap) {
        size_t depth = (sizeof stack - 2 * ALIGN) / g->es / (s->mr + s->nr);
        w = size_blocks(g, s, depth, s->mr, s->nr, &a_bytes, &b_bytes);
    }
    w.a = heap ? heap : stack;
    w.b = w.a + a_bytes;
    blocked(g, s, &w);
    clt__free(heap);
}

/* ---- products with one row or one column ---------------------------------------------------- */

/* A product with m 1 or n 1 as `len` dot products (dot) of a matrix's rows with a vector, or
 * as C's one row (column) updated by `depth` of a matrix's rows in turn: the matrix at mat with
 * rows ld apart, the vector's elements inc apart, C's out_inc apart; offsets in elements. */
typedef struct gemv_form {
    bool dot;
    const char *mat, *vec;
    size_t ld, inc, out_inc, len;
} gemv_form;

static gemv_form as_gemv(const gemm_args *g)
{
    if (g->n == 1 && !g->trans_a) /* C's column: A's rows with op(B)'s column */
        return (gemv_form){true, g->a, g->b, g->lda, g->trans_b ? 1 : g->ldb, g->ldc, g->m};
    if (g->m == 1 && g->trans_b) /* C's row: B's rows (op(B)'s columns) with op(A)'s row */
        return (gemv_form){true, g->b, g->a, g->ldb, g->trans_a ? g->lda : 1, 1, g->n};
    if (g->m == 1) /* C's row += op(A)'s element p times B's row p */
        return (gemv_form){false, g->b, g->a, g->ldb, g->trans_a ? g->lda : 1, 1, g->n};
    /* C's column += op(B)'s element p times A's row p (A stored k x m) */
    return (gemv_form){false, g->a, g->b, g->lda, g->trans_b ? 1 : g->ldb, g->ldc, g->m};
}

static float dot_f32(const float *x, const float *y, size_t inc, size_t k)
{
    float s = 0;
    size_t p = 0;
#if CLT__VEC_EXT
    if (inc == 1) {
        v4f s0 = {0}, s1 = {0}, x0, x1, y0, y1;
        for (; p + 8 <= k; p += 8) {
            memcpy(&x0, x + p, sizeof x0), memcpy(&x1, x + p + 4, sizeof x1);
            memcpy(&y0, y + p, sizeof y0), memcpy(&y1, y + p + 4, sizeof y1);
            s0 += x0 * y0, s1 += x1 * y1;
        }
        s0 += s1;
        s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
    }
#endif
    for (; p < k; p++)
        s += x[p] * y[p * inc];
    return s;
}

static double dot_f64(const double *x, const double *y, size_t inc, size_t k)
{
    double s = 0;
    size_t p = 0;
#if CLT__VEC_EXT
    if (inc == 1) {
        v2d s0 = {0}, s1 = {0}, x0, x1, y0, y1;
        for (; p + 4 <= k; p += 4) {
            memcpy(&x0, x + p, sizeof x0), memcpy(&x1, x + p + 2, sizeof x1);
            memcpy(&y0, y + p, sizeof y0), memcpy(&y1, y + p + 2, sizeof y1);
            s0 += x0 * y0, s1 += x1 * y1;
        }
        s0 += s1;
        s = s0[0] + s0[1];
    }
#endif
    for (; p < k; p++)
        s += x[p] * y[p * inc];
    return s;
}

/* C (1 x n or m x 1) per the form f. */
static void gemv_f32(const gemm_args *g, const gemv_form *f)
{
    const float *mat = (const float *)f->mat, *vec = (const float *)f->vec;
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    float *c = (float *)g->c;
    for (size_t i = 0; i < f->len; i++) {
        float *o = c + i * f->out_inc;
        float v = f->dot ? alpha * dot_f32(mat + i * f->ld, vec, f->inc, g->k) : 0;
        *o = beta == 0 ? v : v + beta * *o;
    }
    if (f->dot)
        return;
    for (size_t p = 0; p < g->k; p++) {
        const float s = alpha * vec[p * f->inc], *row = mat + p * f->ld;
        if (f->out_inc == 1)
            for (size_t i = 0; i < f->len; i++)
                c[i] += s * row[i];
        else
            for (size_t i = 0; i < f->len; i++)
                c[i * f->out_inc] += s * row[i];
    }
}

static void gemv_f64(const gemm_args *g, const gemv_form *f)
{
    const double *mat = (const double *)f->mat, *vec = (const double *)f->vec;
    const double alpha = g->alpha, beta = g->beta;
    double *c = (double *)g->c;
    for (size_t i = 0; i < f->len; i++) {
        double *o = c + i * f->out_inc;
        double v = f->dot ? alpha * dot_f64(mat + i * f->ld, vec, f->inc, g->k) : 0;
        *o = beta == 0 ? v : v + beta * *o;
    }
    if (f->dot)
        return;
    for (size_t p = 0; p < g->k; p++) {
        const double s = alpha * vec[p * f->inc], *row = mat + p * f->ld;
        if (f->out_inc == 1)
            for (size_t i = 0; i < f->len; i++)
                c[i] += s * row[i];
        else
            for (size_t i = 0; i < f->len; i++)
                c[i * f->out_inc] += s * row[i];
    }
}

/* ---- the entry points ----------------------------------------------------------------------- */

/* C = beta C: zeros for beta 0, unread. */
static void scale(const gemm_args *g)
{
    for (size_t i = 0; i < g->m; i++) {
        char *row = g->c + i * g->ldc * g->es;
        if (g->beta == 0)
            memset(row, 0, g->n * g->es);
        else if (g->es == 4)
            for (size_t j = 0; j < g->n; j++)
                ((float *)row)[j] *= (float)g->beta;
        else if (g->beta != 1)
            for (size_t j = 0; j < g->n; j++)
                ((double *)row)[j] *= g->beta;
    }
}

static void gemm(const gemm_args *g)
{
    if (g->m == 0 || g->n == 0)
        return;
    if (g->k == 0 || g->alpha == 0) {
        scale(g);
    } else if (g->m == 1 || g->n == 1) {
        gemv_form f = as_gemv(g);
        if (g->es == 4)
            gemv_f32(g, &f);
        else
            gemv_f64(g, &f);
    } else {
        const isa_kernels *ks = kernels();
        gemm_packed(g, g->es == 4 ? &ks->f32 : &ks->f64);
    }
}

void clt__blas_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, const float *b, size_t ldb, float beta,
                     float *c, size_t ldc)
{
    gemm_args g = {trans_a,         trans_b,   m,   n,   k,   sizeof *c, (const char *)a,
                   (const char *)b, (char *)c, lda, ldb, ldc, alpha,     beta};
    gemm(&g);
}

void clt__blas_dgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha,
                     const double *a, size_t lda, const double *b, size_t ldb, double beta,
                     double *c, size_t ldc)
{
    gemm_args g = {trans_a,         trans_b,   m,   n,   k,   sizeof *c, (const char *)a,
                   (const char *)b, (char *)c, lda, ldb, ldc, alpha,     beta};
    gemm(&g);
}
