#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The environment modules that `make install` writes (PREFIX/share/modulefiles/btl_devmem), with
# environment-modules (Tcl) and with Lmod (Lua). Debian's lmod conflicts with
# environment-modules, so Lmod runs from its package unpacked here (apt-get download; its Lua
# libraries are installed by the quickstart). For each, in a shell with no Open MPI variable
# set: `module load btl_devmem` alone must make ompi_info list the component (Open MPI's own
# components still found), put devmem-probe and its manual page on PATH and MANPATH, and carry
# a validated 2-rank run over --mca btl devmem,self; `module unload` must take it all back.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the modules load btl_devmem (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
modules=$DEVMEM_PREFIX/share/modulefiles
[ -f "$modules/btl_devmem/0.1.0" ] && [ -f "$modules/btl_devmem/0.1.0.lua" ] ||
    devmem_skip "no modulefiles under $modules (make install first)"

# One shell per module system: the checks run inside it and print "ok ..." / "FAIL ..." lines.
inner=$DEVMEM_TEST_TMP/inner.sh
cat >"$inner" <<'INNER'
set -u
system=$1 prefix=$2 modules=$3 pingpong=$4
ok() { echo "ok   $system: $*"; }
fail() { echo "FAIL $system: $*"; }
case "$system" in
    environment-modules) . /usr/share/modules/init/bash ;;
    lmod)
        module() { eval "$(lua5.3 "$LMOD_CMD" bash "$@")"; }
        export LMOD_PKG=$LMOD_ROOT_DIR LMOD_DIR=$LMOD_ROOT_DIR/libexec LMOD_CMD=$LMOD_ROOT_DIR/libexec/lmod
        ;;
esac
module use "$modules"
ompi_default=$(ompi_info --path pkglibdir | sed -e 's/.*: *//')
path_before=:$PATH:
# environment-modules 5 may set MANPATH when it starts (the system's pages plus ':'), so
# unload must give back what was there before load, set or not
manpath_before=${MANPATH-unset}
module load btl_devmem
want="$prefix/lib/openmpi:$ompi_default"
[ "${OMPI_MCA_mca_base_component_path-}" = "$want" ] &&
    ok "load: OMPI_MCA_mca_base_component_path=$want" ||
    fail "load: OMPI_MCA_mca_base_component_path is '${OMPI_MCA_mca_base_component_path-}', want '$want'"
[ "$(command -v devmem-probe)" = "$prefix/bin/devmem-probe" ] && ok "load: devmem-probe on PATH" ||
    fail "load: devmem-probe is '$(command -v devmem-probe)'"
# the admin's `devmem-helperd --status` after `module load`, as first-run.md has it
[ "$(command -v devmem-helperd)" = "$prefix/sbin/devmem-helperd" ] && ok "load: devmem-helperd on PATH" ||
    fail "load: devmem-helperd is '$(command -v devmem-helperd)'"
case ":${MANPATH-}:" in
    *":$prefix/share/man:"*) [ -f "$prefix/share/man/man1/devmem-probe.1" ] &&
        ok "load: MANPATH has devmem-probe(1)" || fail "load: devmem-probe.1 not installed" ;;
    *) fail "load: MANPATH '${MANPATH-}' lacks $prefix/share/man" ;;
esac
info=$(ompi_info 2>&1)
echo "$info" | grep -q 'MCA btl: devmem' && ok "ompi_info lists btl devmem" ||
    fail "ompi_info does not list btl devmem"
echo "$info" | grep -q 'MCA btl: self' && ok "ompi_info still lists Open MPI's own btl self" ||
    fail "Open MPI's own components are gone"
out=$(timeout --kill-after=10 90 mpirun --oversubscribe -np 2 --mca btl devmem,self \
    --mca btl_devmem_stats 1 "$pingpong" -m 1M 2>&1)
if echo "$out" | grep -q '^pingpong: OK np=2' && echo "$out" | grep -q 'btl_devmem stats: rank=1'; then
    ok "2-rank run over btl devmem,self: $(echo "$out" | grep '^pingpong: OK')"
else
    echo "$out" | tail -n 20
    fail "2-rank run over btl devmem,self did not validate"
fi
module unload btl_devmem
[ -z "${OMPI_MCA_mca_base_component_path+x}" ] && ok "unload: OMPI_MCA_mca_base_component_path unset again" ||
    fail "unload: OMPI_MCA_mca_base_component_path is still '$OMPI_MCA_mca_base_component_path'"
[ "${MANPATH-unset}" = "$manpath_before" ] && ok "unload: MANPATH as before load ($manpath_before)" ||
    fail "unload: MANPATH is '${MANPATH-unset}', before load it was '$manpath_before'"
case ":$PATH:" in
    *":$prefix/bin:"*) case "$path_before" in *":$prefix/bin:"*) ok "unload: PATH as before" ;;
                                               *) fail "unload: $prefix/bin still on PATH" ;; esac ;;
    *) ok "unload: $prefix/bin off PATH" ;;
esac
INNER

run_system() { # SYSTEM [ENV...]
    local system=$1 out line
    shift
    out=$DEVMEM_TEST_TMP/$system.out
    env -u OMPI_MCA_mca_base_component_path -u MANPATH -u MODULEPATH -u LOADEDMODULES \
        -u _LMFILES_ -u MODULESHOME "$@" bash "$inner" "$system" "$DEVMEM_PREFIX" "$modules" \
        "$DEVMEM_MPI_BIN/pingpong" >"$out" 2>&1
    grep -Ev '^(ok|FAIL) ' "$out" | head -n 30
    while IFS= read -r line; do
        case "$line" in
            "ok   "*) devmem_step_ok "${line#ok   }" ;;
            "FAIL "*) devmem_step_fail "${line#FAIL }" ;;
        esac
    done <"$out"
    grep -q "^ok   $system: unload" "$out" || devmem_step_fail "$system: the checks did not run to the end"
}

if [ -r /usr/share/modules/init/bash ]; then
    run_system environment-modules
else
    devmem_step_fail "environment-modules is not installed (Debian: apt-get install environment-modules)"
fi

# Lmod from its package, unpacked (cached in the build tree)
lmod_dir=$DEVMEM_BUILD/lmod
if [ ! -x "$lmod_dir/usr/share/lmod/lmod/libexec/lmod" ]; then
    rm -rf "$lmod_dir" && mkdir -p "$lmod_dir"
    (cd "$DEVMEM_TEST_TMP" && apt-get download lmod >/dev/null 2>&1 && dpkg -x lmod_*.deb "$lmod_dir") ||
        rm -rf "$lmod_dir"
fi
if ! command -v lua5.3 >/dev/null 2>&1; then
    devmem_step_fail "lmod: lua5.3 is not installed (Debian: lua5.3 lua-posix lua-filesystem lua-json lua-term)"
elif [ ! -x "$lmod_dir/usr/share/lmod/lmod/libexec/lmod" ]; then
    devmem_step_fail "lmod: could not fetch and unpack Debian's lmod package (apt-get download lmod)"
else
    run_system lmod LMOD_ROOT_DIR="$lmod_dir/usr/share/lmod/lmod"
fi
devmem_finish
