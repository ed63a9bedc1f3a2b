/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How a waiting rank that shares its core should wait: keep spinning, or hand the core over
 * (yield, or sleep on its sockets). Without Open MPI, so that it unit-tests alone.
 *
 * Neither way wins everywhere. When the task beside us on the core is the peer we wait for
 * (ranks pinned to one core, oversubscribed ranks), handing it the core brings the answer at
 * once, where spinning waits out a whole time slice (4 ms). When it is a task that has nothing
 * to do with us (a monitoring agent, a compile), the peer answers from another core and
 * every handover gives that task a slice or costs a wake-up: spinning wins, as btl/tcp does.
 * From inside the rank the two cannot be told apart, so we measure: the duration of each
 * wait (from the first quiet progress call to the next activity) while the core is contended.
 *
 * Waits are taken in epochs of IDLE_CHOICE_EPOCH; an epoch's mean without its longest wait stands
 * for the way used in it (the mean, because a way that is quick at the median but gives a
 * busy task a time slice one wait in five costs more in all; without the longest, because
 * one wait on a peer still computing must not decide). Most epochs use the way that won last
 * (at first the caller's guess). Now and then one epoch tries the other way; it wins if its
 * mean is at least IDLE_CHOICE_MARGIN_PCT below the winner's last. A try stops early, as lost,
 * once it cannot win any more (a majority of its waits above that bar), at a wait
 * IDLE_CHOICE_ABORT_FACTOR times the winner's median wait, or once its waits add up to
 * IDLE_CHOICE_ABORT_EPOCHS whole epochs of that median (the typical wait, not the mean, which a
 * tail would stretch), so that a bad try (spinning on a core the peer needs) costs a wait or
 * two; or IDLE_CHOICE_TRY_SPAN_NS after it began (the contention that made it ended). The
 * first try follows the first epoch (a benchmark's size lasts a second or less: learning
 * must be quick); later ones come IDLE_CHOICE_TRY_MIN_NS after the last switch, twice as far
 * apart after each lost try, at most IDLE_CHOICE_TRY_MAX_NS.
 */
#ifndef MCA_BTL_DEVMEM_IDLE_CHOICE_H
#define MCA_BTL_DEVMEM_IDLE_CHOICE_H

#include <stdbool.h>
#include <stdint.h>

#define IDLE_CHOICE_EPOCH 15
#define IDLE_CHOICE_MARGIN_PCT 10
#define IDLE_CHOICE_ABORT_FACTOR 64
#define IDLE_CHOICE_ABORT_EPOCHS 2
#define IDLE_CHOICE_TRY_MIN_NS 10000000ull    /* 10 ms */
#define IDLE_CHOICE_TRY_MAX_NS 3200000000ull  /* 3.2 s */
#define IDLE_CHOICE_TRY_SPAN_NS 50000000ull   /* a try not over by then is lost */

enum mca_btl_devmem_idle_way {
    IDLE_CHOICE_HANDOVER = 0, /* yield the core when quiet; sleep on the sockets on a shared core */
    IDLE_CHOICE_SPIN = 1,     /* keep the core, as btl/tcp does */
};

struct mca_btl_devmem_idle_choice {
    enum mca_btl_devmem_idle_way winner; /* the way most epochs use */
    bool trying;                         /* this epoch uses the other way */
    uint64_t samples[IDLE_CHOICE_EPOCH];
    int n;
    uint64_t winner_median; /* of the winner's last full epoch; 0: none yet */
    uint64_t winner_mean;   /* the same epoch's mean without its longest wait */
    int try_over;           /* while trying: waits above the bar */
    uint64_t try_sum;       /* while trying: its waits added up */
    uint64_t try_start_ns;
    uint64_t next_try_ns, try_gap_ns;
    uint64_t tries, switches; /* for the stats */
};

void mca_btl_devmem_idle_choice_init(struct mca_btl_devmem_idle_choice *w,
                                     enum mca_btl_devmem_idle_way first);

/* A wait of wait_ns ended at now_ns while our core was contended. */
void mca_btl_devmem_idle_choice_record(struct mca_btl_devmem_idle_choice *w, uint64_t wait_ns,
                                       uint64_t now_ns);

/* A wait ended while nobody else wanted the core (it says nothing of either way): a try
 * that has lasted too long ends. */
void mca_btl_devmem_idle_choice_untimed(struct mca_btl_devmem_idle_choice *w, uint64_t now_ns);

/* The way to wait now. */
static inline enum mca_btl_devmem_idle_way
mca_btl_devmem_idle_choice_now(const struct mca_btl_devmem_idle_choice *w)
{
    return w->trying ? (enum mca_btl_devmem_idle_way) !w->winner : w->winner;
}

#endif /* MCA_BTL_DEVMEM_IDLE_CHOICE_H */
