/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface selection: if_include / if_exclude by name and CIDR of both families, bad
 * entries, the family picked per interface, the subnet test used to pair addresses, and the
 * socket-address round trips. Exit 0 pass, 1 fail.
 */
#include "sockets/btl_devmem_if.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static struct mca_btl_devmem_ip ip_of(const char *text)
{
    struct mca_btl_devmem_ip ip;
    memset(&ip, 0, sizeof(ip));
    ip.family = NULL != strchr(text, ':') ? AF_INET6 : AF_INET;
    inet_pton(ip.family, text, ip.a.bytes);
    return ip;
}

static struct mca_btl_devmem_if mk(const char *name, const char *addr, int prefix, bool lo)
{
    struct mca_btl_devmem_if i;
    memset(&i, 0, sizeof(i));
    snprintf(i.name, sizeof(i.name), "%s", name);
    i.ifindex = if_nametoindex(name) ? if_nametoindex(name) : (unsigned) (name[0] + name[1]);
    i.addr = ip_of(addr);
    i.prefix = (uint8_t) prefix;
    i.loopback = lo;
    return i;
}

/* The names (name/family) that a family choice keeps of a dual-stack set. */
static int pick(enum mca_btl_devmem_family family, char *out, size_t len)
{
    struct mca_btl_devmem_if ifs[7] = {
        mk("lo", "127.0.0.1", 8, true),
        mk("lo", "::1", 128, true),
        mk("eth0", "192.0.2.2", 24, false),
        mk("eth0", "fe80::1", 64, false),
        mk("v6only", "2001:db8::1", 64, false),
        mk("v6only", "fe80::2", 64, false),
        mk("llonly", "fe80::3", 64, false),
    };
    int n = mca_btl_devmem_if_pick_family(ifs, 7, family);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[MCA_BTL_DEVMEM_IP_STRLEN];
        snprintf(out + strlen(out), len - strlen(out), "%s/%s ", ifs[i].name,
                 mca_btl_devmem_ip_str(&ifs[i].addr, a, sizeof(a)));
    }
    return n;
}

static int sel(const char *inc, const char *exc, char *names, size_t len, char *why,
               char *unmatched)
{
    struct mca_btl_devmem_if ifs[4] = {
        mk("lo", "127.0.0.1", 8, true),
        mk("eth0", "192.0.2.2", 24, false),
        mk("veth7", "198.51.100.1", 24, false),
        mk("ib0", "10.1.2.3", 16, false),
    };
    int n = mca_btl_devmem_if_select(ifs, 4, inc, exc, why, 256, unmatched, 64);
    names[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(names, ifs[i].name, len - strlen(names) - 2);
        strncat(names, " ", len - strlen(names) - 1);
    }
    return n;
}

int main(void)
{
    char names[128], why[256], un[64];
    int n;

    n = sel("", "", names, sizeof(names), why, un);
    CHECK(4 == n, "no lists: all 4 interfaces (%s)", names);
    n = sel("eth0", "", names, sizeof(names), why, un);
    CHECK(1 == n && 0 == strcmp(names, "eth0 "), "include by name: %s", names);
    n = sel("198.51.100.0/24", "", names, sizeof(names), why, un);
    CHECK(1 == n && 0 == strcmp(names, "veth7 "), "include by CIDR: %s", names);
    n = sel(" lo , 10.0.0.0/8 ", "", names, sizeof(names), why, un);
    CHECK(2 == n && 0 == strcmp(names, "lo ib0 "), "include with spaces, name and CIDR: %s",
          names);
    n = sel("", "lo,192.0.2.0/24", names, sizeof(names), why, un);
    CHECK(2 == n && 0 == strcmp(names, "veth7 ib0 "), "exclude by name and CIDR: %s", names);
    n = sel("eth0", "lo", names, sizeof(names), why, un);
    CHECK(-EINVAL == n && NULL != strstr(why, "mutually exclusive"),
          "include and exclude together are refused: %s", why);
    n = sel("eth0,10.0.0.0/33", "", names, sizeof(names), why, un);
    CHECK(-EINVAL == n && NULL != strstr(why, "10.0.0.0/33"), "a bad prefix is refused: %s", why);
    n = sel("300.1.2.3/8", "", names, sizeof(names), why, un);
    CHECK(-EINVAL == n, "a bad address is refused: %s", why);
    n = sel("eth0,wlan9", "", names, sizeof(names), why, un);
    CHECK(1 == n && 0 == strcmp(un, "wlan9"), "an unmatched include entry is reported (%s)", un);
    n = sel("0.0.0.0/0", "", names, sizeof(names), why, un);
    CHECK(4 == n, "0.0.0.0/0 matches everything");

    /* IPv6 networks in the lists, beside IPv4 ones */
    {
        struct mca_btl_devmem_if v6[3] = {
            mk("eth0", "192.0.2.2", 24, false),
            mk("eth0", "2001:db8:1::2", 64, false),
            mk("veth7", "2001:db8:2::7", 64, false),
        };
        n = mca_btl_devmem_if_select(v6, 3, "2001:db8:1::/48", "", why, sizeof(why), un, 64);
        CHECK(1 == n && AF_INET6 == v6[0].addr.family && 0 == strcmp(v6[0].name, "eth0"),
              "include by IPv6 CIDR keeps eth0's IPv6 address only (%d)", n);
    }
    {
        struct mca_btl_devmem_if v6[3] = {
            mk("eth0", "192.0.2.2", 24, false),
            mk("eth0", "2001:db8:1::2", 64, false),
            mk("veth7", "2001:db8:2::7", 64, false),
        };
        n = mca_btl_devmem_if_select(v6, 3, "", "2001:db8::/32", why, sizeof(why), un, 64);
        CHECK(1 == n && AF_INET == v6[0].addr.family, "exclude by IPv6 CIDR keeps IPv4 (%d)", n);
    }
    n = sel("2001:db8::/129", "", names, sizeof(names), why, un);
    CHECK(-EINVAL == n && NULL != strstr(why, "2001:db8::/129"), "an IPv6 prefix over 128: %s",
          why);
    n = sel("2001:db8::/64", "", names, sizeof(names), why, un);
    CHECK(0 == n && 0 == strcmp(un, "2001:db8::/64"),
          "an IPv6 network matches no IPv4 address (unmatched: %s)", un);

    /* one family per interface */
    char kept[512];
    n = pick(MCA_BTL_DEVMEM_FAMILY_AUTO, kept, sizeof(kept));
    CHECK(4 == n && 0 == strcmp(kept, "lo/127.0.0.1 eth0/192.0.2.2 v6only/2001:db8::1 "
                                      "llonly/fe80::3 "),
          "auto: IPv4 where there is some, else global IPv6, else link-local: %s", kept);
    n = pick(MCA_BTL_DEVMEM_FAMILY_IPV4, kept, sizeof(kept));
    CHECK(2 == n && 0 == strcmp(kept, "lo/127.0.0.1 eth0/192.0.2.2 "), "ipv4: %s", kept);
    n = pick(MCA_BTL_DEVMEM_FAMILY_IPV6, kept, sizeof(kept));
    CHECK(4 == n && 0 == strcmp(kept, "lo/::1 eth0/fe80::1 v6only/2001:db8::1 llonly/fe80::3 "),
          "ipv6: link-local only where nothing better: %s", kept);

    /* subnets */
    struct mca_btl_devmem_ip a = ip_of("198.51.100.1"), b = ip_of("198.51.100.2");
    CHECK(mca_btl_devmem_ip_same_net(&a, &b, 24), "same /24");
    CHECK(!mca_btl_devmem_ip_same_net(&a, &b, 32), "different /32");
    b = ip_of("198.51.101.2");
    CHECK(!mca_btl_devmem_ip_same_net(&a, &b, 24) && mca_btl_devmem_ip_same_net(&a, &b, 16),
          "different /24, same /16");
    a = ip_of("2001:db8:0:1::1");
    b = ip_of("2001:db8:0:1:ffff::2");
    CHECK(mca_btl_devmem_ip_same_net(&a, &b, 64) && !mca_btl_devmem_ip_same_net(&a, &b, 65),
          "IPv6: same /64, different /65");
    b = ip_of("2001:db8:0:3::1");
    CHECK(mca_btl_devmem_ip_same_net(&a, &b, 62) && !mca_btl_devmem_ip_same_net(&a, &b, 63),
          "IPv6: a prefix not on a byte boundary (/62 same, /63 not)");
    b = ip_of("198.51.100.1");
    CHECK(!mca_btl_devmem_ip_same_net(&a, &b, 0), "never the same net across families");
    CHECK(mca_btl_devmem_ip_is_link_local(&(struct mca_btl_devmem_ip){0}) == false
              && mca_btl_devmem_ip_is_link_local(&(struct mca_btl_devmem_ip){
                  .family = AF_INET6, .a.bytes = {0xfe, 0x80}}),
          "fe80::/10 is link-local");

    /* socket addresses: the scope goes on link-local addresses only; v4-mapped is IPv4 */
    {
        struct sockaddr_storage ss;
        struct mca_btl_devmem_ip back;
        uint16_t port = 0;
        struct mca_btl_devmem_ip ll = ip_of("fe80::5");
        socklen_t len = mca_btl_devmem_ip_to_sockaddr(&ll, htons(4242), 7, &ss);
        CHECK(sizeof(struct sockaddr_in6) == len
                  && 7 == ((struct sockaddr_in6 *) &ss)->sin6_scope_id,
              "link-local: sockaddr_in6 with the scope");
        CHECK(0 == mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &ss, &back, &port)
                  && mca_btl_devmem_ip_equal(&back, &ll) && htons(4242) == port,
              "link-local round trip");
        len = mca_btl_devmem_ip_to_sockaddr(&a, htons(1), 7, &ss);
        CHECK(0 == ((struct sockaddr_in6 *) &ss)->sin6_scope_id, "global: no scope");
        struct sockaddr_in6 mapped = {.sin6_family = AF_INET6};
        inet_pton(AF_INET6, "::ffff:198.51.100.9", &mapped.sin6_addr);
        CHECK(0 == mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &mapped, &back, NULL)
                  && AF_INET == back.family
                  && mca_btl_devmem_ip_equal(&back, &(struct mca_btl_devmem_ip){
                      .family = AF_INET, .a.bytes = {198, 51, 100, 9}}),
              "a v4-mapped peer is its IPv4 address");
        struct sockaddr unix_sa = {.sa_family = AF_UNIX};
        CHECK(-EAFNOSUPPORT == mca_btl_devmem_ip_from_sockaddr(&unix_sa, &back, NULL),
              "other families are refused");
    }

    struct mca_btl_devmem_if found[MCA_BTL_DEVMEM_IF_MAX];
    n = mca_btl_devmem_if_discover(found, MCA_BTL_DEVMEM_IF_MAX);
    int have_lo = 0;
    for (int i = 0; i < n; i++) {
        struct mca_btl_devmem_ip lo4 = ip_of("127.0.0.1");
        have_lo |= found[i].loopback && mca_btl_devmem_ip_equal(&found[i].addr, &lo4)
                   && 8 == found[i].prefix;
    }
    CHECK(n > 0 && have_lo, "discovery lists %d interfaces including lo 127.0.0.1/8", n);

    return check_finish();
}
