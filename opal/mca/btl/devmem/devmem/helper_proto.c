/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper protocol's codec (see helper_proto.h).
 */
#include "helper_proto.h"

#include <errno.h>
#include <string.h>

size_t devmem_helper_fds(uint16_t type)
{
    switch (type) {
    case DEVMEM_HELPER_BIND_RX: return 2;
    case DEVMEM_HELPER_BIND_TX: return 1;
    default: return 0;
    }
}

/* The body size a type must have; 0 for STATUS_TEXT (variable), -1 for an unknown type. */
static long body_size(uint16_t type)
{
    switch (type) {
    case DEVMEM_HELPER_HELLO: return sizeof(struct devmem_helper_hello);
    case DEVMEM_HELPER_BIND_RX: return sizeof(struct devmem_helper_bind_rx);
    case DEVMEM_HELPER_BIND_TX: return sizeof(struct devmem_helper_bind_tx);
    case DEVMEM_HELPER_RELEASE: return sizeof(struct devmem_helper_release);
    case DEVMEM_HELPER_STATUS: return 0;
    case DEVMEM_HELPER_REPLY: return sizeof(struct devmem_helper_reply);
    case DEVMEM_HELPER_ERROR: return sizeof(struct devmem_helper_error);
    case DEVMEM_HELPER_STATUS_TEXT: return 0;
    default: return -1;
    }
}

/* An interface name: 1..15 bytes then NUL padding; none of '/', ':', space or control. */
static int check_ifname(const char *name, struct devmem_err *err)
{
    size_t n = strnlen(name, DEVMEM_HELPER_IFNAME);

    if (0 == n || DEVMEM_HELPER_IFNAME == n) {
        return devmem_err_set(err, EPROTO, "helper protocol: interface name %s",
                              0 == n ? "empty" : "not terminated");
    }
    if (0 == strcmp(name, ".") || 0 == strcmp(name, "..")) {
        return devmem_err_set(err, EPROTO, "helper protocol: interface name \"%s\"", name);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) name[i];
        if (c <= ' ' || c >= 0x7f || '/' == c || ':' == c) {
            return devmem_err_set(err, EPROTO, "helper protocol: byte 0x%02x at %zu of the "
                                  "interface name", c, i);
        }
    }
    for (size_t i = n; i < DEVMEM_HELPER_IFNAME; i++) {
        if ('\0' != name[i]) {
            return devmem_err_set(err, EPROTO, "helper protocol: bytes after the interface "
                                  "name's end");
        }
    }
    return 0;
}

/* Printable text (and newlines), NUL-terminated within len, NUL padding after it. */
static int check_text(const char *text, size_t len, const char *what, struct devmem_err *err)
{
    size_t n = strnlen(text, len);

    if (n == len) {
        return devmem_err_set(err, EPROTO, "helper protocol: %s not terminated", what);
    }
    for (size_t i = n; i < len; i++) {
        if ('\0' != text[i]) {
            return devmem_err_set(err, EPROTO, "helper protocol: bytes after the end of the %s",
                                  what);
        }
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) text[i];
        if ((c < ' ' && '\n' != c) || 0x7f == c) {
            return devmem_err_set(err, EPROTO, "helper protocol: byte 0x%02x in the %s", c,
                                  what);
        }
    }
    return 0;
}

static int check_body(struct devmem_helper_msg *m, size_t len, struct devmem_err *err)
{
    switch (m->type) {
    case DEVMEM_HELPER_HELLO:
        if (0 != m->body.hello.reserved || 0 == m->body.hello.min_version
            || m->body.hello.min_version > m->body.hello.max_version) {
            return devmem_err_set(err, EPROTO, "helper protocol: hello offers versions %u..%u",
                                  m->body.hello.min_version, m->body.hello.max_version);
        }
        return 0;
    case DEVMEM_HELPER_BIND_RX:
        if (0 != (m->body.bind_rx.flags & ~DEVMEM_HELPER_RX_FLAGS)
            || m->body.bind_rx.sharers > DEVMEM_HELPER_SHARERS_MAX) {
            return devmem_err_set(err, EPROTO, "helper protocol: bind-rx with flags 0x%x, %u "
                                  "sharers (at most %d)", m->body.bind_rx.flags,
                                  m->body.bind_rx.sharers, DEVMEM_HELPER_SHARERS_MAX);
        }
        if (0 == m->body.bind_rx.nqueues || m->body.bind_rx.nqueues > DEVMEM_HELPER_QUEUES_MAX) {
            return devmem_err_set(err, EPROTO, "helper protocol: bind-rx asks for %u queues "
                                  "(1..%d)", m->body.bind_rx.nqueues, DEVMEM_HELPER_QUEUES_MAX);
        }
        return check_ifname(m->body.bind_rx.ifname, err);
    case DEVMEM_HELPER_BIND_TX:
        return check_ifname(m->body.bind_tx.ifname, err);
    case DEVMEM_HELPER_RELEASE:
        if (0 != m->body.release.reserved || 0 == m->body.release.binding_id) {
            return devmem_err_set(err, EPROTO, "helper protocol: release of binding %u",
                                  m->body.release.binding_id);
        }
        return 0;
    case DEVMEM_HELPER_REPLY:
        if (0 != m->body.reply.reserved || m->body.reply.version > DEVMEM_HELPER_VERSION
            || (0 != m->body.reply.version && m->body.reply.version < DEVMEM_HELPER_VERSION_MIN)
            || m->body.reply.nqueues > DEVMEM_HELPER_QUEUES_MAX
            || m->body.reply.first_queue > UINT32_MAX - m->body.reply.nqueues) {
            return devmem_err_set(err, EPROTO, "helper protocol: a reply with version %u, "
                                  "queues %u+%u", m->body.reply.version,
                                  m->body.reply.first_queue, m->body.reply.nqueues);
        }
        return 0;
    case DEVMEM_HELPER_ERROR:
        if (0 != m->body.error.reserved || m->body.error.code <= 0
            || m->body.error.code > 4095) {
            return devmem_err_set(err, EPROTO, "helper protocol: error code %d",
                                  m->body.error.code);
        }
        return check_text(m->body.error.msg, sizeof(m->body.error.msg), "error text", err);
    case DEVMEM_HELPER_STATUS_TEXT:
        if (0 == len) {
            return devmem_err_set(err, EPROTO, "helper protocol: empty status text");
        }
        if ('\0' != m->body.text[len - 1] || strlen(m->body.text) != len - 1) {
            return devmem_err_set(err, EPROTO, "helper protocol: status text not ended by "
                                  "its one NUL");
        }
        return check_text(m->body.text, len, "status text", err);
    default: /* STATUS: no body */
        return 0;
    }
}

ssize_t devmem_helper_parse(const void *buf, size_t len, size_t nfds,
                            struct devmem_helper_msg *out, struct devmem_err *err)
{
    struct devmem_helper_hdr h;
    long want;

    if (len < sizeof(h)) {
        return 0;
    }
    memcpy(&h, buf, sizeof(h));
    if (DEVMEM_HELPER_MAGIC != h.magic) {
        return devmem_err_set(err, EPROTO, "helper protocol: bad magic 0x%08x", h.magic);
    }
    if (DEVMEM_HELPER_FRAMING != h.version) {
        return devmem_err_set(err, EPROTO, "helper protocol: framing version %u, this side "
                              "speaks %d", h.version, DEVMEM_HELPER_FRAMING);
    }
    if ((want = body_size(h.type)) < 0) {
        return devmem_err_set(err, EPROTO, "helper protocol: unknown message type %u", h.type);
    }
    if (DEVMEM_HELPER_STATUS_TEXT == h.type ? h.length > DEVMEM_HELPER_BODY_MAX
                                            : h.length != (uint32_t) want) {
        return devmem_err_set(err, EPROTO, "helper protocol: a type %u body of %u bytes",
                              h.type, h.length);
    }
    if (nfds != devmem_helper_fds(h.type)) {
        return devmem_err_set(err, EPROTO, "helper protocol: type %u came with %zu file "
                              "descriptors, it takes %zu", h.type, nfds,
                              devmem_helper_fds(h.type));
    }
    if (len - sizeof(h) < h.length) {
        return 0;
    }
    memset(out, 0, sizeof(*out));
    out->type = h.type;
    out->seq = h.seq;
    memcpy(&out->body, (const char *) buf + sizeof(h), h.length);
    if (0 != check_body(out, h.length, err)) {
        return -EPROTO;
    }
    return (ssize_t) (sizeof(h) + h.length);
}

ssize_t devmem_helper_build(void *buf, size_t cap, uint16_t type, uint32_t seq,
                            const void *body, size_t body_len)
{
    struct devmem_helper_hdr h = {DEVMEM_HELPER_MAGIC, DEVMEM_HELPER_FRAMING, type, seq,
                                  (uint32_t) body_len};
    struct devmem_helper_msg check;
    long want = body_size(type);

    if (want < 0 || body_len > DEVMEM_HELPER_BODY_MAX
        || (DEVMEM_HELPER_STATUS_TEXT != type && body_len != (size_t) want)) {
        return -EINVAL;
    }
    if (cap < sizeof(h) + body_len) {
        return -ENOBUFS;
    }
    memcpy(buf, &h, sizeof(h));
    if (body_len > 0) {
        memcpy((char *) buf + sizeof(h), body, body_len);
    }
    /* never put on the wire what the other side would refuse */
    if (devmem_helper_parse(buf, sizeof(h) + body_len, devmem_helper_fds(type), &check, NULL)
        <= 0) {
        return -EINVAL;
    }
    return (ssize_t) (sizeof(h) + body_len);
}
