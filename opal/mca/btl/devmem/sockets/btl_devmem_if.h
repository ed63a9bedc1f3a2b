/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface discovery and selection for btl_devmem: which local addresses (IPv4 and IPv6) the
 * component listens on and publishes. Plain C (no Open MPI types) so the include/exclude
 * rules and the address arithmetic are unit-tested alone.
 */
#ifndef MCA_BTL_DEVMEM_IF_H
#define MCA_BTL_DEVMEM_IF_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MCA_BTL_DEVMEM_IF_MAX 64

/* An IP address of either family. */
struct mca_btl_devmem_ip {
    uint8_t family; /* AF_INET or AF_INET6 */
    union {
        struct in_addr v4;
        struct in6_addr v6;
        uint8_t bytes[16];
    } a;
};

/* Bytes of the address: 4 or 16. */
static inline size_t mca_btl_devmem_ip_len(const struct mca_btl_devmem_ip *ip)
{
    return AF_INET == ip->family ? 4 : 16;
}

/* Longest text of an address, with room for "%ifname" after a link-local one. */
#define MCA_BTL_DEVMEM_IP_STRLEN (INET6_ADDRSTRLEN + IF_NAMESIZE + 1)

struct mca_btl_devmem_if {
    char name[IF_NAMESIZE];
    unsigned int ifindex;
    struct mca_btl_devmem_ip addr;
    uint8_t prefix; /* netmask length */
    bool loopback;
};

/* Which family each interface is used with (btl_devmem_family). */
enum mca_btl_devmem_family {
    MCA_BTL_DEVMEM_FAMILY_AUTO, /* IPv4 where an interface has it, else IPv6 */
    MCA_BTL_DEVMEM_FAMILY_IPV4,
    MCA_BTL_DEVMEM_FAMILY_IPV6,
};

/* Every IPv4 and IPv6 address on an interface that is up, in the kernel's order.
 * Returns the count, or -errno. */
int mca_btl_devmem_if_discover(struct mca_btl_devmem_if *out, int max);

/*
 * Does the interface match one entry of a comma-separated list of names or CIDR networks of
 * either family ("eth0,198.51.100.0/24,2001:db8::/32")? Returns 1 (match), 0 (no match), or
 * -EINVAL with a message in `why` when an entry cannot be parsed.
 */
int mca_btl_devmem_if_match(const struct mca_btl_devmem_if *itf, const char *list, char *why,
                            size_t whylen);

/*
 * Keep the interfaces that `include` names (all when it is empty) minus those `exclude`
 * names. Both lists set is a user error (they are mutually exclusive, as in btl/tcp).
 * Compacts `ifs` in place; returns the number kept, or -EINVAL with `why` filled in.
 * `unmatched` (may be NULL) receives the first include entry that matched nothing.
 */
int mca_btl_devmem_if_select(struct mca_btl_devmem_if *ifs, int n, const char *include,
                             const char *exclude, char *why, size_t whylen, char *unmatched,
                             size_t unmatchedlen);

/*
 * One family per interface, so that a dual-stack NIC is one path and not two: with AUTO an
 * interface keeps its IPv4 addresses if it has any, else its IPv6 ones; IPV4 and IPV6 keep
 * that family only. Of an interface's IPv6 addresses, link-local ones are kept only where it
 * has no global or unique-local one. Compacts `ifs` in place; returns the number kept.
 */
int mca_btl_devmem_if_pick_family(struct mca_btl_devmem_if *ifs, int n,
                                  enum mca_btl_devmem_family family);

/* Are two addresses of one family on the same network under a prefix length? */
bool mca_btl_devmem_ip_same_net(const struct mca_btl_devmem_ip *a,
                                const struct mca_btl_devmem_ip *b, uint8_t prefix);
bool mca_btl_devmem_ip_equal(const struct mca_btl_devmem_ip *a,
                             const struct mca_btl_devmem_ip *b);
bool mca_btl_devmem_ip_is_link_local(const struct mca_btl_devmem_ip *ip);

/*
 * To and from socket addresses. `scope` is the interface index a link-local IPv6 address is
 * reached through (0 otherwise). to_sockaddr returns the length to pass to bind or connect;
 * from_sockaddr returns 0, or -EAFNOSUPPORT for another family.
 */
socklen_t mca_btl_devmem_ip_to_sockaddr(const struct mca_btl_devmem_ip *ip, uint16_t port_net,
                                        unsigned int scope, struct sockaddr_storage *ss);
int mca_btl_devmem_ip_from_sockaddr(const struct sockaddr *sa, struct mca_btl_devmem_ip *ip,
                                    uint16_t *port_net);

/* The address as text (IPv6 without brackets); returns buf. */
const char *mca_btl_devmem_ip_str(const struct mca_btl_devmem_ip *ip, char *buf, size_t len);

#endif /* MCA_BTL_DEVMEM_IF_H */
