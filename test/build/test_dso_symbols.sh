#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed component exports nothing outside mca_btl_devmem_: the kernel layer's
# devmem_* functions and the component's own stay inside the DSO (hidden visibility), as
# btl/tcp keeps its own, so that nothing of ours can clash with a program or another library
# loaded beside it. The tools and tests link the kernel layer statically and are not
# concerned.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

dso=$DEVMEM_PREFIX/lib/openmpi/mca_btl_devmem.so
[ -f "$dso" ] || devmem_skip "no installed component at $dso (make install)"
command -v nm >/dev/null || devmem_skip "no nm (binutils)"
all=$(nm -D --defined-only "$dso" | awk 'NF == 3 { print $3 }')
n=$(wc -l <<<"$all")
others=$(grep -v -e '^mca_btl_devmem_' -e '^_init$' -e '^_fini$' <<<"$all")
if ! grep -qx 'mca_btl_devmem_component' <<<"$all"; then
    devmem_step_fail "the DSO does not export mca_btl_devmem_component: Open MPI cannot load it"
elif [ -n "$others" ]; then
    devmem_step_fail "the DSO exports $(wc -l <<<"$others") symbol(s) outside mca_btl_devmem_: $(head -5 <<<"$others" | tr '\n' ' ')..."
else
    devmem_step_ok "the DSO exports $n symbol(s), all mca_btl_devmem_* ($(tr '\n' ' ' <<<"$all"| cut -c1-80))"
fi
devmem_finish
