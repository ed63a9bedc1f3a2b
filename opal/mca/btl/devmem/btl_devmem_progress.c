/* Yield the CPU when our connections have been quiet for a while: see btl_devmem_progress.h. */
#include "btl_devmem_progress.h"

#include <sched.h>
#include <time.h>

#include "opal/runtime/opal_progress.h"

static uint64_t seen_activity;
static uint64_t quiet_since_ns; /* 0: there was activity at the last call */
static int live_conns;

void mca_btl_devmem_progress_conn_up(void)
{
    live_conns++;
}

void mca_btl_devmem_progress_conn_down(void)
{
    live_conns--;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int mca_btl_devmem_progress(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    uint64_t now;

    /* nothing of ours to wait for, or Open MPI yields on every idle call already */
    if (c->idle_yield_us < 0 || live_conns <= 0 || opal_progress_yield_when_idle) {
        return 0;
    }
    if (c->activity != seen_activity) {
        seen_activity = c->activity;
        quiet_since_ns = 0;
        return 0;
    }
    now = now_ns();
    if (0 == quiet_since_ns) {
        quiet_since_ns = now;
    }
    if (now - quiet_since_ns >= (uint64_t) c->idle_yield_us * 1000u) {
        (void) sched_yield();
        c->stats.idle_yields++;
    }
    return 0;
}
