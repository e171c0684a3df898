/* The OpenCL backend's private state (one context and one in-order queue per device, the
 * programs built for it) and the functions its files share, each group naming the file that
 * defines it; the launches have a header of their own, cl_launch.h. */
#ifndef CLT_CL_INTERNAL_H
#define CLT_CL_INTERNAL_H

#include <pthread.h>

#include "cl_api.h" /* the OpenCL headers, the calls through the loaded library's table */

#include "backends/backend.h"

/* The ways a GEMM can run on an OpenCL device (cl_gemm.c; CLT_GEMM takes these names):
 * CLBlast, or one of the library's kernels in cl/gemm.cl. */
typedef enum clt__gemm_variant {
    CLT__GEMM_CLBLAST,
    CLT__GEMM_PACKED, /* B packed into panels, one work-item a 4 x 64 tile (CPU-type devices) */
    CLT__GEMM_DIRECT, /* the same tile with B read in place (B not transposed) */
    CLT__GEMM_TILED,  /* 16 x 16 work-items over 64 x 64 tiles in local memory (GPUs) */
    CLT__GEMM_DOT,    /* dot products of rows, B transposed, not packed (few rows of A) */
    CLT__GEMM_VARIANTS
} clt__gemm_variant;
extern const char *const clt__gemm_variant_names[CLT__GEMM_VARIANTS];

/* GEMMs are tuned per size class: the cube root of m n k about 64, 128, 256, 512, 1024 and
 * 2048 or more (clt__gemm_class; the last is never timed, see cl_gemm_tune.c). A device's
 * choices are one variant a class, then the variant for a
 * product its class's variant cannot run (direct with B transposed): packed when it passed
 * verification, else CLBlast; then, for products with B transposed and few rows (a
 * transformer's decoding step, nn.Linear on a small batch), where packing B can cost more than
 * the product, one variant for each bound of m in CLT__GEMM_FEW_ROWS (dot or the one before,
 * tuned on m x 512 x 512). Last, what runs instead of packed where packing does not pay, by
 * the shape alone (each the variant when it passed verification, else the fallback): products with
 * B transposed and at most half a panel of columns, or at most CLT__GEMM_LONG_ROWS rows and k at
 * least CLT__GEMM_LONG_RATIO times n (CLT__GEMM_NARROW: dot, where packed would compute a whole
 * panel's columns for a few, or read panels as long as k, out of cache, for a few tiles each: a
 * convolution's weight gradient), and products with B as it is stored and at most
 * CLT__GEMM_SHORT_ROWS rows (CLT__GEMM_SHORT: direct, where each packed panel would be read by
 * a few work-items only). */
#define CLT__GEMM_CLASSES 6
#define CLT__GEMM_FALLBACK CLT__GEMM_CLASSES  /* the index of the second kind of choice */
#define CLT__GEMM_FEW (CLT__GEMM_CLASSES + 1) /* and of the third */
#define CLT__GEMM_FEW_CLASSES 4
#define CLT__GEMM_FEW_ROWS                                                                     \
    {                                                                                          \
        8, 32, 64, 128                                                                         \
    }
#define CLT__GEMM_NARROW (CLT__GEMM_FEW + CLT__GEMM_FEW_CLASSES) /* and of the last two */
#define CLT__GEMM_SHORT (CLT__GEMM_NARROW + 1)
#define CLT__GEMM_SHORT_ROWS 32
#define CLT__GEMM_LONG_ROWS 32
#define CLT__GEMM_LONG_RATIO 8
#define CLT__GEMM_CHOICES (CLT__GEMM_SHORT + 1)

/* A built program and the kernels taken from it so far. A program's name is a file of cl/
 * ("nn"), or "file:part" for the kernels of one part of it ("elementwise:contiguous"), built
 * with -DCLT_ONLY -DCLT_PICK_<part>=1 (cl/common.cl). */
typedef struct clt__cl_program {
    struct clt__cl_program *next;
    char *name;  /* the program's name, one allocation with... */
    char *extra; /* ...the options it was asked for beyond the common ones ("" for none) */
    cl_program program;
    struct clt__cl_kernel *kernels; /* (cl_launch.c) */
} clt__cl_program;

/* The sub-devices split from one device (CLT_SUBDEVICES): one context for all of them, made
 * when the first starts, so that each uses the others' buffers (peer_order). Shared
 * by their records, freed with the last. */
typedef struct clt__cl_group {
    pthread_mutex_t lock; /* guards context */
    atomic_int refs;      /* records that point here */
    cl_context context;   /* NULL until a member starts */
    cl_uint n;
    cl_device_id ids[];   /* the members, in order */
} clt__cl_group;

/* Where a device's GEMM choices for a dtype stand: not looked up yet, the defaults of its kind,
 * or tuned (or read from the disk cache). */
enum { CLT__GEMM_UNKNOWN, CLT__GEMM_DEFAULTS, CLT__GEMM_TUNED };

typedef struct clt__cl_device {
    cl_platform_id platform;
    cl_device_id id;
    clt__cl_group *group; /* NULL: a context of its own */
    bool sub_device;      /* id came from clCreateSubDevices (CLT_SUBDEVICES) and this record
                           * holds its reference; records live as long as the process, so it is
                           * released (clReleaseDevice) only when enumeration drops the record */
    pthread_mutex_t lock; /* guards everything below and every launch */
    atomic_bool started;  /* context and queue exist (read without the lock to skip it) */
    cl_context context;
    cl_command_queue queue;
    cl_command_queue copy_queue; /* the data loader's uploads, ordered against queue by events */
    atomic_bool copy_pending;    /* an upload was queued on copy_queue since it was last finished
                                  * (everything else queued there is waited for at once) */
    clt__cl_program *programs;
    int cache_mode;       /* how built programs persist (cl_program.c), 0 until first needed */
    char cache_folder[1024]; /* the folder they persist in (for the log) */
    struct clt__cl_deferred *_Atomic deferred; /* work waiting for asynchronous transfers
                                                * (read without the lock when empty) */
    cl_uint native_float_width; /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: 1 where the driver
                                 * vectorises across work-items (GPUs, Mesa's llvmpipe) */
    unsigned vw_float, vw_double, vw_long; /* the kernels' vector widths (CLT_VW_FLOAT, ...):
                                            * the native ones as 2, 4, 8 or 16 */
    unsigned gemm_nv[2]; /* f32, f64: vectors in a row of the GEMM register tile (CLT_GEMM_NV_*,
                          * cl/gemm.cl), from the native vector's size (cl_device.c) */
    pthread_mutex_t gemm_lock; /* guards the two below: each dtype is tuned once */
    int gemm_state[2];         /* f32, f64: CLT__GEMM_UNKNOWN ... (cl_gemm_tune.c) */
    unsigned char gemm_choice[2][CLT__GEMM_CHOICES]; /* clt__gemm_variant values */
    char strings[5][256]; /* backing store of info.name, vendor, platform, versions */
    long args_set;        /* kernel arguments set (clSetKernelArg calls), for tests */
} clt__cl_device;

static inline clt__cl_device *clt__cl(clt_device *dev)
{
    return (clt__cl_device *)dev->impl;
}

/* Whether dev runs each work-item on its own with its vectors in vector registers (a native
 * float vector width above 1: PoCL), rather than many work-items in the lanes of one vector
 * (GPUs, and Mesa's llvmpipe, a CPU device that also stops any loop after 65535 iterations, so
 * that one work-item must never walk a long run). */
static inline bool clt__cl_serial(clt_device *dev)
{
    return clt__cl(dev)->native_float_width > 1;
}

/* The backend's functions, one for each entry of the backend table, declared from it (a
 * definition that drifts from the table does not compile), and the table and registry entry
 * (cl_backend.c). */
#define CLT__CL_DECLARE(name, ret, params, kind) ret clt__cl_##name params;
CLT__BACKEND_OPS(CLT__CL_DECLARE)
#undef CLT__CL_DECLARE
extern const clt__backend clt__cl_backend;

/* Appends every OpenCL device of every platform to *devices (GPU and accelerator types first,
 * in platform order, then CPU types), growing *count. With subdevices > 1 each CPU-type device
 * that can be is split into that many equal sub-devices, listed in its place (CLT_SUBDEVICES).
 * No platform at all is not an error. */
clt_status clt__cl_enumerate(const char *fn, unsigned subdevices, clt_device ***devices,
                             int *count);
/* The platforms the last enumeration found (-1 before one ran), for clt_backend_status. */
extern int clt__cl_platforms_found;
/* The disk cache's settings and contents (cl_cache.c), for clt_cache_get_info. */
clt_status clt__cl_cache_info(clt_cache_info *info);
/* Builds every program and tunes GEMM for each float dtype (cl_warmup.c). */
clt_status clt__cl_warmup(const char *fn, clt_device *dev);

/* Runs the work deferred until asynchronous transfers finish: what has finished, or with wait
 * everything (after the queue was finished). */
void clt__cl_reap(clt_device *dev, bool wait);

/* Whether a device can run the library's kernels: OpenCL C 1.2 or later ("OpenCL C 1.2 ...")
 * and the full profile (64-bit integers). On false, *why says what is missing. */
bool clt__cl_usable(const char *c_version, const char *profile, const char **why);

/* Creates the device's context and queue on first use (under the device lock). */
clt_status clt__cl_start(const char *fn, clt_device *dev);

/* Counts the buffers released (clt__cl_release_mem), so that no kernel keeps an argument that
 * named one of them (cl_launch.c). */
extern atomic_uint clt__cl_mem_generation;

/* clReleaseMemObject of a buffer the library made, after counting it released. */
void clt__cl_release_mem(cl_mem buf);

/* A while in which the threads the calling thread starts (an OpenCL runtime's) run under
 * SCHED_BATCH (cl_workers.c): begin switches the calling thread to it, where it is SCHED_OTHER
 * and CLT_BATCH_WORKERS is not 0, noting the process's threads first with `note`; end switches
 * it back, and without `keep` the threads started in between too (those a GPU's driver may own).
 * Nothing happens off Linux. */
typedef struct clt__cl_batch {
    int *tids; /* the threads noted at the beginning */
    int count;
    bool begun;
} clt__cl_batch;
void clt__cl_batch_begin(clt__cl_batch *w, bool note);
void clt__cl_batch_end(clt__cl_batch *w, bool keep);

/* Programs (cl_program.c). The text of <name>.cl (cl/): embedded, or from CLT_KERNEL_DIR's
 * folders. *owned receives memory to free (clt__free), NULL for the embedded text. */
clt_status clt__cl_source_text(const char *fn, const char *name, const char **text,
                               size_t *len, char **owned);

/* Program `name` (see clt__cl_program) with `extra` options (NULL: none) for dev: found among
 * those built, else built now (holding `kernel`, where it comes from the disk cache) and added.
 * Device lock held. */
clt_status clt__cl_program_get(const char *fn, clt_device *dev, const char *name,
                               const char *extra, const char *kernel, clt__cl_program **out);

/* The steps of clt__cl_program_get, for builds made without the device lock (the warm-up's).
 * dev's built program `name` with `extra` options, or NULL; a program is found by its name and
 * extra options as given, so that a launch formats nothing. Device lock held. */
clt__cl_program *clt__cl_program_find(clt_device *dev, const char *name, const char *extra);
/* Settles how dev's built programs persist on its first build, and says once, at info level,
 * that the device compiles kernels and where they are kept. Device lock held. */
void clt__cl_first_build(clt_device *dev);
/* Builds program `name` with `extra` options and the device's own: from the disk cache's binary
 * when that cache is in use and holds a usable one (one whose program holds `kernel`, where not
 * NULL), else from source (then stored there). Touches no list of the device's: callable
 * without its lock once clt__cl_first_build has run. */
clt_status clt__cl_program_build(const char *fn, clt_device *dev, const char *name,
                                 const char *extra, const char *kernel, cl_program *out);
/* Whether a built program holds kernel `kernel` (NULL: any program does), by its kernel names,
 * which a built program gives without compiling anything more. */
bool clt__cl_program_holds(cl_program program, const char *kernel);
/* Adds a built program to dev's list, which then owns it (released when out of memory). Device
 * lock held. */
clt_status clt__cl_program_add(const char *fn, clt_device *dev, const char *name,
                               const char *extra, cl_program program, clt__cl_program **out);

/* GEMM (cl_gemm.c). The build options of cl/gemm.cl for f32 and f64. */
#define CLT__CL_GEMM_F32 "-DT=float"
#define CLT__CL_GEMM_F64 "-DT=double -DGEMM_F64=1"

/* The bytes of the packed copy of B the packed variant needs (SIZE_MAX when
 * that overflows). */
size_t clt__cl_gemm_panel_bytes(clt_device *dev, const clt__gemm_call *c);
/* The columns of a packed panel of B, and of the register tile of the packed and direct
 * variants, on dev for dtype. */
size_t clt__cl_gemm_panel_width(clt_device *dev, clt_dtype dtype);

/* Whether variant v can run the call on dev (CLBlast always can, but for C's column groups,
 * which only packed and direct store). */
bool clt__cl_gemm_fits(clt_device *dev, clt__gemm_variant v, const clt__gemm_call *c);

/* Queues the call with variant v, which must fit it; `panels` is a buffer of at least
 * clt__cl_gemm_panel_bytes(c) for the packed variant (unused by the others). */
clt_status clt__cl_gemm_run(const char *fn, clt_device *dev, clt__gemm_variant v,
                            const clt__gemm_call *c, cl_mem panels);

/* A convolution's product (groups 1): (mult, C * kh * kw) @ (C * kh * kw, N * OH * OW) over
 * every image's columns, into C's rows OH * OW apart (the first image's part of the output). */
clt__gemm_call clt__cl_conv2d_product(const clt__conv_call *c);
/* The convolution as gemm_pack_im2col into panels and gemm_packed writing each image's part of
 * the output in place; its product must fit the packed variant and positions within a plane
 * must fit in int. */
clt_status clt__cl_conv2d_packed(const char *fn, clt_device *dev, const clt__conv_call *c);

/* GEMM tuning (cl_gemm_tune.c). The size class of a call. */
int clt__gemm_class(const clt__gemm_call *c);

/* The variant that runs a call: the one CLT_GEMM names, else the device's choice for the call's
 * dtype and size class: tuned (in this process by clt_device_warmup, or in an earlier one and
 * read from the disk cache), else the default for the kind of device (never tuned here); where
 * that variant cannot take the call, the fallback choice (or, for a named one, packed for
 * direct), and CLBlast where the library's kernels cannot. An unknown CLT_GEMM is an error. */
clt_status clt__cl_gemm_choose(const char *fn, clt_device *dev, const clt__gemm_call *c,
                               clt__gemm_variant *v);
/* The same without the choices by shape: for a convolution's product, whose packed variant
 * writes the columns straight into the panels (no pack of its own to save) and stores each
 * image's part in place (clt__cl_conv2d), which the direct variant would give up for im2col,
 * the product and a copy, which PoCL ran slower (docs/performance.md, Convolution and pooling). */
clt_status clt__cl_gemm_choose_by_size(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_variant *v);

/* Tests only: where set, the seconds the tuner takes each timed product to have run (m x n x n,
 * B transposed or not), the product still run and checked for errors; the tuner's wall-clock
 * limit is then lifted, so that these times alone decide what it times. */
extern double (*clt__cl_gemm_tune_clock)(clt__gemm_variant v, size_t m, size_t n, bool trans_b);

/* Tunes dtype's GEMM on dev unless done or stored (clt_device_warmup); choice, when not NULL,
 * receives the CLT__GEMM_CHOICES choices. */
clt_status clt__cl_gemm_tune(const char *fn, clt_device *dev, clt_dtype dtype,
                             clt__gemm_variant *choice);

/* The neural-network kernels (cl_nn.c). Whether conv2d writes its columns straight into the
 * packed GEMM's panels where the device multiplies with that variant: -1 (the default) or 1 yes,
 * 0 no (im2col, the product and a copy; the tests compare the two). */
extern int clt__cl_conv_packed;
/* The positions of the pooling kernels and col2im: -1 (the default) in int where they fit, 1
 * to force long, 0 to force int (the tests run both). */
extern int clt__cl_window_wide;

/* The disk cache of built programs (cl_cache.c). Its folder is CLT_CACHE_DIR (default
 * $XDG_CACHE_HOME/cltensor or $HOME/.cache/cltensor; "off" disables it), its size cap
 * CLT_CACHE_SIZE, both read once per process. Nothing here fails for the caller: an unusable
 * entry or folder is logged and behaves as a miss. */

/* What happened to programs so far in this process, for tests. */
typedef struct clt__cl_cache_stats {
    long programs; /* programs built for a device, from a binary or from source */
    long hits;     /* built from a cache entry */
    long misses;   /* built from source (no usable entry, or the cache off) */
    long rejected; /* entries found but not used: corrupt, truncated, foreign, refused */
    long stored;   /* entries written */
} clt__cl_cache_stats;

typedef enum clt__cl_cache_event {
    CLT__CACHE_PROGRAM,
    CLT__CACHE_HIT,
    CLT__CACHE_MISS,
    CLT__CACHE_REJECTED,
    CLT__CACHE_STORED,
} clt__cl_cache_event;

void clt__cl_cache_note(clt__cl_cache_event event);
clt__cl_cache_stats clt__cl_cache_get_stats(void);

/* The key material of a program: library version, platform name and version, device name,
 * driver version, build options and every source part, each length-prefixed. Returns a new
 * buffer (clt__free) of *key_len bytes, or NULL when out of memory. */
char *clt__cl_cache_key(const char *fn, clt_device *dev, const char *options, int count,
                        const char *const *texts, const size_t *lens, size_t *key_len);

/* The binary stored under the key (clt__free), *size its length; NULL on a miss, or after a
 * corrupt, truncated or foreign entry was logged and counted as rejected. */
unsigned char *clt__cl_cache_load(const char *fn, const char *key, size_t key_len, size_t *size);

/* Stores the binary under the key (temp file + rename), then evicts least recently used
 * entries down to the size cap. Failures are logged, never returned. */
void clt__cl_cache_store(const char *fn, const char *key, size_t key_len,
                         const unsigned char *binary, size_t size);

/* Deletes the entry stored under the key, where there is one (one whose binary turned out to be
 * another program's). */
void clt__cl_cache_remove(const char *key, size_t key_len);

/* Whether the device's driver keeps a disk cache of its own builds, on by default and not turned
 * off: PoCL (POCL_KERNEL_CACHE=0 turns it off; POCL_CACHE_DIR) and Mesa's Rusticl and Clover
 * (MESA_SHADER_CACHE_DISABLE; MESA_SHADER_CACHE_DIR). Such a driver caches what it compiles
 * when it compiles it, where asking it for a program's binary would compile every kernel of the
 * program at once, so the library's own cache is not used with it. *folder receives the
 * driver's cache folder. */
bool clt__cl_driver_cache(const clt_device *dev, char *folder, size_t size);

/* The library's cache folder into folder; false when the cache is off. */
bool clt__cl_cache_folder(char *folder, size_t size);

/* Warns about every driver library an ICD vendor file names that the loader could not load
 * (cl_vendors.c); called once the platforms are listed. */
void clt__cl_check_vendors(void);

/* A readable failure from an OpenCL call: "what on gpu:0 failed: CL_... (-5)". */
clt_status clt__cl_error(const char *fn, clt_device *dev, cl_int err, const char *what);

#endif
