/*
 * preload/entries.h - every entry's implementation (preload/entries.def)
 * declared from the prototype of the function it replaces, so that a wrong
 * signature or a missing det_impl_ definition fails the build (stack.c's
 * stubs call det_impl_NAME from assembly, which no compiler checks).
 *
 * Rules of this file:
 *  - DET_ENTRY(name): det_impl_name has name's type (__typeof__), from the
 *    library's own header, or from the prototype below when the header does
 *    not give it to a program built as libdet.so is (-U_FORTIFY_SOURCE, C).
 *  - DET_ALIAS(name, other) is not checked: a second name of another ABI
 *    spelling (stat64 for stat) has another C type for the same code.
 *  - Prototypes here are copied from the declaring library (glibc's bits/
 *    headers, glibc's old <sys/stat.h>, libstdc++'s cxxabi.h, libgomp's
 *    libgomp_g.h), not from det's implementations.
 */
#ifndef DET_ENTRIES_H
#define DET_ENTRIES_H

#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <omp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <sys/sendfile.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* glibc's fortified entry points (bits/unistd.h, socket2.h, fcntl2.h,
 * poll2.h, stdio2-decl.h, stdlib.h: declared only with _FORTIFY_SOURCE) */
extern ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
extern ssize_t __pread_chk(int fd, void *buf, size_t nbytes, off_t offset, size_t bufsize);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
extern ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t n, size_t buflen, int flags,
			      struct sockaddr *restrict addr, socklen_t *restrict addr_len);
extern int __open_2(const char *path, int oflag);
extern mqd_t __mq_open_2(const char *name, int oflag);
extern int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
extern int __vprintf_chk(int flag, const char *restrict format, va_list ap);
extern int __vfprintf_chk(FILE *restrict stream, int flag, const char *restrict format, va_list ap);
extern char *__fgets_chk(char *restrict s, size_t size, int n, FILE *restrict stream);
extern size_t __fread_chk(void *restrict ptr, size_t ptrlen, size_t size, size_t n, FILE *restrict stream);
extern int __isoc99_vfscanf(FILE *restrict s, const char *restrict format, va_list arg);
extern int __isoc99_vscanf(const char *restrict format, va_list arg);
/* glibc 2.38's C23 scanf (not declared by 2.36's headers) */
extern int __isoc23_vfscanf(FILE *restrict s, const char *restrict format, va_list arg);
extern int __isoc23_vscanf(const char *restrict format, va_list arg);
extern char *__realpath_chk(const char *restrict name, char *restrict resolved, size_t resolvedlen);
extern ssize_t __readlink_chk(const char *restrict path, char *restrict buf, size_t len, size_t buflen);
extern ssize_t __readlinkat_chk(int fd, const char *restrict path, char *restrict buf, size_t len,
				size_t buflen);
/* glibc's stat ABI before 2.33 (programs built then still call it) */
extern int __xstat(int ver, const char *filename, struct stat *stat_buf);
extern int __lxstat(int ver, const char *filename, struct stat *stat_buf);
extern int __fxstat(int ver, int fildes, struct stat *stat_buf);
extern int __fxstatat(int ver, int fildes, const char *filename, struct stat *stat_buf, int flag);
/* libstdc++'s cxxabi.h (its __guard: a 64-bit integer on x86-64) */
extern int __cxa_guard_acquire(uint64_t *g);
extern void __cxa_guard_release(uint64_t *g);
extern void __cxa_guard_abort(uint64_t *g);
/* libstdc++'s std::random_device members (<random>: this is their C ABI) */
extern unsigned _ZNSt13random_device9_M_getvalEv(void *self);
extern unsigned _ZNSt13random_device16_M_getval_pretr1Ev(void *self);
/* libgomp's libgomp_g.h (what GCC's OpenMP code calls) */
extern void GOMP_critical_start(void);
extern void GOMP_critical_end(void);
extern void GOMP_critical_name_start(void **pptr);
extern void GOMP_critical_name_end(void **pptr);
extern void GOMP_atomic_start(void);
extern void GOMP_atomic_end(void);

#define DET_ENTRY(name) extern __typeof__(name) det_impl_##name __attribute__((visibility("hidden")));
#define DET_ALIAS(name, other)
#include "entries.def"
#undef DET_ENTRY
#undef DET_ALIAS

#endif /* DET_ENTRIES_H */
