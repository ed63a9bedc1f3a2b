/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hand-offs that ThreadSanitizer cannot see. Open MPI is not built with it, so the atomic
 * instructions inside its free lists (which pass a fragment from the thread that returns it
 * to the thread that takes it next) order nothing as far as the detector knows, and every
 * reuse of a fragment would be reported as a race. These annotations state that hand-off;
 * they vanish in every other build.
 */
#ifndef MCA_BTL_DEVMEM_TSAN_H
#define MCA_BTL_DEVMEM_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define MCA_BTL_DEVMEM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MCA_BTL_DEVMEM_TSAN 1
#endif
#endif

#include <stddef.h>
#include <string.h>

#ifdef MCA_BTL_DEVMEM_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* p was taken from (or is about to go back to) a pool shared between threads */
#define MCA_BTL_DEVMEM_HANDOFF_TAKEN(p) __tsan_acquire(p)
#define MCA_BTL_DEVMEM_HANDOFF_GIVEN(p) __tsan_release(p)
/* Copy bytes the PML lends us for the length of a call (the peer's registration handle
 * inside its RGET header): the PML recycles that memory through its own free lists once the
 * call has returned, a hand-off the detector cannot see, so this one read goes unwatched. */
static inline __attribute__((no_sanitize("thread"), noinline)) void
mca_btl_devmem_pml_copy(void *dst, const void *src, size_t len)
{
    const volatile unsigned char *s = src;
    unsigned char *d = dst;

    for (size_t i = 0; i < len; i++) {
        d[i] = s[i];
    }
}
#else
#define MCA_BTL_DEVMEM_HANDOFF_TAKEN(p) ((void) (p))
#define MCA_BTL_DEVMEM_HANDOFF_GIVEN(p) ((void) (p))
#define mca_btl_devmem_pml_copy(dst, src, len) memcpy((dst), (src), (len))
#endif

#endif /* MCA_BTL_DEVMEM_TSAN_H */
