#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package, as a distribution builds and a site installs it: the source package made
# from the tree (dpkg-source -b), unpacked and built with dpkg-buildpackage against the
# distribution's Open MPI, installed with dpkg -i; then, with no Open MPI variable set,
# ompi_info lists the component, `mpirun --mca pml ob1 --mca btl devmem,self` runs a 2-rank
# job over it (every byte checked, the component's stats line printed), the tools are on PATH,
# the helper's unit is installed but not enabled; dpkg -r takes the component away again.
# The install happens in a mount namespace of the test's own, with /usr, /etc and /var as
# overlays: nothing it writes outlives the test.
set -u
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${PKG_TEST_MOUNTNS:-}" ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (dpkg -i, mounts)"; exit 77; }
    command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
        { echo "SKIP: dpkg-dev and debhelper are not installed (contrib/quickstart.sh check installs them)"; exit 77; }
    PKG_TEST_MOUNTNS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
. "$here/../lib/testlib.sh"
[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the package carries btl_devmem (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
T=$DEVMEM_TEST_TMP
version=$(cd "$DEVMEM_SRC" && dpkg-parsechangelog -S Version)
src=$T/btl-devmem-$version

# ---- the source package, from the tree's files
devmem_copy_tree "$src"
if (cd "$T" && dpkg-source -b "btl-devmem-$version" >"$T/source.log" 2>&1) &&
    [ -f "$T/btl-devmem_$version.dsc" ]; then
    devmem_step_ok "dpkg-source -b: $(cd "$T" && ls btl-devmem_"$version".dsc btl-devmem_"$version".tar.*)"
else
    cat "$T/source.log"
    devmem_step_fail "dpkg-source -b failed"
    devmem_finish
fi

# ---- built from the source package, against the distribution's Open MPI (Open MPI 5 needs
# the source tree of its headers: the one the check's own build was configured with)
ompi_src=$(sed -n 's/.*--with-ompi-src=\([^ ]*\).*/\1/p' "$DEVMEM_BUILD/config.log" 2>/dev/null | head -n 1)
(cd "$T" && dpkg-source -x "btl-devmem_$version.dsc" unpacked >"$T/unpack.log" 2>&1) ||
    { cat "$T/unpack.log"; devmem_step_fail "dpkg-source -x failed"; devmem_finish; }
t0=$EPOCHREALTIME
if (cd "$T/unpacked" && DEB_OMPI_SRC=$ompi_src DEB_BUILD_OPTIONS="parallel=$(nproc)" \
    dpkg-buildpackage -b -us -uc >"$T/build.log" 2>&1); then
    devmem_step_ok "dpkg-buildpackage -b from the unpacked source package ($(_devmem_elapsed "$t0") s)"
else
    tail -n 40 "$T/build.log"
    devmem_step_fail "dpkg-buildpackage failed"
    devmem_finish
fi
deb=$(ls "$T"/btl-devmem_"$version"_*.deb)
ompi_dir=$(ompi_info --path pkglibdir | sed 's/.*: *//')
if dpkg -c "$deb" | grep " \.$ompi_dir/mca_btl_devmem\.so$" >/dev/null; then
    devmem_step_ok "the package puts the component where this Open MPI looks: $ompi_dir"
else
    dpkg -c "$deb"
    devmem_step_fail "the package has no $ompi_dir/mca_btl_devmem.so"
fi
deps=$(dpkg-deb -f "$deb" Depends)
[[ "$deps" =~ libopenmpi[0-9]+\ \(\<\<\ [0-9]+\.[0-9]+\) ]] &&
    devmem_step_ok "it depends on this Open MPI series only: $deps" ||
    devmem_step_fail "no upper bound on the Open MPI it was built for: $deps"

# ---- installed, over overlays of /usr, /etc and /var
for d in usr etc var; do
    mkdir -p "$T/up-$d" "$T/work-$d"
    mount -t overlay "btl-devmem-$d" -o "lowerdir=/$d,upperdir=$T/up-$d,workdir=$T/work-$d" "/$d" ||
        devmem_skip "cannot mount an overlay on /$d"
done
if dpkg -i "$deb" >"$T/install.log" 2>&1; then
    devmem_step_ok "dpkg -i $(basename "$deb")"
else
    cat "$T/install.log"
    devmem_step_fail "dpkg -i failed"
    devmem_finish
fi

# the environment of a user who set nothing for btl_devmem
clean=(env -u OMPI_MCA_mca_base_component_path OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
       PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
if "${clean[@]}" ompi_info | grep -q 'MCA btl: devmem'; then
    devmem_step_ok "ompi_info lists btl devmem with no variable set"
else
    devmem_step_fail "ompi_info does not list btl devmem"
fi
# Debian 13's mpirun (PRRTE 3.0) hands every rank the component path of Debian's PMIx
# configuration (mca_base_component_path in pmix-mca-params.conf, forwarded as
# OMPI_MCA_mca_base_component_path), so that no component in Open MPI's own directory is
# found under mpirun (srun and singletons are not affected). There the job names Open MPI's
# directory on its command line, as doc/admin-guide.md says; the plain command is not run.
extra=()
leaked=$(timeout 30 "${clean[@]}" mpirun -np 1 env 2>/dev/null | sed -n 's/^OMPI_MCA_mca_base_component_path=//p')
if [ -n "$leaked" ] && [[ ":$leaked:" != *":$ompi_dir:"* ]]; then
    echo "---- this mpirun gives ranks OMPI_MCA_mca_base_component_path=$leaked, without $ompi_dir:"
    echo "     the plain 'mpirun --mca pml ob1 --mca btl devmem,self' cannot find any component there;"
    echo "     not run, the job below names the directory (--mca mca_base_component_path)"
    extra=(--mca mca_base_component_path "$ompi_dir")
fi
out=$T/run.out
timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" "${clean[@]}" mpirun --oversubscribe -np 2 "${extra[@]}" \
    --mca pml ob1 --mca btl devmem,self --mca btl_devmem_stats 1 \
    "$DEVMEM_MPI_BIN/pingpong" -m 4M >"$out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^pingpong: OK np=2' "$out" && grep -q 'btl_devmem stats: rank=1 ' "$out"; then
    devmem_step_ok "mpirun ${extra[*]} --mca pml ob1 --mca btl devmem,self: $(grep '^pingpong: OK' "$out")"
else
    cat "$out"
    devmem_step_fail "the 2-rank job over the packaged component (exit $rc)"
fi
for tool in /usr/bin/devmem-probe /usr/bin/devmem-check /usr/sbin/devmem-helperd; do
    [ -x "$tool" ] && devmem_step_ok "$tool installed" || devmem_step_fail "$tool missing"
done
"${clean[@]}" devmem-probe -n -i lo >"$T/probe.out" 2>&1 && grep -q '^  verdict: ' "$T/probe.out" &&
    devmem_step_ok "devmem-probe runs from PATH" || devmem_step_fail "devmem-probe -n -i lo failed"
unit=$(dpkg -L btl-devmem | grep '/systemd/system/devmem-helperd\.service$' | head -n 1)
if [ -n "$unit" ] && grep -q '^ExecStart=/usr/sbin/devmem-helperd --foreground --config /etc/devmem-helperd.conf$' "$unit" &&
    ! ls /etc/systemd/system/*.wants/devmem-helperd.service >/dev/null 2>&1; then
    devmem_step_ok "the helper's unit is installed ($unit), not enabled"
else
    devmem_step_fail "the helper's unit: missing, with another ExecStart, or enabled"
fi

# ---- removed
if dpkg -r btl-devmem >"$T/remove.log" 2>&1 && [ ! -e "$ompi_dir/mca_btl_devmem.so" ] &&
    "${clean[@]}" ompi_info >"$T/info.out" 2>&1 && grep -q 'MCA btl: self' "$T/info.out" &&
    ! grep -q 'MCA btl: devmem' "$T/info.out"; then
    devmem_step_ok "dpkg -r takes the component away"
else
    cat "$T/remove.log"
    devmem_step_fail "after dpkg -r the component is still there"
fi
devmem_finish
