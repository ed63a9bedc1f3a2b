/*
 * Interface discovery and selection for btl_devmem: which local IPv4 addresses the
 * component listens on and publishes. Plain C (no Open MPI types) so the include/exclude
 * rules are unit-tested alone.
 */
#ifndef MCA_BTL_DEVMEM_IF_H
#define MCA_BTL_DEVMEM_IF_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCA_BTL_DEVMEM_IF_MAX 64

struct mca_btl_devmem_if {
    char name[IF_NAMESIZE];
    unsigned int ifindex;
    uint32_t addr;  /* IPv4, network byte order */
    uint8_t prefix; /* netmask length */
    bool loopback;
};

/* Every IPv4 address on an interface that is up, in the kernel's order.
 * Returns the count, or -errno. */
int mca_btl_devmem_if_discover(struct mca_btl_devmem_if *out, int max);

/*
 * Does the interface match one entry of a comma-separated list of names or IPv4 CIDR
 * networks ("eth0,198.51.100.0/24")? Returns 1 (match), 0 (no match), or -EINVAL with a
 * message in `why` when an entry cannot be parsed.
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

/* Are two IPv4 addresses (network order) on the same network under a prefix length? */
bool mca_btl_devmem_if_same_net(uint32_t a, uint32_t b, uint8_t prefix);

#endif /* MCA_BTL_DEVMEM_IF_H */
