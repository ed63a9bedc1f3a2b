/* SPDX-License-Identifier: BSD-3-Clause */
/* Spin or hand the core over, chosen on measured waits: btl_devmem_idle_choice.h */
#include "btl_devmem_idle_choice.h"

#include <string.h>

void mca_btl_devmem_idle_choice_init(struct mca_btl_devmem_idle_choice *w,
                                     enum mca_btl_devmem_idle_way first)
{
    memset(w, 0, sizeof(*w));
    w->winner = first;
    w->try_gap_ns = IDLE_CHOICE_TRY_MIN_NS;
}

static uint64_t median(const uint64_t *v, int n)
{
    uint64_t a[IDLE_CHOICE_EPOCH];

    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && a[j - 1] > v[i]; j--) {
            a[j] = a[j - 1];
        }
        a[j] = v[i];
    }
    return n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

/* The mean without the longest wait: what the waits cost in all, tail included (a way
 * that is quick at the median but hands a busy task a time slice now and then is worse
 * than one a little slower every time), and one wait on a peer still computing does not
 * decide it. */
static uint64_t mean_but_longest(const uint64_t *v, int n)
{
    uint64_t sum = 0, longest = 0;

    if (n < 3) {
        return median(v, n);
    }
    for (int i = 0; i < n; i++) {
        sum += v[i];
        longest = v[i] > longest ? v[i] : longest;
    }
    return (sum - longest) / (uint64_t) (n - 1);
}

/* below this, a try's mean beats the winner's */
static uint64_t bar(const struct mca_btl_devmem_idle_choice *w)
{
    return w->winner_mean - w->winner_mean * IDLE_CHOICE_MARGIN_PCT / 100;
}

static void end_try(struct mca_btl_devmem_idle_choice *w, bool won, uint64_t now_ns)
{
    if (won) {
        w->winner = (enum mca_btl_devmem_idle_way) !w->winner;
        w->winner_median = median(w->samples, w->n);
        w->winner_mean = mean_but_longest(w->samples, w->n);
        w->try_gap_ns = IDLE_CHOICE_TRY_MIN_NS;
        w->switches++;
    } else if (w->try_gap_ns < IDLE_CHOICE_TRY_MAX_NS) {
        w->try_gap_ns *= 2;
    }
    w->trying = false;
    w->n = 0;
    w->next_try_ns = now_ns + w->try_gap_ns;
}

static void record_try(struct mca_btl_devmem_idle_choice *w, uint64_t wait_ns, uint64_t now_ns)
{
    w->samples[w->n++] = wait_ns;
    w->try_sum += wait_ns;
    if (wait_ns >= bar(w)) {
        w->try_over++;
    }
    if (w->try_over > IDLE_CHOICE_EPOCH / 2 || wait_ns > IDLE_CHOICE_ABORT_FACTOR * w->winner_median
        || w->try_sum > IDLE_CHOICE_ABORT_EPOCHS * IDLE_CHOICE_EPOCH * w->winner_median) {
        end_try(w, false, now_ns);
    } else if (w->n == IDLE_CHOICE_EPOCH) {
        end_try(w, mean_but_longest(w->samples, w->n) < bar(w), now_ns);
    }
}

void mca_btl_devmem_idle_choice_untimed(struct mca_btl_devmem_idle_choice *w, uint64_t now_ns)
{
    if (w->trying && now_ns - w->try_start_ns >= IDLE_CHOICE_TRY_SPAN_NS) {
        end_try(w, false, now_ns);
    }
}

void mca_btl_devmem_idle_choice_record(struct mca_btl_devmem_idle_choice *w, uint64_t wait_ns,
                                       uint64_t now_ns)
{
    if (w->trying) {
        if (now_ns - w->try_start_ns >= IDLE_CHOICE_TRY_SPAN_NS) {
            end_try(w, false, now_ns);
        } else {
            record_try(w, wait_ns, now_ns);
        }
        return;
    }
    w->samples[w->n++] = wait_ns;
    if (w->n < IDLE_CHOICE_EPOCH) {
        return;
    }
    w->winner_median = median(w->samples, w->n);
    w->winner_mean = mean_but_longest(w->samples, w->n);
    w->n = 0;
    if (now_ns >= w->next_try_ns && w->winner_median > 0) {
        w->trying = true;
        w->try_over = 0;
        w->try_sum = 0;
        w->try_start_ns = now_ns;
        w->tries++;
    }
}
