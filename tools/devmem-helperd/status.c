/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper's status text: one summary line (clients=N bindings=N rules=N), then one line
 * per interface it has bound on, one per binding, and what the policy allows the asker.
 * devmem-helperd --status prints it; devmem-probe shows it.
 */
#include "config.h"

#include "helperd.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *buf;
    size_t len, used;
    bool full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->full || o->len - o->used <= 5) {
        o->full = true;
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t) n >= o->len - o->used - 5) { /* room for the "...\n" mark */
        o->buf[o->used] = '\0';
        snprintf(o->buf + o->used, o->len - o->used, "...\n");
        o->full = true;
        return;
    }
    o->used += (size_t) n;
}

void hd_status_counts(const struct helperd *hd, unsigned int *bindings, unsigned int *rules,
                      unsigned int *contexts)
{
    *bindings = *rules = *contexts = 0;
    for (const struct hd_iface *itf = hd->ifaces; NULL != itf; itf = itf->next) {
        *bindings += itf->nbindings;
        *rules += itf->nrules;
        *contexts += itf->nctx;
    }
}

/* The pid whose RX binding holds queue q of itf; 0 when none. */
static pid_t queue_holder(const struct helperd *hd, const struct hd_iface *itf, unsigned int q)
{
    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        for (const struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            if (b->rx && b->itf == itf && q >= b->first_queue
                && q < b->first_queue + b->nqueues) {
                return c->pid;
            }
        }
    }
    return 0;
}

/* What holds queue q: a pid, or 0 with *what saying why none does. */
static pid_t queue_state(const struct helperd *hd, const struct hd_iface *itf, uint64_t foreign,
                         unsigned int q, const char **what)
{
    uint64_t bit = 1ull << (q - itf->pol->qlo);
    pid_t who = queue_holder(hd, itf, q);

    *what = 0 != who ? "pid" : 0 != (itf->stuck & bit) ? "held back"
                             : 0 != (foreign & bit) ? "stray rule" : "free";
    return who;
}

void hd_queue_holders(const struct helperd *hd, const struct hd_iface *itf, uint64_t foreign,
                      char *buf, size_t len)
{
    struct out o = {buf, len, 0, false};
    unsigned int q = itf->pol->qlo;

    buf[0] = '\0';
    while (q <= itf->pol->qhi) {
        const char *what, *next;
        pid_t who = queue_state(hd, itf, foreign, q, &what);
        unsigned int end = q;

        /* a run of queues in one state */
        while (end < itf->pol->qhi && queue_state(hd, itf, foreign, end + 1, &next) == who
               && 0 == strcmp(next, what)) {
            end++;
        }
        put(&o, "%s%u", q == itf->pol->qlo ? "" : ", ", q);
        if (end != q) {
            put(&o, "-%u", end);
        }
        if (0 != who) {
            put(&o, " pid %d", (int) who);
        } else {
            put(&o, " %s", what);
        }
        q = end + 1;
    }
}

static const char *hds_name(int v)
{
    return 2 == v ? "on" : 1 == v ? "off" : "unknown";
}

void hd_status_text(const struct helperd *hd, const struct hd_client *asker, char *buf,
                    size_t len)
{
    const struct hd_policy *p = &hd->policy;
    struct out o = {buf, len, 0, false};
    unsigned int nb, nr, nc;

    hd_status_counts(hd, &nb, &nr, &nc);
    buf[0] = '\0';
    put(&o, "clients=%u bindings=%u rules=%u contexts=%u kernel=%s served=%llu refused=%llu "
        "dropped=%llu\n", hd->nclients, nb, nr, nc, hd->be->name,
        (unsigned long long) hd->served, (unsigned long long) hd->refused,
        (unsigned long long) hd->dropped);
    {
        struct hd_closer_counts cc;

        /* what users passed that is still being closed: nonzero for long means a user whose
         * descriptors do not let go (a FUSE server that does not answer) */
        hd_closer_counts(&cc);
        put(&o, "closing: %zu queued, %zu in progress, %zu thread(s), %zu user(s) held back; "
            "%llu closed, %llu interrupted\n", cc.queued, cc.closing, cc.threads, cc.users,
            cc.closed, cc.nudges);
    }
    for (const struct hd_iface *itf = hd->ifaces; NULL != itf; itf = itf->next) {
        unsigned int used = 0;
        for (unsigned int q = 0; q < HD_QUEUES_MAX; q++) {
            used += 0 != (itf->busy & (1ull << q));
        }
        char holders[512];

        hd_queue_holders(hd, itf, 0, holders, sizeof(holders));
        put(&o, "interface %s: queues %u-%u, %u bound (%s); bindings=%u rules=%u contexts=%u",
            itf->name, itf->pol->qlo, itf->pol->qhi, used, holders, itf->nbindings,
            itf->nrules, itf->nctx);
        if (itf->hds_set || itf->rss_set || itf->ntuple_set || itf->rxbuf_set) {
            put(&o, "; changed:%s%s%s%s", itf->hds_set ? " header-split" : "",
                itf->rss_set ? " rss" : "", itf->ntuple_set ? " ntuple" : "",
                itf->rxbuf_set ? " rx-buf-len" : "");
        }
        if (itf->hds_set) {
            put(&o, " (header split was %s)", hds_name(itf->hds_was));
        }
        if (itf->rxbuf_set) {
            put(&o, " (rx-buf-len was %u)", (unsigned) itf->rxbuf_was);
        }
        if (0 != itf->rxbuf_in_use) {
            put(&o, "; rx-buf-len %u in use", (unsigned) itf->rxbuf_in_use);
        }
        if (itf->rxbuf_refused) {
            put(&o, "; policy's rx-buf-len not set (the log says why)");
        }
        if (0 != itf->ctx_stuck) {
            put(&o, "; %u RSS context(s) that would not go", itf->ctx_stuck);
        }
        if (0 != itf->stuck) {
            put(&o, "; queues held back by rules that would not go: mask 0x%llx",
                (unsigned long long) itf->stuck);
        }
        if ('\0' != itf->nic_note[0]) {
            put(&o, "; %s", itf->nic_note);
        }
        put(&o, "\n");
    }
    /* binding ids are what the kernel's TX weakness needs: a user sees only their own,
     * root (--status) sees all */
    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        if (NULL != asker && 0 != asker->uid && asker->uid != c->uid) {
            continue;
        }
        for (const struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            if (b->rx) {
                put(&o, "binding %u: RX on %s queues %u-%u, port %u, rule %u", b->id,
                    b->itf->name, b->first_queue, b->first_queue + b->nqueues - 1,
                    (unsigned) b->port, b->rule_id);
                if (0 != b->rss_ctx) {
                    put(&o, " into RSS context %u", b->rss_ctx);
                }
                put(&o, ", %llu bytes, pid %d uid %u\n", (unsigned long long) b->bytes,
                    (int) c->pid, (unsigned) c->uid);
            } else {
                put(&o, "binding %u: TX on %s, %llu bytes, pid %d uid %u\n", b->id,
                    b->itf->name, (unsigned long long) b->bytes, (int) c->pid,
                    (unsigned) c->uid);
            }
        }
    }
    if (NULL != asker) {
        put(&o, "policy for uid %u (%s):", (unsigned) asker->uid,
            '\0' != p->path[0] ? p->path : "built-in defaults");
        if (0 == p->nifaces) {
            put(&o, " no interface may be bound");
        }
        for (size_t i = 0; i < p->nifaces; i++) {
            put(&o, "%s %s queues %u-%u", 0 == i ? " interfaces" : ",", p->ifaces[i].name,
                p->ifaces[i].qlo, p->ifaces[i].qhi);
            if (0 != p->ifaces[i].rx_buf_len) {
                put(&o, " rx-buf-len %u", (unsigned) p->ifaces[i].rx_buf_len);
            }
        }
        put(&o, "; per user: max-bindings %u, max-rules %u, max-bytes %llu; per binding: "
            "max-queues %u; user-share %u%%; allow-tx %s; tx-shared %s; restore %s\n",
            p->max_bindings, p->max_rules, (unsigned long long) p->max_bytes, p->max_queues,
            p->user_share,
            p->allow_tx ? "yes" : "no",
            p->tx_shared ? "yes" : "no", p->restore ? "yes" : "no");
    }
}
