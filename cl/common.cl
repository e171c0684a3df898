/* The prelude of every OpenCL program: fixed-width type names, bit casts and the switches that
 * make device arithmetic match the host's (no contraction into fma). Options set CLT_HAS_FP64. */
#pragma OPENCL FP_CONTRACT OFF
#if CLT_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef uchar clt_u8;
typedef ushort clt_u16;
typedef uint clt_u32;
typedef ulong clt_u64;
typedef int clt_i32;
typedef long clt_i64;

#define CLT_FN static inline
/* A function the compiler must inline: PoCL kept the pooling kernels' per-output function a call
 * of 17 arguments, and inlined it pooled 8 x 8 images faster (docs/performance.md, Convolution
 * and pooling). */
#define CLT_INLINE static inline __attribute__((always_inline))
#define CLT_U64C(x) x##UL
#define CLT_I64C(x) x##L
#define clt_f32_bits(f) as_uint(f)
#define clt_bits_f32(u) as_float(u)
#define clt_bits_i32(u) as_int(u)
#define clt_bits_i64(u) as_long(u)
#define clt_mulhi32(a, b) mul_hi((uint)(a), (uint)(b))
#if CLT_HAS_FP64
#define clt_f64_bits(d) as_ulong(d)
#define clt_bits_f64(u) as_double(u)
#endif

/* Loops over n contiguous elements, running BODY with `i` the element's index, over all
 * work-items of the launch (any number, in work-groups of any size). With `blocked` (CPU
 * devices, which run a work-group's work-items one after another) each work-item takes one
 * contiguous run of the elements, a multiple of 16 long: one stream per work-item, which the
 * compiler vectorises. Otherwise work-item g takes elements g, g + the global size, ...:
 * neighbouring work-items touch neighbouring memory (coalesced on GPUs). */
/* The blocked layout's run of work-item g of gs among n elements: [*b, *e). A kernel reads
 * get_global_id(0) and get_global_size(0) once, before any branch, and passes them: Rusticl 22
 * computes the global id from an argument of its own (the global offset), and reading that
 * inside control flow makes it print a warning on stderr. */
CLT_FN void clt_run_span(ulong n, ulong g, ulong gs, ulong *b, ulong *e)
{
    ulong per = ((n + gs - 1) / gs + 15) & ~(ulong)15;
    *b = min(g * per, n);
    *e = min(*b + per, n);
}

#define CLT_RUN(n, blocked, BODY)                                                              \
    CLT_RUN_AT(get_global_id(0), get_global_size(0), n, blocked, BODY)

/* CLT_RUN for work-item g of gs, read before any branch (see clt_run_span). */
#define CLT_RUN_AT(g, gs, n, blocked, BODY)                                                    \
    do {                                                                                       \
        ulong n_ = (n), g_ = (g), gs_ = (gs);                                                  \
        if (blocked) {                                                                         \
            ulong b_, e_;                                                                      \
            clt_run_span(n_, g_, gs_, &b_, &e_);                                               \
            for (ulong i = b_; i < e_; i++) {                                                  \
                BODY;                                                                          \
            }                                                                                  \
        } else {                                                                               \
            for (ulong i = g_; i < n_; i += gs_) {                                             \
                BODY;                                                                          \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* The kernels over up to 8 tensors (optim_step, ew_copy_runs) take tensor 0's arguments, then
 * switch to tensor j's with TAKE(j) for j of 1 to 7. */
#define CLT_TAKE_ONE_OF_8(j, TAKE)                                                             \
    switch (j) {                                                                               \
        TAKE(1);                                                                               \
        TAKE(2);                                                                               \
        TAKE(3);                                                                               \
        TAKE(4);                                                                               \
        TAKE(5);                                                                               \
        TAKE(6);                                                                               \
        TAKE(7);                                                                               \
    default:                                                                                   \
        break;                                                                                 \
    }

/* Kernel selection: a program built with -DCLT_ONLY -DCLT_PICK_<name>=1 holds kernel <name>
 * alone, so that a driver compiles only what runs; without CLT_ONLY it holds every kernel of its
 * file. A kernel's definition sits under `#if CLT_WANTED(name)`, or, inside a macro, in
 * CLT_WHEN(name)(definition). */
#define CLT_PROBE_1 ~, 1
#define CLT_SECOND_(a, b, ...) b
#define CLT_SECOND(...) CLT_SECOND_(__VA_ARGS__)
#define CLT_PASTE_(a, b) a##b
#define CLT_PASTE(a, b) CLT_PASTE_(a, b)
/* (name is pasted before anything expands it: a part may share its name with a macro of the
 * driver's headers) */
#ifdef CLT_ONLY
#define CLT_PICKED(pick) CLT_SECOND(CLT_PASTE(CLT_PROBE_, pick), 0, ~)
#else
#define CLT_PICKED(pick) 1
#endif
#define CLT_WANTED(name) CLT_PICKED(CLT_PICK_##name)
#define CLT_WHEN_0(...)
#define CLT_WHEN_1(...) __VA_ARGS__
#define CLT_WHEN_PICKED(pick) CLT_PASTE(CLT_WHEN_, CLT_PICKED(pick))
#define CLT_WHEN(name) CLT_WHEN_PICKED(CLT_PICK_##name)
