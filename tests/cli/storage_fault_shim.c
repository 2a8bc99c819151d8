/* Preloaded (LD_PRELOAD) into the fa-jit tool by the CLI tests to make one directory refuse
 * writes the way a full or read-only file system does, for any user: chmod 0555 does not
 * stop root, which CI runs as, and mounting a small tmpfs or a read-only bind needs
 * privileges CI may not grant. Under FAJIT_TEST_REFUSE_UNDER, opening a file for writing and
 * making a directory fail with FAJIT_TEST_REFUSE_ERRNO (ENOSPC or EROFS); reading, and
 * everything elsewhere (the compiler's own files included), goes through untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The errno to fail with when path lies under the refusing directory, else 0. */
static int refusal_for(const char* path) {
    const char* directory = getenv("FAJIT_TEST_REFUSE_UNDER");
    const char* name = getenv("FAJIT_TEST_REFUSE_ERRNO");
    if (!directory || !name || !path) return 0;
    const size_t length = strlen(directory);
    if (strncmp(path, directory, length) != 0 || (path[length] != '/' && path[length] != '\0')) return 0;
    return strcmp(name, "EROFS") == 0 ? EROFS : ENOSPC;
}

static int writes(int flags) { return (flags & (O_CREAT | O_WRONLY | O_RDWR | O_TRUNC)) != 0; }

/* open's mode argument exists only with O_CREAT or O_TMPFILE. */
#define MODE_ARGUMENT(flags, mode)             \
    do {                                       \
        if ((flags) & (O_CREAT | O_TMPFILE)) { \
            va_list arguments;                 \
            va_start(arguments, flags);        \
            mode = va_arg(arguments, mode_t);  \
            va_end(arguments);                 \
        }                                      \
    } while (0)

#define REFUSE_IF(condition, path)                               \
    do {                                                         \
        const int refusal = (condition) ? refusal_for(path) : 0; \
        if (refusal) {                                           \
            errno = refusal;                                     \
            return -1;                                           \
        }                                                        \
    } while (0)

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int open(const char* path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARGUMENT(flags, mode);
    REFUSE_IF(writes(flags), path);
    return NEXT(open)(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARGUMENT(flags, mode);
    REFUSE_IF(writes(flags), path);
    return NEXT(open64)(path, flags, mode);
}

/* Relative to another directory, the path alone does not say where it lies; fa-jit passes
 * absolute paths. */
int openat(int directory, const char* path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARGUMENT(flags, mode);
    REFUSE_IF(writes(flags) && (directory == AT_FDCWD || path[0] == '/'), path);
    return NEXT(openat)(directory, path, flags, mode);
}

int openat64(int directory, const char* path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARGUMENT(flags, mode);
    REFUSE_IF(writes(flags) && (directory == AT_FDCWD || path[0] == '/'), path);
    return NEXT(openat64)(directory, path, flags, mode);
}

int mkdir(const char* path, mode_t mode) {
    REFUSE_IF(1, path);
    return NEXT(mkdir)(path, mode);
}

int mkdirat(int directory, const char* path, mode_t mode) {
    REFUSE_IF(directory == AT_FDCWD || path[0] == '/', path);
    return NEXT(mkdirat)(directory, path, mode);
}
