/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper's policy: the configuration file, and the decisions that depend on it alone.
 *
 * One setting per line, '#' starts a comment:
 *   interface NAME queues LO-HI [rx-buf-len SIZE]
 *                                  RX queues the helper may bind on NAME (repeatable), and the
 *                                  RX buffer length to ask NAME's driver for when it does
 *   allow-group GROUP...           only members may use the helper (root always may)
 *   socket-group GROUP             the socket's group (mode 0660); else root only (0600)
 *   max-clients N, max-clients-per-user N
 *   max-bindings N, max-rules N, max-bytes SIZE[K|M|G|T]   per user, over all connections
 *   user-share PERCENT             of an interface's queues one user may hold while another
 *                                  user holds some or asked for some in the last minute
 *   allow-tx yes|no                TX bindings at all (no: for nodes shared between users)
 *   tx-shared yes|no               TX bindings of two users on one device
 *   restore yes|no                 put NIC settings back when the last binding goes
 * Every value is checked; a bad line stops the helper from starting, with its number.
 */
#include "config.h"

#include "helperd.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void defaults(struct hd_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->max_clients = 1024;
    p->max_clients_per_user = 64;
    p->max_bindings = 16;
    p->max_rules = 16;
    p->max_queues = 16;
    p->user_share = 50;
    p->max_bytes = 64ull << 30;
    p->allow_tx = true;
    p->tx_shared = false;
    p->restore = true;
}

const char *hd_policy_where(const struct hd_policy *p, struct hd_origin at, char *buf,
                            size_t len)
{
    if (0 == at.line) {
        snprintf(buf, len, "built-in default");
    } else {
        snprintf(buf, len, "%s:%d", p->path, at.line);
    }
    return buf;
}

const struct hd_policy_iface *hd_policy_iface(const struct hd_policy *p, const char *name)
{
    for (size_t i = 0; i < p->nifaces; i++) {
        if (0 == strcmp(p->ifaces[i].name, name)) {
            return &p->ifaces[i];
        }
    }
    return NULL;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *v)
{
    char *end;

    if (NULL == s || !isdigit((unsigned char) s[0])) {
        return -EINVAL;
    }
    errno = 0;
    *v = strtoull(s, &end, 10);
    if (0 != errno || '\0' != *end || *v > max) {
        return -EINVAL;
    }
    return 0;
}

static int parse_size(const char *s, uint64_t *v)
{
    unsigned long long n;
    char *end;
    int shift = 0;

    if (NULL == s || !isdigit((unsigned char) s[0])) {
        return -EINVAL;
    }
    errno = 0;
    n = strtoull(s, &end, 10);
    if (0 != errno) {
        return -EINVAL;
    }
    switch (*end) {
    case '\0': break;
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    case 'T': case 't': shift = 40; break;
    default: return -EINVAL;
    }
    if ('\0' != *end && '\0' != end[1]) {
        return -EINVAL;
    }
    if (shift > 0 && n > (UINT64_MAX >> shift)) {
        return -EINVAL;
    }
    *v = (uint64_t) n << shift;
    return 0;
}

static int parse_bool(const char *s, bool *v)
{
    if (NULL != s && (0 == strcmp(s, "yes") || 0 == strcmp(s, "true") || 0 == strcmp(s, "1"))) {
        *v = true;
        return 0;
    }
    if (NULL != s && (0 == strcmp(s, "no") || 0 == strcmp(s, "false") || 0 == strcmp(s, "0"))) {
        *v = false;
        return 0;
    }
    return -EINVAL;
}

static int parse_group(const char *s, gid_t *gid)
{
    struct group *g = getgrnam(s);
    unsigned long long n;

    if (NULL != g) {
        *gid = g->gr_gid;
        return 0;
    }
    if (0 == parse_uint(s, UINT_MAX - 1, &n)) {
        *gid = (gid_t) n;
        return 0;
    }
    return -ENOENT;
}

/* "LO-HI" or "N" */
static int parse_range(const char *s, unsigned int *lo, unsigned int *hi)
{
    char first[32];
    const char *dash = NULL != s ? strchr(s, '-') : NULL;
    unsigned long long a, b;

    if (NULL == s) {
        return -EINVAL;
    }
    if (NULL == dash) {
        if (0 != parse_uint(s, 1u << 20, &a)) {
            return -EINVAL;
        }
        *lo = *hi = (unsigned int) a;
        return 0;
    }
    if ((size_t) (dash - s) >= sizeof(first)) {
        return -EINVAL;
    }
    memcpy(first, s, (size_t) (dash - s));
    first[dash - s] = '\0';
    if (0 != parse_uint(first, 1u << 20, &a) || 0 != parse_uint(dash + 1, 1u << 20, &b)
        || a > b) {
        return -EINVAL;
    }
    *lo = (unsigned int) a;
    *hi = (unsigned int) b;
    return 0;
}

#define WORDS_MAX 40

static int apply_line(struct hd_policy *p, char **w, int nw, int line, struct devmem_err *err)
{
    const char *key = w[0];
    unsigned long long n;
    struct hd_origin at = {line};

#define BAD(...) devmem_err_set(err, EINVAL, __VA_ARGS__)
    if (0 == strcmp(key, "interface")) {
        struct hd_policy_iface *pi;

        if ((4 != nw && 6 != nw) || 0 != strcmp(w[2], "queues")
            || (6 == nw && 0 != strcmp(w[4], "rx-buf-len"))) {
            return BAD("%s:%d: expected \"interface NAME queues LO-HI [rx-buf-len SIZE]\"",
                       p->path, line);
        }
        if (strlen(w[1]) >= DEVMEM_HELPER_IFNAME || NULL != hd_policy_iface(p, w[1])) {
            return BAD("%s:%d: interface \"%s\" is too long or listed twice", p->path, line,
                       w[1]);
        }
        if (p->nifaces == HD_POLICY_IFACES) {
            return BAD("%s:%d: more than %d interfaces", p->path, line, HD_POLICY_IFACES);
        }
        pi = &p->ifaces[p->nifaces];
        if (0 != parse_range(w[3], &pi->qlo, &pi->qhi) || pi->qhi - pi->qlo >= HD_QUEUES_MAX) {
            return BAD("%s:%d: queue range \"%s\": LO-HI with at most %d queues", p->path, line,
                       w[3], HD_QUEUES_MAX);
        }
        pi->rx_buf_len = 0;
        if (6 == nw) {
            uint64_t v = 0;

            if (0 != parse_size(w[5], &v) || v < HD_RX_BUF_LEN_MIN || v > HD_RX_BUF_LEN_MAX
                || 0 != (v & (v - 1))) {
                return BAD("%s:%d: rx-buf-len \"%s\": a power of two from %uK to %uK bytes",
                           p->path, line, w[5], HD_RX_BUF_LEN_MIN >> 10,
                           HD_RX_BUF_LEN_MAX >> 10);
            }
            pi->rx_buf_len = (uint32_t) v;
        }
        strcpy(pi->name, w[1]);
        pi->at = at;
        p->nifaces++;
        return 0;
    }
    if (0 == strcmp(key, "allow-group")) {
        if (nw < 2) {
            return BAD("%s:%d: allow-group needs at least one group", p->path, line);
        }
        for (int i = 1; i < nw; i++) {
            if (p->nallow == HD_POLICY_GROUPS) {
                return BAD("%s:%d: more than %d allowed groups", p->path, line,
                           HD_POLICY_GROUPS);
            }
            if (0 != parse_group(w[i], &p->allow_gids[p->nallow])) {
                return BAD("%s:%d: no group \"%s\"", p->path, line, w[i]);
            }
            p->nallow++;
        }
        p->allow_at = at;
        return 0;
    }
    if (2 != nw) {
        return BAD("%s:%d: \"%s\" takes one value", p->path, line, key);
    }
    if (0 == strcmp(key, "socket-group")) {
        if (0 != parse_group(w[1], &p->socket_gid)) {
            return BAD("%s:%d: no group \"%s\"", p->path, line, w[1]);
        }
        p->has_socket_group = true;
        p->socket_group_at = at;
        return 0;
    }
    if (0 == strcmp(key, "user-share")) {
        char *pct = strchr(w[1], '%');

        if (NULL != pct && '\0' == pct[1]) {
            *pct = '\0';
        }
        if (0 != parse_uint(w[1], 100, &n) || 0 == n) {
            return BAD("%s:%d: user-share \"%s\": a percentage from 1%% to 100%%", p->path,
                       line, w[1]);
        }
        p->user_share = (unsigned int) n;
        p->user_share_at = at;
        return 0;
    }
    if (0 == strcmp(key, "max-bytes")) {
        if (0 != parse_size(w[1], &p->max_bytes)) {
            return BAD("%s:%d: max-bytes \"%s\": a size such as 512M or 64G", p->path, line,
                       w[1]);
        }
        p->max_bytes_at = at;
        return 0;
    }
    {
        static const struct {
            const char *key;
            size_t val, at;
        } flags[] = {
            {"allow-tx", offsetof(struct hd_policy, allow_tx),
             offsetof(struct hd_policy, allow_tx_at)},
            {"tx-shared", offsetof(struct hd_policy, tx_shared),
             offsetof(struct hd_policy, tx_shared_at)},
            {"restore", offsetof(struct hd_policy, restore), offsetof(struct hd_policy, restore_at)},
        };
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
            if (0 == strcmp(key, flags[i].key)) {
                if (0 != parse_bool(w[1], (bool *) ((char *) p + flags[i].val))) {
                    return BAD("%s:%d: %s takes yes or no", p->path, line, key);
                }
                *(struct hd_origin *) ((char *) p + flags[i].at) = at;
                return 0;
            }
        }
    }
    {
        static const struct {
            const char *key;
            size_t val, at;
        } counts[] = {
            {"max-clients", offsetof(struct hd_policy, max_clients),
             offsetof(struct hd_policy, max_clients_at)},
            {"max-clients-per-user", offsetof(struct hd_policy, max_clients_per_user),
             offsetof(struct hd_policy, max_clients_per_user_at)},
            {"max-bindings", offsetof(struct hd_policy, max_bindings),
             offsetof(struct hd_policy, max_bindings_at)},
            {"max-rules", offsetof(struct hd_policy, max_rules),
             offsetof(struct hd_policy, max_rules_at)},
            {"max-queues", offsetof(struct hd_policy, max_queues),
             offsetof(struct hd_policy, max_queues_at)},
        };
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
            if (0 == strcmp(key, counts[i].key)) {
                if (0 != parse_uint(w[1], 1u << 20, &n)) {
                    return BAD("%s:%d: %s \"%s\": a count up to %u", p->path, line, key, w[1],
                               1u << 20);
                }
                *(unsigned int *) ((char *) p + counts[i].val) = (unsigned int) n;
                *(struct hd_origin *) ((char *) p + counts[i].at) = at;
                return 0;
            }
        }
    }
    return BAD("%s:%d: unknown setting \"%s\"", p->path, line, key);
#undef BAD
}

int hd_policy_load(struct hd_policy *p, const char *path, struct devmem_err *err)
{
    FILE *f;
    char buf[1024];
    int line = 0, rc = 0;

    defaults(p);
    if (NULL == path) {
        return 0;
    }
    snprintf(p->path, sizeof(p->path), "%s", path);
    if (NULL == (f = fopen(path, "re"))) {
        return devmem_err_set(err, errno, "%s: %s", path, strerror(errno));
    }
    while (0 == rc && NULL != fgets(buf, sizeof(buf), f)) {
        char *w[WORDS_MAX], *save = NULL, *hash = strchr(buf, '#');
        int nw = 0;

        line++;
        if (NULL == strchr(buf, '\n') && !feof(f)) {
            rc = devmem_err_set(err, EINVAL, "%s:%d: line longer than %zu bytes", path, line,
                                sizeof(buf) - 2);
            break;
        }
        if (NULL != hash) {
            *hash = '\0';
        }
        for (char *t = strtok_r(buf, " \t\r\n", &save); NULL != t;
             t = strtok_r(NULL, " \t\r\n", &save)) {
            if (WORDS_MAX == nw) {
                rc = devmem_err_set(err, EINVAL, "%s:%d: more than %d words", path, line,
                                    WORDS_MAX);
                break;
            }
            w[nw++] = t;
        }
        if (0 == rc && nw > 0) {
            rc = apply_line(p, w, nw, line, err);
        }
    }
    fclose(f);
    return rc;
}

int hd_policy_check_user(const struct hd_policy *p, uid_t uid, gid_t gid,
                         struct devmem_err *err)
{
    gid_t groups[256];
    int ngroups = (int) (sizeof(groups) / sizeof(groups[0]));
    struct passwd *pw;
    char where[300];

    if (0 == uid || 0 == p->nallow) {
        return 0;
    }
    groups[0] = gid;
    if (NULL != (pw = getpwuid(uid))) {
        if (getgrouplist(pw->pw_name, gid, groups, &ngroups) < 0) {
            ngroups = (int) (sizeof(groups) / sizeof(groups[0])); /* the first ones */
        }
    } else {
        ngroups = 1;
    }
    for (int i = 0; i < ngroups; i++) {
        for (size_t j = 0; j < p->nallow; j++) {
            if (groups[i] == p->allow_gids[j]) {
                return 0;
            }
        }
    }
    return devmem_err_set(err, EACCES, "refused by policy (allow-group, %s): uid %u is in none "
                          "of the allowed groups",
                          hd_policy_where(p, p->allow_at, where, sizeof(where)),
                          (unsigned) uid);
}
