#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The component's Makefile.am lists the kernel layer's files again for the build inside an
# Open MPI tree (kernel_sources); devmem/Makefile.am has them for this project's build
# (libdevmem_la_SOURCES). The two lists must name the same files, and every source file of
# devmem/ must be on them: a file added to one build only would break the other. And the
# kernel layer must compile as the build inside Open MPI's tree compiles it (DEVMEM_IN_OMPI_TREE,
# none of the install directories this project's build gives it), warnings as errors.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"

dir=$DEVMEM_SRC/opal/mca/btl/devmem
# the words of a Makefile.am variable, continuation lines joined
words_of() { # FILE VARIABLE
    awk -v v="$2" '
        $0 ~ "^" v " *=" { on = 1; sub("^" v " *=", "") }
        on { cont = sub(/\\$/, ""); print; if (!cont) exit }' "$1" | tr -s ' \t' '\n' | grep -v '^$'
}
tree=$(words_of "$dir/Makefile.am" kernel_sources | sed 's|^devmem/||' | sort)
own=$(words_of "$dir/devmem/Makefile.am" libdevmem_la_SOURCES | sort)
files=$(cd "$dir/devmem" && ls -- *.c *.h | sort)

if [ -n "$tree" ] && [ "$tree" = "$own" ]; then
    devmem_step_ok "kernel_sources and libdevmem_la_SOURCES name the same $(echo "$own" | wc -l) files"
else
    devmem_step_fail "kernel_sources and libdevmem_la_SOURCES differ:"
    diff <(echo "$tree") <(echo "$own") | sed 's/^/    /'
fi
if [ "$files" = "$own" ]; then
    devmem_step_ok "every .c and .h file of devmem/ is built"
else
    devmem_step_fail "devmem/ and libdevmem_la_SOURCES differ:"
    diff <(echo "$files") <(echo "$own") | sed 's/^/    /'
fi
# as configure.m4 sets them there
flags="-DDEVMEM_IN_OMPI_TREE -I$dir/devmem"
for lib in libmnl:HAVE_LIBMNL libdrm:HAVE_LIBDRM "hwloc >= 2.0":HAVE_HWLOC; do
    if pkg-config --exists "${lib%%:*}"; then
        flags="$flags -D${lib##*:}=1 $(pkg-config --cflags "${lib%%:*}")"
    fi
done
bad=
for f in "$dir"/devmem/*.c; do
    out=$(${CC:-cc} -c -o /dev/null -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
        -Wno-missing-field-initializers -Werror $flags "$f" 2>&1) || bad="$bad
$(echo "$out" | head -5 | sed 's/^/    /')"
done
if [ -z "$bad" ]; then
    devmem_step_ok "devmem/*.c compile as inside Open MPI's tree, without a warning"
else
    devmem_step_fail "devmem/ inside Open MPI's tree:$bad"
fi
devmem_finish
