#!/usr/bin/env bash
# btl_devmem quickstart, for a Debian 12 machine (run as root, or with sudo for apt).
#
#   contrib/quickstart.sh demo    install what is missing, build, run a 2-rank bandwidth and
#                                 latency job over --mca btl devmem,self
#   contrib/quickstart.sh check   install what is missing, build, run every test
#   contrib/quickstart.sh build   install what is missing and build only
#
# The build lives in ./build (install prefix ./build/install); nothing outside the checkout
# is changed except Debian packages.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${DEVMEM_BUILD:-$here/build}
prefix=$build/install

packages=(openmpi-bin libopenmpi-dev libmnl-dev libdrm-dev libhwloc-dev autoconf automake clang
          libtool pkg-config make gcc iproute2 netpipe-openmpi procps valgrind
          environment-modules lua5.3 lua-posix lua-filesystem lua-json lua-term tcl)

install_deps() {
    local missing=()
    # the module test runs Lmod from its package; Debian's lmod and environment-modules
    # conflict, so a machine that has lmod installed keeps it and skips environment-modules
    if dpkg-query -W -f='${Status}' lmod 2>/dev/null | grep -q 'ok installed'; then
        packages=("${packages[@]/environment-modules/}")
    fi
    for p in "${packages[@]}"; do
        [ -n "$p" ] || continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "quickstart: installing ${missing[*]}"
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build_all() {
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        ./autogen.sh
    fi
    mkdir -p "$build"
    if [ ! -f "$build/Makefile" ]; then
        (cd "$build" && "$here/configure" --prefix="$prefix" --enable-werror)
    fi
    make -C "$build" -j"$(nproc)" --no-print-directory
    make -C "$build" install --no-print-directory >/dev/null
    # test programs (check_PROGRAMS) are built, not run, here: test/run-tests.sh runs them
    make -C "$build" -j"$(nproc)" --no-print-directory check >/dev/null
}

demo() {
    # shellcheck source=../test/lib/env.sh
    DEVMEM_BUILD=$build DEVMEM_PREFIX=$prefix . "$here/test/lib/env.sh"
    echo
    echo "== ompi_info sees the component =="
    ompi_info | grep 'MCA btl: devmem' || { echo "quickstart: component not found" >&2; exit 1; }
    echo
    echo "== NetPIPE, 2 ranks, --mca btl devmem,self (bandwidth and latency by message size) =="
    local out rc=0
    out=$(mktemp)
    devmem_mpirun 300 -np 2 --mca btl devmem,self --mca btl_devmem_stats 1 \
        NPopenmpi -u 8388608 -o /dev/null >"$out" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "quickstart: the demo job failed (exit $rc):" >&2
        tail -20 "$out" >&2
        rm -f "$out"
        exit 1
    fi
    # NetPIPE data lines: "  5:       8 bytes   2657 times -->      2.32 Mbps in      26.35 usec"
    awk '/^ *[0-9]+: +[0-9]+ bytes .* Mbps in .* usec/ {
             if (!hdr++) printf "%12s %14s %12s\n", "bytes", "Mbit/s", "usec";
             printf "%12s %14s %12s\n", $2, $7, $10; next }
         /btl_devmem stats/ { print }' "$out"
    rm -f "$out"
}

cmd=${1:-demo}
case "$cmd" in
    demo)  install_deps; build_all; demo ;;
    check) install_deps; build_all
           DEVMEM_BUILD=$build DEVMEM_PREFIX=$prefix exec "$here/test/run-tests.sh" ;;
    build) install_deps; build_all ;;
    *) echo "usage: $0 demo|check|build" >&2; exit 2 ;;
esac
