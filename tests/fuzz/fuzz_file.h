/* What the fuzz targets of file readers share: the cpu device alone (OCL_ICD_VENDORS at an empty
 * folder, set before the first library call) and one scratch file that each input is written
 * to (the readers take paths, not memory), both removed at exit. */
#ifndef CLT_FUZZ_FILE_H
#define CLT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_path[4096];
static char fuzz_empty_dir[4096];

static void fuzz_file_cleanup(void)
{
    if (fuzz_path[0])
        unlink(fuzz_path);
    if (fuzz_empty_dir[0])
        rmdir(fuzz_empty_dir);
}

/* Sets up the scratch file fuzz_path, named with `suffix` (".csv"); aborts when it cannot. */
static void fuzz_file_init(const char *target, const char *suffix)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(fuzz_empty_dir, sizeof fuzz_empty_dir, "%s/clt_fuzz_vendors_XXXXXX", base);
    if (!mkdtemp(fuzz_empty_dir)) {
        fprintf(stderr, "%s: ", target);
        perror("mkdtemp");
        abort();
    }
    setenv("OCL_ICD_VENDORS", fuzz_empty_dir, 1);
    setenv("OCL_ICD_FILENAMES", "", 1);
    snprintf(fuzz_path, sizeof fuzz_path, "%s/clt_fuzz_%ld%s", base, (long)getpid(), suffix);
    atexit(fuzz_file_cleanup);
}

/* Writes the input to the scratch file; aborts when it cannot. */
static void fuzz_file_write(const char *target, const uint8_t *data, size_t size)
{
    FILE *f = fopen(fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        fprintf(stderr, "%s: ", target);
        perror("writing the scratch file");
        abort();
    }
}

#endif
