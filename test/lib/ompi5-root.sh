#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A Debian 13 (trixie) root with Open MPI 5.0 from Debian's own packages, for the check's
# second leg: Debian 12 has only Open MPI 4.1, and trixie's 5.0 binaries need glibc 2.38.
#
#   test/lib/ompi5-root.sh ensure       make the root if it is missing or unfinished
#   test/lib/ompi5-root.sh run CMD...   run CMD inside it, as root, in this checkout
#   test/lib/ompi5-root.sh remove       delete the root
#
# The root is made with debootstrap from the Debian archive the host's apt already uses, and
# kept for later runs on the same machine (DEVMEM_OMPI5_ROOT, default
# /var/cache/btl_devmem/trixie). `run` works in a mount namespace of its own: /proc, /sys,
# /dev, a fresh /run and the checkout (at the same path) are mounted there and vanish with
# it, also when the command is killed. Network namespaces made inside are the host's.
#
# Exit status: the command's; 77 when the root cannot be made here (not root, no
# debootstrap, no archive), with the reason on stderr.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
root=${DEVMEM_OMPI5_ROOT:-/var/cache/btl_devmem/trixie}
suite=${DEVMEM_OMPI5_SUITE:-trixie}
stamp=$root/.btl_devmem-root

cannot() {
    echo "ompi5-root: $*" >&2
    exit 77
}

# The archive the host installs from: deb822 sources first, then the one-line format.
host_mirror() {
    local f uri
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' "$f")
        [ -n "$uri" ] && { echo "$uri"; return 0; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' "$f")
        [ -n "$uri" ] && { echo "$uri"; return 0; }
    done
    return 1
}

ensure() {
    [ "$(id -u)" -eq 0 ] || cannot "needs root (debootstrap, chroot, mounts)"
    if [ -f "$stamp" ]; then
        return 0
    fi
    if ! command -v debootstrap >/dev/null; then
        echo "ompi5-root: installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            debootstrap >/dev/null || cannot "debootstrap is not installed and apt cannot install it"
    fi
    local mirror
    mirror=${DEVMEM_DEBIAN_MIRROR:-$(host_mirror)} ||
        cannot "no Debian archive in the host's apt sources (set DEVMEM_DEBIAN_MIRROR)"
    # an unfinished root (interrupted debootstrap) is started again from scratch
    rm -rf "$root"
    mkdir -p "$(dirname "$root")"
    local log
    log=$(mktemp)
    echo "ompi5-root: making a $suite root in $root (debootstrap, about a minute)"
    if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -f "$log"
        rm -rf "$root"
        cannot "debootstrap $suite failed"
    fi
    rm -f "$log"
    cp /etc/hosts "$root/etc/hosts"
    # source packages too: the build takes the headers Open MPI 5's -dev package lacks from
    # Debian's openmpi source (contrib/quickstart.sh)
    sed -n 's/^deb /deb-src /p' "$root/etc/apt/sources.list" >"$root/etc/apt/sources.list.d/src.list"
    # apt inside the root (the quickstart's package step) runs as root in a chroot, where the
    # _apt user's sandbox only warns
    echo 'APT::Sandbox::User "root";' >"$root/etc/apt/apt.conf.d/99btl-devmem"
    date -u +%FT%TZ >"$stamp"
}

run() {
    ensure
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    mkdir -p "$root$src"
    # Everything mounted here belongs to this mount namespace and goes with it.
    exec unshare --mount --propagation private -- bash -c '
        set -e
        root=$1 src=$2
        shift 2
        # the root a mount point of its own: ip netns exec remounts / as a slave
        mount --bind "$root" "$root"
        mount -t proc proc "$root/proc"
        mount --rbind /sys "$root/sys"
        mount --rbind /dev "$root/dev"
        mount -t tmpfs -o mode=755 tmpfs "$root/run"
        mount --bind "$src" "$root$src"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            LANG=C.UTF-8 CI="${CI:-}" TERM=dumb /bin/bash -c "cd \"\$0\" && exec \"\$@\"" \
            "$src" "$@"
    ' ompi5-root "$root" "$src" "$@"
}

case "${1:-}" in
    ensure) ensure ;;
    run)
        shift
        [ $# -gt 0 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
        run "$@"
        ;;
    remove) rm -rf "$root" ;;
    *)
        sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//'
        exit 2
        ;;
esac
