#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-tests: timeout 900
# The pages a site follows on its first day, run as written: every ```sh block of the README and
# doc/first-run.md, and of the admin guide's module, helper and Slurm sections, carries a mark
# saying where it runs, and runs there on two namespaced hosts named A and B joined by eth1:
#
#   <!-- doc-test: on A -->                      on host A as root (on A,B: on each)
#   <!-- doc-test: on A as alice -->             as the user alice
#   <!-- doc-test: on A in the source tree, Open MPI 4 -->
#                                                in a fresh copy of the source tree, with that
#                                                Open MPI series only (the install)
#   <!-- doc-test: slurm batch script -->        run by test/slurm/test_slurm.sh as the job
#   <!-- doc-test: not run: REASON -->           listed, not run (a GPU, an allocation)
#
# A block without a mark there fails, as does any command of a block (bash -e -o pipefail).
# Each host and user keeps a session, as a terminal would: what a block exports and its
# working directory carry on to the next. The pages run one after the other on the same
# install (/opt/btl_devmem, as the README builds it), each on fresh hosts: each host's /etc,
# /opt and the helpers' /run are the test's own (a private mount namespace), user alice and the
# group devmem exist only there; homes and working directories live in the test's directory.
#
# What differs from a site, all set outside the pages' commands: the kernel is the emulated
# one (btl_devmem_kernel=emulated, and --kernel emulated appended to the helper's command
# line; ranks are then pointed at the helper's socket, which `auto` only uses on the real
# kernel); systemd is a stand-in that runs a unit's ExecStart with its RuntimeDirectory and
# LimitNOFILE (`systemctl enable --now UNIT` only); mpirun reaches host B through
# test/net/netns-agent.sh instead of ssh (with the environment ssh would give, nothing of the
# caller's), its own traffic on eth1, unbound; ./app is the pingpong test program (every byte
# checked). Blocks in the source tree run on the machine's own network and /etc (they may
# fetch and install packages, as the README's commands do).
set -u
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${DOC_TEST_MOUNTNS:-}" ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespaces, users, mounts)"; exit 77; }
    command -v unshare >/dev/null || { echo "SKIP: no unshare (util-linux)"; exit 77; }
    # /etc and /opt of our own: nothing a page writes there outlives the test
    DOC_TEST_MOUNTNS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

# the nodes' names are a and b (what `hostname` says); the pages call them A and B, which
# /etc/hosts resolves to the same addresses
NETNS_HOST_A=a NETNS_HOST_B=b NETNS_LINK=eth1
. "$here/../lib/testlib.sh"
. "$here/../net/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the pages run btl_devmem (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
for c in useradd groupadd runuser prlimit setsid; do
    command -v "$c" >/dev/null || devmem_skip "'$c' not found"
done
major=$(ompi_info --parsable --version ompi 2>/dev/null | sed -n 's/^ompi:version:full:\([0-9]*\).*/\1/p')
[ -n "$major" ] || major=$(ompi_info 2>/dev/null | sed -n 's/^ *Open MPI: \([0-9]*\).*/\1/p' | head -n 1)
[ -n "$major" ] || devmem_skip "cannot tell the Open MPI version (ompi_info)"

T=$DEVMEM_TEST_TMP
blocks=$T/blocks
mkdir -p "$blocks" "$T/shim"

# ---- the pages' blocks, and what must be marked
for page in README.md:100 doc/first-run.md:200 doc/admin-guide.md:300; do
    awk -v out="$blocks" -v page="${page%:*}" -v first="${page#*:}" -f "$here/../lib/doc-blocks.awk" \
        "$DEVMEM_SRC/${page%:*}" || devmem_step_fail "${page%:*}: its code fences cannot be read (above)"
done
[ -s "$blocks/index" ] || { devmem_step_fail "no command block found in the pages"; devmem_finish; }
covered='^(README.md|doc/first-run.md|doc/admin-guide.md	(Environment modules|The privileged helper: devmem-helperd|The policy file|Security: .*|Slurm))	'
unmarked=0
while IFS=$'\t' read -r k where section mark; do
    if [ "$mark" = - ] && printf '%s\t%s\t\n' "${where%%:*}" "$section" | grep -Eq "$covered"; then
        devmem_step_fail "$where ($section): a command block without a doc-test mark"
        unmarked=$((unmarked + 1))
    fi
done <"$blocks/index"
[ "$unmarked" -eq 0 ] && devmem_step_ok "every command block of the covered sections is marked"

# ---- the hosts, and the parts of the file system that are the test's own
netns_setup
cp -a /etc "$T/etc.pristine"
for p in "$DEVMEM_SRC" "$DEVMEM_BUILD" "$T"; do
    case "$p/" in /opt/* | /etc/*) devmem_skip "$p is under /opt or /etc, which the pages' hosts replace" ;; esac
done
mount -t tmpfs -o mode=0755 btl-devmem-opt /opt || devmem_skip "cannot mount a tmpfs on /opt"
made_run=
if [ ! -d /run/devmem-helperd ]; then
    mkdir /run/devmem-helperd && made_run=1
fi
cleanup_run() { [ -n "$made_run" ] && rmdir /run/devmem-helperd 2>/dev/null; }
trap 'netns_cleanup; cleanup_run; devmem_testlib_cleanup' EXIT
export DEVMEM_NETNS_BINDS="a:$T/etc-A:/etc b:$T/etc-B:/etc a:$T/run-A:/run/devmem-helperd b:$T/run-B:/run/devmem-helperd"
chmod 0755 "$T"

# fresh_hosts: /etc, the homes and /run/devmem-helperd as a newly installed pair of nodes has
# them (the install under /opt stays; each host its own /etc, with the same user alice), no
# process left in either host, no session
fresh_hosts() {
    local ns pids h app
    for ns in "$NETNS_A" "$NETNS_B"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    done
    sleep 0.2
    mountpoint -q /etc && [ -d "$T/etc" ] && umount /etc
    rm -rf "$T/etc" "$T"/etc-? "$T"/run-? "$T"/session-* "$T"/harness-* "$T"/helper-* \
        "$T"/journal-* "$T/home"
    cp -a "$T/etc.pristine" "$T/etc"
    mkdir -p "$T/etc/systemd/system"
    printf '%s a A\n%s b B\n' "$NETNS_ADDR_A" "$NETNS_ADDR_B" >>"$T/etc/hosts"
    mount --bind "$T/etc" /etc || return 1
    mkdir -p "$T/home" && chmod 0755 "$T/home"
    useradd -l -m -d "$T/home/alice" -s /bin/bash alice || return 1
    for h in A B; do
        cp -a "$T/etc" "$T/etc-$h" && mkdir -p "$T/run-$h" || return 1
    done
    for app in "$T/home/root" "$T/home/alice"; do
        mkdir -p "$app" && cp "$DEVMEM_MPI_BIN/pingpong" "$app/app" || return 1
    done
    chown -R alice: "$T/home/alice"
}

# The stand-in for systemd: `systemctl enable --now UNIT` starts the unit's ExecStart (with the
# emulated kernel's option) in the background, as its own session, with the unit's
# RuntimeDirectory and LimitNOFILE; it returns once the service listens, or fails with its log.
cat >"$T/shim/systemctl" <<'SHIM'
#!/bin/bash
[ "${1:-}" = enable ] && [ "${2:-}" = --now ] && [ $# -eq 3 ] ||
    { echo "systemctl (the check's stand-in): only 'enable --now UNIT'" >&2; exit 1; }
unit=${3%.service}
f=/etc/systemd/system/$unit.service
[ -f "$f" ] || { echo "Failed to enable unit: Unit file $unit.service does not exist." >&2; exit 1; }
key() { sed -n "s/^$1=//p" "$f" | tail -n 1; }
cmd=$(key ExecStart) rundir=$(key RuntimeDirectory) mode=$(key RuntimeDirectoryMode)
nofile=$(key LimitNOFILE)
[ -n "$cmd" ] || { echo "$f has no ExecStart" >&2; exit 1; }
if [ -n "$rundir" ]; then
    mkdir -p "/run/$rundir" && chmod "${mode:-0755}" "/run/$rundir" || exit 1
fi
log=$DOC_TEST_JOURNAL.$unit
# LimitNOFILE as systemd sets it; a container that cannot raise the hard limit that far (no
# CAP_SYS_RESOURCE) gets the service with the limit it has, and the log says so
if [ -n "$nofile" ] && ! prlimit --pid $$ --nofile="$nofile" 2>/dev/null; then
    echo "systemctl (stand-in): LimitNOFILE=$nofile refused here, the service keeps $(ulimit -Hn)" >>"$log"
    nofile=$(ulimit -Hn)
fi
# shellcheck disable=SC2086 # the unit's command line, split as systemd splits a simple one
setsid prlimit --nofile="${nofile:-1024}" $cmd $DOC_TEST_DAEMON_ARGS >>"$log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 50); do
    sleep 0.1
    kill -0 "$pid" 2>/dev/null || { echo "$unit exited at start:" >&2; cat "$log" >&2; exit 1; }
    [ -n "$rundir" ] && compgen -G "/run/$rundir/*.sock" >/dev/null && exit 0
done
[ -z "$rundir" ] || { echo "$unit: no socket in /run/$rundir after 5 s:" >&2; cat "$log" >&2; exit 1; }
SHIM
chmod +x "$T/shim/systemctl"

# What every block runs in: the module command (as a login shell has it), the session's
# exports and directory, the harness's settings for this host, then the block, then the
# session saved again.
cat >"$T/run-block.sh" <<'RUN'
#!/bin/bash
sess=$1 block=$2 harness=$3
if [ -r /usr/share/modules/init/bash ]; then . /usr/share/modules/init/bash
elif [ -r /usr/share/lmod/lmod/init/bash ]; then . /usr/share/lmod/lmod/init/bash; fi
[ -f "$sess/env" ] && . "$sess/env"
[ -f "$harness" ] && . "$harness"
cd "$(cat "$sess/pwd")" || exit 1
set -o pipefail
# line by line, as typed: every command line must succeed, also the first of an && list
# (which bash -e would let fail in silence); a line ending in \ goes on on the next
cmd=
while IFS= read -r line || [ -n "$line" ]; do
    if [ "${line%\\}" != "$line" ]; then
        cmd+="${line%\\} "
        continue
    fi
    cmd+=$line
    if [[ "$cmd" =~ ^[[:space:]]*(#.*)?$ ]]; then
        cmd=
        continue
    fi
    eval "$cmd" </dev/null
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "doc-test: exit $rc from: $cmd" >&2
        exit "$rc"
    fi
    cmd=
done <"$block"
export -p | grep -Ev '^declare -x (PWD|OLDPWD|SHLVL|_)=' >"$sess/env.new" && mv "$sess/env.new" "$sess/env"
pwd >"$sess/pwd"
RUN
chmod +x "$T/run-block.sh"

# harness HOST [local]: the settings outside the pages, for root's sessions on HOST (local:
# for one-host jobs on the machine's own network, in the source tree). Open MPI 5's launcher
# (PRRTE) reads its own names. Ranks are not bound: each "host" would bind its first rank to
# the same core of this machine.
harness() {
    cat <<EOF
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_hwloc_base_binding_policy=none PRTE_MCA_hwloc_default_binding_policy=none
export OMPI_MCA_btl_devmem_kernel=emulated
export DEVMEM_NETNS_HOSTS='$DEVMEM_NETNS_HOSTS' DEVMEM_NETNS_BINDS='$DEVMEM_NETNS_BINDS'
export DOC_TEST_DAEMON_ARGS='--kernel emulated' DOC_TEST_JOURNAL=$T/journal-$1
case ":\$PATH:" in *":$T/shim:"*) ;; *) PATH=$T/shim:\$PATH ;; esac
EOF
    [ "${2:-}" = local ] && return
    cat <<EOF
export DEVMEM_NETNS_LIKE_SSH=1 OMPI_MCA_plm_rsh_agent=$NETNS_AGENT OMPI_MCA_plm_rsh_no_tree_spawn=1
export PRTE_MCA_plm_ssh_agent=$NETNS_AGENT PRTE_MCA_plm_ssh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include=eth1 PRTE_MCA_oob_tcp_if_include=eth1
EOF
}

# run_block K HOST USER DIR [SESSION]: block K in HOST's session of USER (or the named one),
# starting in DIR if the session is new; its output goes to $T/out-K-HOST
run_block() {
    local k=$1 host=$2 user=$3 dir=$4 ns=$NETNS_A sess=$T/session-$2-$3${5:+-$5} h=$T/harness-$2-$3${5:+-$5} rc
    [ "$host" = B ] && ns=$NETNS_B
    if [ ! -d "$sess" ]; then
        mkdir -p "$sess" && echo "$dir" >"$sess/pwd"
        if [ "$user" = root ]; then
            echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=$T/home/root" >"$sess/env"
            local where=
            [[ "${5:-}" == src* ]] && where=local
            harness "$host" $where >"$h"
        else
            echo "export PATH=/usr/local/bin:/usr/bin:/bin HOME=$T/home/$user USER=$user LOGNAME=$user" >"$sess/env"
            echo "export OMPI_MCA_btl_devmem_kernel=emulated OMPI_MCA_plm_rsh_agent=false" >"$h"
        fi
        [ -f "$T/helper-$host" ] && cat "$T/helper-$host" >>"$h"
        chown -R "$user:" "$sess" && chmod 0644 "$h"
    fi
    local as=() netns=(ip netns exec "$ns") mine=() real_etc=()
    [ "$user" = root ] || as=(runuser -u "$user" --)
    # a build in the source tree may fetch (apt-get source): it runs on the machine's network,
    # in a mount namespace of its own (as ip netns exec gives the others) for the host's binds
    # and on the machine's own /etc, without the hosts' binds
    [[ "${5:-}" == src* ]] && netns=() mine=(--mount) real_etc=(env DEVMEM_NETNS_BINDS= sh -c 'umount /etc && exec "$@"' sh)
    timeout --kill-after=10 600 "${netns[@]}" unshare "${mine[@]}" --uts -- "${real_etc[@]}" "$NETNS_AGENT" --enter "${host,,}" \
        "${as[@]}" env -i TERM=dumb LANG=C.UTF-8 bash "$T/run-block.sh" "$sess" "$blocks/block-$k.sh" "$h" \
        >"$T/out-$k-$host" 2>&1 </dev/null
    rc=$?
    # all of a failed block's output, the end of one that passed
    if [ "$rc" -eq 0 ]; then
        sed "s/^/    $host> /" "$T/out-$k-$host" | tail -n 40
    else
        sed "s/^/    $host> /" "$T/out-$k-$host"
    fi
    return $rc
}

# The helper is up on HOST: ranks of later blocks there ask it (auto only does on the real kernel)
helper_started() {
    local line="export OMPI_MCA_btl_devmem_helper=/run/devmem-helperd/helperd.sock"
    echo "$line" >"$T/helper-$1"
    local h
    for h in "$T"/harness-"$1"-*; do
        [ -f "$h" ] && echo "$line" >>"$h"
    done
}

# run_page LO HI SECTIONS [MARKS]: the blocks numbered LO to HI (100s README, 200s first-run,
# 300s admin guide) whose section matches the ERE SECTIONS, in order; with MARKS, only those
# whose mark matches it, without, none of the install's ("..., Open MPI N")
run_page() {
    local lo=$1 hi=$2 sections=$3 marks=${4:-} k where section mark hosts user host dir session
    while IFS=$'\t' read -r k where section mark; do
        [ "$k" -ge "$lo" ] && [ "$k" -le "$hi" ] || continue
        [[ "$section" =~ $sections ]] || continue
        if [ -n "$marks" ]; then
            [[ "$mark" =~ $marks ]] || continue
        elif [[ "$mark" =~ ,\ Open\ MPI\ [0-9]+$ ]]; then
            continue
        fi
        case "$mark" in
            "not run: "*) echo "---- $where ($section): not run: ${mark#not run: }"; continue ;;
            "slurm batch script") echo "---- $where ($section): the batch script test/slurm/test_slurm.sh runs"; continue ;;
            -) continue ;;
        esac
        if [[ "$mark" =~ ^on\ ([AB,]+)(\ as\ ([a-z]+))?(\ in\ the\ source\ tree)?(,\ Open\ MPI\ ([0-9]+))?$ ]]; then
            hosts=${BASH_REMATCH[1]} user=${BASH_REMATCH[3]:-root}
            if [ -n "${BASH_REMATCH[6]}" ] && [ "${BASH_REMATCH[6]}" != "$major" ]; then
                echo "---- $where ($section): for Open MPI ${BASH_REMATCH[6]}, this is $major"
                continue
            fi
            dir=$T/home/$user session=
            if [ -n "${BASH_REMATCH[4]}" ]; then # a fresh copy of the source tree, a terminal there
                dir=$T/src-$k session=src$k
                devmem_copy_tree "$dir"
            fi
        else
            devmem_step_fail "$where: cannot read the mark '$mark'"
            continue
        fi
        for host in ${hosts//,/ }; do
            echo "---- $where ($section) on $host as $user:"
            sed 's/^/    $ /' "$blocks/block-$k.sh"
            local t0=$EPOCHREALTIME
            echo "$k" >>"$T/ran"
            if run_block "$k" "$host" "$user" "$dir" "$session"; then
                devmem_step_ok "$where ($section) on $host as $user ($(_devmem_elapsed "$t0") s)"
                if grep -q 'systemctl enable --now devmem-helperd' "$blocks/block-$k.sh"; then
                    helper_started "$host"
                fi
            else
                devmem_step_fail "$where ($section) on $host as $user: a command failed (above)"
            fi
        done
    done <"$blocks/index"
}

# expect_out K HOST ERE WHAT: block K's output on HOST has a line matching ERE
expect_out() {
    devmem_expect_line "$T/out-$1-$2" "$3" "$4"
}
block_of() { # PAGE-RANGE-START PATTERN: the first block in the range whose text matches
    local k
    for k in $(seq "$1" $(($1 + 99))); do
        [ -f "$blocks/block-$k.sh" ] && grep -Eq -- "$2" "$blocks/block-$k.sh" && { echo "$k"; return; }
    done
    echo none
}
journal_has() { # HOST ERE WHAT
    devmem_expect_line "$T/journal-$1.devmem-helperd" "$2" "$3" ||
        tail -n 20 "$T/journal-$1.devmem-helperd" 2>/dev/null
}

# ---- the README: the demo, the install, the first run
fresh_hosts || devmem_step_fail "cannot set the hosts up"
run_page 100 399 '.*' ', Open MPI [0-9]+$'
run_page 100 199 '.*'
[ -x /opt/btl_devmem/lib/openmpi/mca_btl_devmem.so ] &&
    devmem_step_ok "the install: /opt/btl_devmem/lib/openmpi/mca_btl_devmem.so" ||
    devmem_step_fail "the install left no /opt/btl_devmem/lib/openmpi/mca_btl_devmem.so"
k=$(block_of 100 'np 2 .*btl devmem,self \./app$')
expect_out "$k" A '^pingpong: OK np=2 ' "README's first run: ./app checked every byte on 2 ranks"
k=$(block_of 100 'quickstart.sh demo')
expect_out "$k" A '^ +4194304 +[0-9.]+ +[0-9.]+ ' "README's demo: its table, devmem beside tcp"

# ---- doc/first-run.md on fresh hosts
fresh_hosts || devmem_step_fail "cannot set the hosts up again"
run_page 200 299 '.*'
k=$(block_of 200 '^mpirun -np 2 --host A,B /opt/btl_devmem/bin/devmem-check')
expect_out "$k" A '^devmem-check: PASS: the device path works between a and b' "first-run step 3: devmem-check PASSes between A and B"
# what devmem-check found and said, as the admin reads it
expect_out "$k" A '^host a \(rank 0\), Linux' "devmem-check: host A's facts"
expect_out "$k" A '^host b \(rank 1\), Linux' "devmem-check: host B's facts"
expect_out "$k" A '^eth1 on: emulated kernel' "devmem-check: the device path is on over eth1"
expect_out "$k" A '^lo off: ' "devmem-check: lo's device path is off, and said so"
expect_out "$k" A '^eth1 \(ifindex [0-9]+\)' "devmem-check: devmem-probe's section of eth1"
expect_out "$k" A '^this job: .*receiving threads started: [0-9]+ on rank 0, [0-9]+ on rank 1\)' \
    "devmem-check: the threads each host started"
expect_out "$k" A '^transfers host to host, .*: every byte checked' "devmem-check: host transfers checked"
expect_out "$k" A '^table: this job beside raw TCP between the same ranks over eth1 \(198\.51\.100\.2\)' \
    "devmem-check: the table is measured over eth1, to host B"
expect_out "$k" A '^ +8 B +[0-9.]+ +[0-9.]+ +[0-9.]+$' "devmem-check: the 8 B row has both columns"
expect_out "$k" A '^ +64 MiB +[0-9]+ +[0-9]+ +[0-9.]+$' "devmem-check: the 64 MiB row has both columns"
expect_out "$k" A '^device path: [1-9][0-9]* bytes landed in RX pools' "devmem-check: bytes landed in RX pools"
k=$(block_of 200 "devmem-check --launch 'mpirun")
expect_out "$k" A '^  btl/tcp +btl=tcp,self .*path=host' "--launch: the btl/tcp job ran btl/tcp"
expect_out "$k" A '^  1 lane +btl=devmem,self devflows=1 .*path=device' "--launch: the 1-lane job ran 1 lane"
expect_out "$k" A '^  4 lanes +btl=devmem,self devflows=4 .*path=device' "--launch: the 4-lane job ran 4 lanes"
expect_out "$k" A '^  0 threads +.* threads=0 path=device' "--launch: the job without receiving threads"
expect_out "$k" A '^  1 thread +.* threads=1 path=device' "--launch: the job with one receiving thread"
expect_out "$k" A '^ +8 B( +[0-9]+\.[0-9]+){7}$' "--launch: the 8 B latency row has every column and the ratio"
expect_out "$k" A '^ +64 MiB( +[0-9.]+){7}$' "--launch: the 64 MiB bandwidth row has every column and the ratio"
n=$(grep -c "^devmem-check: the table again, devmem " "$T/out-$k-A")
m=$(grep -c "^devmem-check: the table again, btl/tcp " "$T/out-$k-A")
[ "$n" = 2 ] && [ "$m" = 2 ] && devmem_step_ok "--launch: two jobs each for the devmem and btl/tcp columns" ||
    devmem_step_fail "--launch: $n devmem and $m btl/tcp jobs (want 2 each, one near each end)"
r=$T/home/root/devmem-check.txt
[ -s "$r" ] && grep -q "^side by side: " "$r" && [ "$(tail -n 1 "$r" | cut -c1-20)" = "devmem-check: PASS: " ] &&
    devmem_step_ok "--launch: the report has the side-by-side table and ends with the PASS" ||
    devmem_step_fail "--launch: the report $r lacks the table or the verdict"
# the page's sample verdict for a NIC without devmem is what the probe printed for eth1 (a veth)
k=$(block_of 200 '^devmem-probe  ')
# (its RX part: what bind-tx says depends on the kernel's version)
v=$(grep -a '^  verdict: *eth1: ' "$T/out-$k-A" 2>/dev/null | head -n 1 | sed 's/^  //; s/; TX: .*//')
if [ -n "$v" ] && grep -qF -- "    $v" "$DEVMEM_SRC/doc/first-run.md"; then
    devmem_step_ok "first-run step 1: the page's sample verdict is the probe's own line ($v)"
else
    devmem_step_fail "first-run step 1: the probe's verdict for eth1 ('$v') is not among the page's samples"
fi
k=$(block_of 200 'devmem-probe -n -i eth1')
expect_out "$k" A "^  policy for uid $(id -u alice) \(/etc/devmem-helperd.conf\): interfaces eth1 queues 8-15" \
    "first-run step 2: alice's probe shows the helper and her policy"
for host in A B; do
    journal_has "$host" 'uid 0: RX binding [0-9]+ on eth1 queues' \
        "first-run: the helper on $host bound RX queues for devmem-check's ranks"
done

# ---- the admin guide's module, helper and Slurm sections, on fresh hosts (the Slurm
# section's batch script is test/slurm/test_slurm.sh's job)
fresh_hosts || devmem_step_fail "cannot set the hosts up again"
run_page 300 399 '^(Environment modules|The privileged helper: devmem-helperd|Slurm)$'
alice=$(id -u alice)
# every block marked to run did, but one for another Open MPI series
while IFS=$'\t' read -r k where section mark; do
    [[ "$mark" =~ ^on\  ]] || continue
    [[ "$mark" =~ ,\ Open\ MPI\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" != "$major" ] && continue
    grep -qx "$k" "$T/ran" 2>/dev/null || devmem_step_fail "$where ($section): marked '$mark', but no page run reached it"
done <"$blocks/index"
journal_has A "uid $alice: RX binding [0-9]+ on eth1 queues" "admin guide: alice's ranks bound through the helper"
k=$(block_of 300 'her ranks ask it')
expect_out "$k" A '^pingpong: OK np=2 ' "admin guide: alice's ./app checked every byte"
st=$(ip netns exec "$NETNS_A" unshare --uts -- "$NETNS_AGENT" --enter a /opt/btl_devmem/sbin/devmem-helperd --status 2>&1 | head -n 1)
[[ "$st" == *" bindings=0 rules=0 contexts=0 "* ]] &&
    devmem_step_ok "admin guide: once alice's job ended the helper holds nothing ($st)" ||
    devmem_step_fail "admin guide: the helper on A still holds: $st"
devmem_finish
