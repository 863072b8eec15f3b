/*
 * Linked only into the ThreadSanitizer build of test_threads.c against a
 * libonair built by nightly Rust with -Zsanitizer=thread (scripts/test-c):
 * rustc's LLVM instruments memory intrinsics as __tsan_memcpy & co., which
 * gcc's libtsan (gcc 12) does not export. Each forwards to the libc
 * function, which libtsan intercepts and checks. Compiled with
 * -fno-builtin so the calls stay calls.
 */
#include <string.h>

void *__tsan_memcpy(void *dst, const void *src, size_t n);
void *__tsan_memmove(void *dst, const void *src, size_t n);
void *__tsan_memset(void *dst, int c, size_t n);

void *__tsan_memcpy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }
void *__tsan_memmove(void *dst, const void *src, size_t n) { return memmove(dst, src, n); }
void *__tsan_memset(void *dst, int c, size_t n) { return memset(dst, c, n); }
