/*
 * Interface selection: if_include / if_exclude by name and CIDR, bad entries, and the
 * subnet test used to pair addresses. Exit 0 pass, 1 fail.
 */
#include "btl_devmem_if.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static struct mca_btl_devmem_if mk(const char *name, const char *addr, int prefix, bool lo)
{
    struct mca_btl_devmem_if i;
    memset(&i, 0, sizeof(i));
    snprintf(i.name, sizeof(i.name), "%s", name);
    inet_pton(AF_INET, addr, &i.addr);
    i.prefix = (uint8_t) prefix;
    i.loopback = lo;
    return i;
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

    uint32_t a, b;
    inet_pton(AF_INET, "198.51.100.1", &a);
    inet_pton(AF_INET, "198.51.100.2", &b);
    CHECK(mca_btl_devmem_if_same_net(a, b, 24), "same /24");
    CHECK(!mca_btl_devmem_if_same_net(a, b, 32), "different /32");
    inet_pton(AF_INET, "198.51.101.2", &b);
    CHECK(!mca_btl_devmem_if_same_net(a, b, 24) && mca_btl_devmem_if_same_net(a, b, 16),
          "different /24, same /16");

    struct mca_btl_devmem_if found[MCA_BTL_DEVMEM_IF_MAX];
    n = mca_btl_devmem_if_discover(found, MCA_BTL_DEVMEM_IF_MAX);
    int have_lo = 0;
    for (int i = 0; i < n; i++) {
        have_lo |= found[i].loopback && 0x0100007f == found[i].addr && 8 == found[i].prefix;
    }
    CHECK(n > 0 && have_lo, "discovery lists %d interfaces including lo 127.0.0.1/8", n);

    return check_finish();
}
