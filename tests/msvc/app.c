/* A program built as MSVC builds one (clang's x86_64-pc-windows-msvc target, linked by lld-link
 * against an import library made from cltensor.def, as lib.exe makes it), that uses cltensor.dll
 * through the public headers: the C ABI the DLL offers to MSVC programs. Freestanding (no C
 * runtime of MSVC's here): it writes through kernel32 and exits with the number of checks that
 * failed. */
#include <cltensor.h>

__declspec(dllimport) void *__stdcall GetStdHandle(unsigned long which);
__declspec(dllimport) int __stdcall WriteFile(void *file, const void *buf, unsigned long n,
                                              unsigned long *written, void *overlapped);
__declspec(dllimport) void __stdcall ExitProcess(unsigned int code);

int _fltused; /* what MSVC's C runtime defines for a program that uses floating point */

static void say(const char *s)
{
    unsigned long n = 0, written;
    while (s[n])
        n++;
    WriteFile(GetStdHandle((unsigned long)-11), s, n, &written, 0);
}

static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

void start(void)
{
    int failed = 0;
    float values[6] = {1, 2, 3, 4, 5, 6}, sums[2] = {0, 0};
    clt_device *cpu = clt_device_cpu();
    clt_tensor *x = clt_tensor_from_data(CLT_SHAPE(2, 3), values, CLT_F32, cpu);
    clt_tensor *s = x ? clt_sum(x, (const int[]){1}, 1, false) : 0;

    say("cltensor ");
    say(clt_version_string());
    say(" from an MSVC-ABI program\n");
    failed += !same(clt_version_string(), CLT_VERSION_STRING);
    failed += clt_version_number() != CLT_VERSION_NUMBER;
    failed += !s || clt_tensor_copy_to_host(s, sums, sizeof sums) != CLT_OK;
    failed += sums[0] != 6 || sums[1] != 15;
    failed += clt_tensor_to_ex(x, 0) != 0; /* NULL options: an error, reported across the DLL */
    failed += clt_last_status() != CLT_ERR_INVALID_ARGUMENT;
    say(failed ? "msvc: FAILED\n" : "msvc: sum over rows 6 15, errors reported: ok\n");
    clt_tensor_release(s);
    clt_tensor_release(x);
    ExitProcess((unsigned int)failed);
}
