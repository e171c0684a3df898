/* What the fuzz targets share: the cpu device alone (OCL_ICD_VENDORS at an empty folder, set
 * before the first library call) and, for the readers of files, one scratch file that each
 * input is written to (the readers take paths, not memory), both removed at exit. */
#ifndef CLT_FUZZ_FILE_H
#define CLT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_path[4096];
static char fuzz_empty_dir[4096];

static inline void fuzz_file_cleanup(void)
{
    if (fuzz_path[0])
        unlink(fuzz_path);
    if (fuzz_empty_dir[0])
        rmdir(fuzz_empty_dir);
}

/* The folder for scratch files: /dev/shm, else $TMPDIR, else /tmp. */
static inline const char *fuzz_scratch_base(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}

/* Leaves the library the cpu device alone (OCL_ICD_VENDORS at an empty folder, removed at
 * exit); aborts when it cannot. Call before the first library call. */
static inline void fuzz_cpu_only(const char *target)
{
    snprintf(fuzz_empty_dir, sizeof fuzz_empty_dir, "%s/clt_fuzz_vendors_XXXXXX",
             fuzz_scratch_base());
    if (!mkdtemp(fuzz_empty_dir)) {
        fprintf(stderr, "%s: ", target);
        perror("mkdtemp");
        abort();
    }
    setenv("OCL_ICD_VENDORS", fuzz_empty_dir, 1);
    setenv("OCL_ICD_FILENAMES", "", 1);
    atexit(fuzz_file_cleanup);
}

/* fuzz_cpu_only, and the scratch file fuzz_path, named with `suffix` (".csv"); aborts when it
 * cannot. */
static inline void fuzz_file_init(const char *target, const char *suffix)
{
    fuzz_cpu_only(target);
    snprintf(fuzz_path, sizeof fuzz_path, "%s/clt_fuzz_%ld%s", fuzz_scratch_base(),
             (long)getpid(), suffix);
}

/* Writes the input to the scratch file; aborts when it cannot. */
static inline void fuzz_file_write(const char *target, const uint8_t *data, size_t size)
{
    FILE *f = fopen(fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        fprintf(stderr, "%s: ", target);
        perror("writing the scratch file");
        abort();
    }
}

#endif
