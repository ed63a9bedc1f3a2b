#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI launch agent for the two-namespace harness (test/net/netns.sh): mpirun calls it in
# place of ssh (--mca plm_rsh_agent), as
#     netns-agent.sh HOSTNAME COMMAND...
# and it runs COMMAND (the orted command line, which Open MPI quotes for a remote shell) inside
# the network namespace that stands for HOSTNAME, in a UTS namespace of its own whose hostname
# is HOSTNAME, so that Open MPI sees a different node.
#
#     netns-agent.sh --enter HOSTNAME PROGRAM ARGS...
# is the second half: already inside the namespaces, set the hostname and exec PROGRAM.
#
# The map from host names to namespaces comes from the environment (set by netns.sh and
# inherited through mpirun): DEVMEM_NETNS_HOSTS="host1=netns1 host2=netns2". A host's own
# directories, e.g. its /run/devmem-helperd, come from DEVMEM_NETNS_BINDS="host:SRC:DST ...":
# SRC is bind-mounted on DST in the command's mount namespace (ip netns exec makes one each
# time, so nothing leaks to the other host); paths there hold no blank or colon.
set -u

die() {
    echo "netns-agent: $*" >&2
    exit 255
}

if [ "${1:-}" = "--enter" ]; then
    [ $# -ge 3 ] || die "usage: $0 --enter HOSTNAME PROGRAM [ARGS...]"
    host=$2
    shift 2
    for bind in ${DEVMEM_NETNS_BINDS:-}; do
        IFS=: read -r bhost src dst <<<"$bind"
        if [ "$bhost" = "$host" ]; then
            mount --bind "$src" "$dst" || die "cannot bind $src on $dst for $host"
        fi
    done
    # inside `unshare --uts`: this changes only our own UTS namespace
    if command -v hostname >/dev/null 2>&1; then
        hostname "$host" || die "cannot set hostname $host"
    else
        printf '%s' "$host" >/proc/sys/kernel/hostname || die "cannot set hostname $host"
    fi
    exec "$@"
fi

# Called by Open MPI's rsh launcher. Skip options an ssh-style caller may put first.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    shift
done
[ $# -ge 2 ] || die "usage: $0 HOSTNAME COMMAND..."
host=$1
shift

ns= match=
for pair in ${DEVMEM_NETNS_HOSTS:-}; do
    # host names are case-blind, as in DNS
    if [ "${pair%%=*}" = "${host,,}" ] || [ "${pair%%=*}" = "$host" ]; then
        ns=${pair#*=}
        match=${pair%%=*}
    fi
done
host=${match:-$host}
[ -n "$ns" ] || die "no namespace known for host '$host' (DEVMEM_NETNS_HOSTS='${DEVMEM_NETNS_HOSTS:-}')"

# Like ssh: the command words are joined and given to a shell. DEVMEM_NETNS_LIKE_SSH=1: with
# the environment a non-interactive ssh login of root gets (nothing of the caller's but the
# agent's own map), so that a command that works here works through ssh too.
like_ssh=()
if [ "${DEVMEM_NETNS_LIKE_SSH:-0}" = 1 ]; then
    like_ssh=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
              HOME="${HOME:-/root}" USER=root LOGNAME=root SHELL=/bin/sh LANG=C.UTF-8
              DEVMEM_NETNS_HOSTS="${DEVMEM_NETNS_HOSTS:-}" DEVMEM_NETNS_BINDS="${DEVMEM_NETNS_BINDS:-}"
              DEVMEM_NETNS_LIKE_SSH=1)
fi
exec "${like_ssh[@]}" ip netns exec "$ns" unshare --uts -- "$0" --enter "$host" /bin/sh -c "$*"
