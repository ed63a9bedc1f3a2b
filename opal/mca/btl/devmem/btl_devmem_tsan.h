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

#ifdef MCA_BTL_DEVMEM_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* p was taken from (or is about to go back to) a pool shared between threads */
#define MCA_BTL_DEVMEM_HANDOFF_TAKEN(p) __tsan_acquire(p)
#define MCA_BTL_DEVMEM_HANDOFF_GIVEN(p) __tsan_release(p)
#else
#define MCA_BTL_DEVMEM_HANDOFF_TAKEN(p) ((void) (p))
#define MCA_BTL_DEVMEM_HANDOFF_GIVEN(p) ((void) (p))
#endif

#endif /* MCA_BTL_DEVMEM_TSAN_H */
