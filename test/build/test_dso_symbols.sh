#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed component exports nothing outside mca_btl_devmem_: the kernel layer's
# devmem_* functions and the component's own stay inside the DSO (hidden visibility), as
# btl/tcp keeps its own, so that nothing of ours can clash with a program or another library
# loaded beside it; the emulated kernel's library exports its entry alone. The tools and
# tests link the kernel layer statically and are not concerned.
#
# With DEVMEM_COMPONENT_FROM_OMPI=1 the component is the one built inside Open MPI's tree:
# a DSO in Open MPI's component directory, or (Open MPI 5 and later by default) linked into
# libopen-pal.so, where every MPI program sees its exports: that library must then export no
# devmem_* symbol and nothing with btl_devmem in its name outside mca_btl_devmem_.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

command -v nm >/dev/null || devmem_skip "no nm (binutils)"

check_dso() { # DSO
    local all n others
    all=$(nm -D --defined-only "$1" | awk 'NF == 3 { print $3 }')
    n=$(wc -l <<<"$all")
    others=$(grep -v -e '^mca_btl_devmem_' -e '^_init$' -e '^_fini$' <<<"$all")
    if ! grep -qx 'mca_btl_devmem_component' <<<"$all"; then
        devmem_step_fail "$1 does not export mca_btl_devmem_component: Open MPI cannot load it"
    elif [ -n "$others" ]; then
        devmem_step_fail "$1 exports $(wc -l <<<"$others") symbol(s) outside mca_btl_devmem_:" \
            "$(head -5 <<<"$others" | tr '\n' ' ')..."
    else
        devmem_step_ok "$1 exports $n symbol(s), all mca_btl_devmem_*" \
            "($(tr '\n' ' ' <<<"$all" | cut -c1-80))"
    fi
}

# The component linked into Open MPI's own library.
check_linked_in() { # LIBRARY
    local ours leaked
    if ! ompi_info --parsable 2>/dev/null | grep -q '^mca:btl:devmem:'; then
        devmem_step_fail "Open MPI has no btl devmem component (ompi_info), neither as a DSO" \
            "in $DEVMEM_OMPI_PKGLIBDIR nor linked into its libraries"
        return
    fi
    ours=$(nm -D --defined-only "$1" | awk 'NF == 3 { print $3 }' |
        grep -e '^devmem_' -e 'btl_devmem')
    leaked=$(grep -v '^mca_btl_devmem_' <<<"$ours" | grep -v '^$')
    if [ -n "$leaked" ]; then
        devmem_step_fail "$1 exports $(wc -l <<<"$leaked") symbol(s) of the component" \
            "outside mca_btl_devmem_: $(head -5 <<<"$leaked" | tr '\n' ' ')..."
    else
        devmem_step_ok "the component is linked into $1, which exports" \
            "$(grep -c . <<<"$ours") of its symbols, all mca_btl_devmem_*"
    fi
}

if [ "${DEVMEM_COMPONENT_FROM_OMPI:-0}" = 1 ]; then
    dso=$DEVMEM_OMPI_PKGLIBDIR/mca_btl_devmem.so
    libdir=$(ompi_info --path libdir 2>/dev/null | sed -e 's/.*: *//')
    if [ -f "$dso" ]; then
        check_dso "$dso"
    elif [ -f "$libdir/libopen-pal.so" ]; then
        check_linked_in "$libdir/libopen-pal.so"
    else
        devmem_skip "Open MPI has neither $dso nor $libdir/libopen-pal.so"
    fi
else
    dso=$DEVMEM_PREFIX/lib/openmpi/mca_btl_devmem.so
    [ -f "$dso" ] || devmem_skip "no installed component at $dso (make install)"
    check_dso "$dso"
    # the emulated kernel's library, which the component loads when asked for: its entry only
    emul=$DEVMEM_PREFIX/lib/btl_devmem/devmem_emul.so
    all=$(nm -D --defined-only "$emul" 2>/dev/null | awk 'NF == 3 && $3 != "_init" && $3 != "_fini" { print $3 }')
    if [ "$all" = devmem_emulated ]; then
        devmem_step_ok "$emul exports its entry alone (devmem_emulated)"
    else
        devmem_step_fail "$emul exports [$(tr '\n' ' ' <<<"$all" | cut -c1-200)], want devmem_emulated alone"
    fi
fi
devmem_finish
