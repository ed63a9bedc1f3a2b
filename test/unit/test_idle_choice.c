/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The choice between spinning and handing the core over (btl_devmem_idle_choice.c), fed waits
 * drawn from made-up machines on a simulated clock:
 *   pinned  the peer shares our core: a handover brings the answer in ~20 us, spinning waits
 *           out its time slice (4 ms)
 *   hog     an unrelated busy task shares our core: a handover often gives it a slice
 *           (1.5 ms), spinning answers in ~12 us with a rare preemption
 *   tail    ranks bound one to a core, a busy task beside one of them: a handover is quicker
 *           at the median (8 us) but gives the task a slice in 15 % of the waits; spinning
 *           takes 11 us with a rare preemption (the median alone chose handing over)
 *   even    both ways alike
 * Each must settle on the right way, keep it, and spend little time trying the other; a
 * machine that changes from one to the other mid-run must be followed, and a try that stops
 * getting timed waits must end. Exit 0 pass, 1 fail.
 */
#include "btl_devmem_idle_choice.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

enum machine { PINNED, HOG, TAIL, EVEN };

static uint64_t rng;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t) rng;
}

/* a wait in [base, base * 1.25) most times; `slow` in `per_mille` of them */
static uint64_t draw(uint64_t base, uint64_t slow, unsigned per_mille)
{
    if (rnd() % 1000 < per_mille) {
        return slow;
    }
    return base + rnd() % (base / 4 + 1);
}

static uint64_t wait_on(enum machine m, enum mca_btl_devmem_idle_way way)
{
    switch (m) {
    case PINNED:
        return way == IDLE_CHOICE_HANDOVER ? draw(20 * US, 0, 0) : draw(4 * MS, 0, 0);
    case HOG:
        return way == IDLE_CHOICE_HANDOVER ? draw(15 * US, 1500 * US, 500)
                                       : draw(12 * US, 1500 * US, 20);
    case TAIL:
        return way == IDLE_CHOICE_HANDOVER ? draw(8 * US, 1500 * US, 150)
                                       : draw(11 * US, 1500 * US, 5);
    default:
        return draw(10 * US, 1 * MS, 10);
    }
}

struct run {
    uint64_t t;                 /* simulated clock */
    uint64_t time_in[2];        /* waited in each way */
    uint64_t late_in[2];        /* the same, in the second half of the run */
    uint64_t longest_lost_try;  /* waits of the longest try that lost */
    struct mca_btl_devmem_idle_choice w;
};

/* waits on machine m until the clock reaches `until` (a small computation between waits) */
static void simulate(struct run *r, enum machine m, uint64_t until, uint64_t late_from)
{
    uint64_t try_waits = 0;

    while (r->t < until) {
        enum mca_btl_devmem_idle_way way = mca_btl_devmem_idle_choice_now(&r->w);
        uint64_t ns = wait_on(m, way);

        r->t += ns;
        r->time_in[way] += ns;
        if (r->t >= late_from) {
            r->late_in[way] += ns;
        }
        bool was_trying = r->w.trying;
        uint64_t switches = r->w.switches;

        try_waits = was_trying ? try_waits + 1 : 0;
        mca_btl_devmem_idle_choice_record(&r->w, ns, r->t);
        if (was_trying && !r->w.trying && switches == r->w.switches
            && try_waits > r->longest_lost_try) {
            r->longest_lost_try = try_waits;
        }
        r->t += 2 * US;
    }
}

static void start(struct run *r, uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    rng = seed;
    mca_btl_devmem_idle_choice_init(&r->w, IDLE_CHOICE_HANDOVER);
}

static double share(const uint64_t *in, enum mca_btl_devmem_idle_way way)
{
    return (double) in[way] / (double) (in[0] + in[1] + 1);
}

int main(void)
{
    struct run r;

    start(&r, 0x1234567u);
    CHECK(IDLE_CHOICE_HANDOVER == mca_btl_devmem_idle_choice_now(&r.w),
          "a new rank hands its core over");

    /* pinned: handing over wins; the tries of spinning cost one long wait each */
    simulate(&r, PINNED, 20 * S, 10 * S);
    CHECK(0 == r.w.switches, "pinned: never switched to spinning (%lu switches)",
          (unsigned long) r.w.switches);
    CHECK(r.w.tries >= 5, "pinned: spinning was tried again now and then (%lu tries)",
          (unsigned long) r.w.tries);
    CHECK(1 == r.longest_lost_try, "pinned: a try of spinning stopped after its first wait (%lu)",
          (unsigned long) r.longest_lost_try);
    CHECK(share(r.time_in, IDLE_CHOICE_SPIN) < 0.01,
          "pinned: under 1 %% of the waiting spent trying to spin (%.2f %%)",
          100 * share(r.time_in, IDLE_CHOICE_SPIN));

    /* hog: spinning wins within the first second and keeps winning */
    start(&r, 0x89abcdefu);
    simulate(&r, HOG, 1 * S, 1 * S);
    CHECK(IDLE_CHOICE_SPIN == r.w.winner, "hog: spinning won within a second (%lu tries in all)",
          (unsigned long) r.w.tries);
    simulate(&r, HOG, 20 * S, 10 * S);
    CHECK(1 == r.w.switches, "hog: switched once and stayed (%lu switches)",
          (unsigned long) r.w.switches);
    CHECK(share(r.late_in, IDLE_CHOICE_HANDOVER) < 0.02,
          "hog: under 2 %% of the late waiting spent trying handovers (%.2f %%)",
          100 * share(r.late_in, IDLE_CHOICE_HANDOVER));
    CHECK(r.longest_lost_try <= IDLE_CHOICE_EPOCH / 2 + 1,
          "hog: a losing try stopped once it could not win (%lu waits at most)",
          (unsigned long) r.longest_lost_try);

    /* tail: what the waits cost in all decides, not the median wait */
    start(&r, 0x13579bdfu);
    simulate(&r, TAIL, 1 * S, 1 * S);
    CHECK(IDLE_CHOICE_SPIN == r.w.winner, "tail: spinning won within a second (%lu tries in all)",
          (unsigned long) r.w.tries);
    simulate(&r, TAIL, 20 * S, 10 * S);
    CHECK(1 == r.w.switches && share(r.late_in, IDLE_CHOICE_HANDOVER) < 0.05,
          "tail: switched once and stayed (%lu switches, %.2f %% of the late waiting handing over)",
          (unsigned long) r.w.switches, 100 * share(r.late_in, IDLE_CHOICE_HANDOVER));

    /* even: no reason to change, and the margin keeps it from flapping */
    start(&r, 0x5eed5eedu);
    simulate(&r, EVEN, 20 * S, 20 * S);
    CHECK(r.w.switches <= 2, "even: at most two switches in 20 s (%lu)",
          (unsigned long) r.w.switches);

    /* a machine that changes: pinned for 5 s, then a hog; then pinned again */
    start(&r, 0x0badcafeu);
    simulate(&r, PINNED, 5 * S, 5 * S);
    CHECK(IDLE_CHOICE_HANDOVER == r.w.winner, "pinned, then hog: handing over at first");
    simulate(&r, HOG, 10 * S, 10 * S);
    CHECK(IDLE_CHOICE_SPIN == r.w.winner, "pinned, then hog: spinning within 5 s of the change");
    simulate(&r, PINNED, 15 * S, 15 * S);
    CHECK(IDLE_CHOICE_HANDOVER == r.w.winner, "hog, then pinned: handing over again within 5 s");

    /* a try whose contention ends gets no more timed waits: it ends, lost, after its span */
    start(&r, 0x7777u);
    while (!r.w.trying) {
        r.t += 20 * US;
        mca_btl_devmem_idle_choice_record(&r.w, 20 * US, r.t);
    }
    {
        uint64_t began = r.t;

        while (r.w.trying && r.t - began < 10 * IDLE_CHOICE_TRY_SPAN_NS) {
            r.t += 20 * US;
            mca_btl_devmem_idle_choice_untimed(&r.w, r.t);
        }
        CHECK(!r.w.trying && r.t - began >= IDLE_CHOICE_TRY_SPAN_NS
                  && r.t - began < IDLE_CHOICE_TRY_SPAN_NS + 1 * MS,
              "a try with no timed waits ended after its span (%.1f ms)", (r.t - began) / 1e6);
        CHECK(IDLE_CHOICE_HANDOVER == r.w.winner && 0 == r.w.switches,
              "an unfinished try changed nothing");
    }
    return check_finish();
}
