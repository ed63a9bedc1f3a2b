/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory providers: the host provider round-trips data; udmabuf, cuda and drm either work
 * (and then round-trip data through a real dmabuf) or say why they cannot here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_config.h"
#include "dmabuf.h"

#include "check.h"

/* Allocate, write a pattern at an odd offset, read it back, release. */
static void round_trip(const struct devmem_provider *p, int want_dmabuf)
{
    struct devmem_region r;
    struct devmem_err err;
    unsigned char in[10000], out[10000];
    size_t i;
    int rc;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (unsigned char) (i * 7 + 3);
    }
    rc = devmem_region_alloc(&r, p, 100000, 0, &err);
    CHECK(0 == rc && r.size >= 100000 && 0 == r.size % devmem_page_size(),
          "%s: allocated %zu bytes (page multiple) (%s)", p->name, r.size, 0 == rc ? "" : err.msg);
    if (0 != rc) {
        return;
    }
    CHECK(want_dmabuf ? r.dmabuf_fd >= 0 : r.dmabuf_fd < 0, "%s: dmabuf fd %d", p->name,
          r.dmabuf_fd);
    memset(out, 0, sizeof(out));
    rc = r.provider->copy_in(&r, 4097, in, sizeof(in), &err);
    rc |= devmem_region_copy_out(&r, 4097, out, sizeof(out), &err);
    CHECK(0 == rc && 0 == memcmp(in, out, sizeof(in)), "%s: 10000 bytes round-trip at offset "
          "4097", p->name);
    rc = devmem_region_copy_out(&r, r.size - 10, out, 11, &err);
    CHECK(-ERANGE == rc, "%s: a copy past the end is refused (%s)", p->name, err.msg);
    devmem_region_release(&r);
    CHECK(NULL == r.provider && -1 == r.dmabuf_fd, "%s: released", p->name);
}

/* Either it works here (then it must round-trip) or it says why not. */
static void maybe(const struct devmem_provider *p, const char *reason_word)
{
    struct devmem_region r;
    struct devmem_err err;
    int rc = p->probe(&err);

    if (0 == rc) {
        printf("info %s is available here: testing it\n", p->name);
        round_trip(p, 1);
        return;
    }
    CHECK(rc < 0 && err.code == -rc && '\0' != err.msg[0] && NULL != strstr(err.msg, p->name),
          "%s: unavailable, says why: \"%s\"", p->name, err.msg);
    CHECK(NULL != strstr(err.msg, reason_word), "%s: the reason names \"%s\"", p->name,
          reason_word);
    rc = devmem_region_alloc(&r, p, 4096, 0, &err);
    CHECK(0 != rc && -1 == r.dmabuf_fd && NULL == r.provider,
          "%s: alloc fails cleanly too (%d)", p->name, rc);
}

int main(void)
{
    CHECK(&devmem_provider_host == devmem_provider_find("host") &&
              &devmem_provider_udmabuf == devmem_provider_find("udmabuf") &&
              &devmem_provider_cuda == devmem_provider_find("cuda") &&
              &devmem_provider_drm == devmem_provider_find("drm") &&
              NULL == devmem_provider_find("nope") && NULL == devmem_provider_find(NULL),
          "providers found by name");
    CHECK(0 == devmem_provider_host.probe(NULL), "host: always available");
    round_trip(&devmem_provider_host, 0);
    {
        struct devmem_region r;
        struct devmem_err err;

        size_t ps = devmem_page_size();
        unsigned char *mem = aligned_alloc(ps, 2 * ps), out[100];

        memset(mem, 0x3c, 2 * ps);
        mem[ps + 7] = 0xa5;
        CHECK(-EINVAL == devmem_provider_host.export_range(&r, 0, 4096, &err) &&
                  -EINVAL == devmem_provider_host.export_range(&r, (uintptr_t) mem + 1, ps,
                                                               &err),
              "host: a null or unaligned range is refused");
        CHECK(0 == devmem_provider_host.export_range(&r, (uintptr_t) mem, 2 * ps, &err) &&
                  -1 == r.dmabuf_fd && 0 == devmem_region_copy_out(&r, ps + 7, out, 2, &err) &&
                  0xa5 == out[0] && 0x3c == out[1],
              "host: a view of existing memory reads that memory (no dmabuf)");
        devmem_region_release(&r);
        CHECK(0xa5 == mem[ps + 7], "host: releasing a view leaves the memory alone");
        free(mem);
        CHECK(-EINVAL == devmem_region_alloc(&r, NULL, 4096, 0, &err) &&
                  -EINVAL == devmem_region_alloc(&r, &devmem_provider_host, 0, 0, &err),
              "region: no provider or zero size refused");
    }
    maybe(&devmem_provider_udmabuf, 0 == access("/dev/udmabuf", F_OK) ? "udmabuf" :
                                                                       "/dev/udmabuf");
    maybe(&devmem_provider_cuda, "cuda");
#ifdef HAVE_LIBDRM
    maybe(&devmem_provider_drm, "/dev/dri");
#else
    maybe(&devmem_provider_drm, "libdrm"); /* built without it: says so */
#endif

    return check_finish();
}
