# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests, the demo and the benchmarks: where the build is, how to point
# Open MPI at the freshly installed component, and a bounded mpirun.
#
# Inputs (optional): DEVMEM_BUILD (build tree, default <repo>/build),
#                    DEVMEM_PREFIX (install prefix, default $DEVMEM_BUILD/install).

DEVMEM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEVMEM_BUILD=${DEVMEM_BUILD:-$DEVMEM_SRC/build}
DEVMEM_PREFIX=${DEVMEM_PREFIX:-$DEVMEM_BUILD/install}
export DEVMEM_SRC DEVMEM_BUILD DEVMEM_PREFIX

# Whether the build has netlink (libmnl, optional in configure): without it the real kernel is
# never asked, and where a test expects the kernel's refusal the component says "built
# without libmnl" instead. A build inside Open MPI's tree has no config.h of ours: taken as
# having it, as the check's builds do.
DEVMEM_HAVE_LIBMNL=1
if [ -f "$DEVMEM_BUILD/config.h" ] && ! grep -q '^#define HAVE_LIBMNL 1' "$DEVMEM_BUILD/config.h"; then
    DEVMEM_HAVE_LIBMNL=0
fi
export DEVMEM_HAVE_LIBMNL

# The Open MPI the build was configured for (configure --with-ompi=PREFIX, or the one on PATH
# then): its mpirun, ompi_info and mpicc come first.
_devmem_mpicc=$(sed -n 's/^MPICC = //p' "$DEVMEM_BUILD/Makefile" 2>/dev/null)
if [ -n "$_devmem_mpicc" ] && [ -x "$_devmem_mpicc" ]; then
    PATH=$(dirname "$_devmem_mpicc"):$PATH
    export PATH
fi
unset _devmem_mpicc

# Setting the component path replaces Open MPI's default, so keep its own directory in it.
DEVMEM_OMPI_PKGLIBDIR=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
# Only name our directory when it exists: Open MPI 4.1.4 mis-parses the whole command line
# ('mpirun: Error: unknown option "--oversubscribe"') when the first entry of the path is missing,
# which is the case before `make install` (e.g. runs with DEVMEM_TEST_BTL=tcp,self).
# DEVMEM_COMPONENT_FROM_OMPI=1: the component Open MPI has in its own directory (built in its
# source tree, or `make install-ompi`), not this build's.
if [ "${DEVMEM_COMPONENT_FROM_OMPI:-0}" = 1 ]; then
    export OMPI_MCA_mca_base_component_path="$DEVMEM_OMPI_PKGLIBDIR"
elif [ -d "$DEVMEM_PREFIX/lib/openmpi" ]; then
    export OMPI_MCA_mca_base_component_path="$DEVMEM_PREFIX/lib/openmpi:$DEVMEM_OMPI_PKGLIBDIR"
else
    export OMPI_MCA_mca_base_component_path="$DEVMEM_OMPI_PKGLIBDIR"
fi
# CI and the quickstart run as root without a terminal.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No ssh: every "remote" launch goes through our own agents.
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}

# devmem_mpirun SECONDS mpirun-args...: mpirun that cannot hang a test run.
devmem_mpirun() {
    local limit=$1
    shift
    timeout --kill-after=10 "$limit" mpirun --oversubscribe "$@"
}
