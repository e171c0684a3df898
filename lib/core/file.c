/* Files the library opens by a caller's path: reading only regular files, without blocking on
 * a FIFO or a device, and creating temporary files next to a destination under names nobody
 * can predict or plant a link at. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

int clt__open_regular(const char *path, bool *irregular, struct stat *sb)
{
    /* O_NONBLOCK: a FIFO opens at once; O_NOCTTY: a terminal never becomes ours */
    int flags, fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    *irregular = false;
    if (fd < 0)
        return -1;
    bool known = fstat(fd, sb) == 0;
    if (!known || !S_ISREG(sb->st_mode)) {
        int err = known ? EINVAL : errno;
        *irregular = known;
        close(fd);
        errno = err;
        return -1;
    }
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int clt__create_temp(char *path, mode_t mode)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t len = strlen(path);
    if (len < 6 || strcmp(path + len - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts; /* no entropy yet (early boot): O_EXCL still makes it safe */
            clock_gettime(CLOCK_MONOTONIC, &ts);
            r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
                (uint64_t)attempt * 0x9e3779b97f4a7c15u;
        }
        for (int i = 0; i < 6; i++, r /= 62)
            path[len - 6 + i] = letters[r % 62];
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}
