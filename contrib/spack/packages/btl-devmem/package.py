# SPDX-License-Identifier: BSD-3-Clause
"""Spack package of btl_devmem (contrib/spack: a repository of one package).

    spack repo add PATH/contrib/spack
    spack config add 'packages:btl-devmem:package_attributes:git:PATH'   # your clone
    spack install btl-devmem@main ^openmpi@4.1.4                          # Open MPI an external

The component builds against an installed Open MPI with its developer headers (opal/...):
a site's or a distribution's Open MPI declared as an external (packages.yaml). Spack's own
openmpi package installs no such headers. Open MPI 5.0's developer headers lack a few that its
opal_config.h names: the same version's source tree supplies them (a resource here, passed as
--with-ompi-src).
"""

import os

from spack.package import *
from spack.pkg.builtin.openmpi import Openmpi


class BtlDevmem(AutotoolsPackage):
    """An Open MPI BTL over TCP that uses Linux device-memory TCP (devmem): received payloads
    go from the NIC straight into GPU memory where the NIC, the kernel and the GPU allow it,
    and it is an ordinary fast TCP transport elsewhere. Installs the component into its own
    prefix (lib/openmpi, which the modulefile adds to Open MPI's component path), the tools
    devmem-probe and devmem-check, and optionally the root helper devmem-helperd."""

    # No public address yet: point package_attributes:git at your clone (see above).
    git = ""

    license("BSD-3-Clause")

    version("main", branch="main")

    variant(
        "cuda",
        default=False,
        description="GPU buffers without extra settings: require a CUDA-aware Open MPI "
        "(the component itself loads the CUDA driver at run time and builds without CUDA)",
    )
    variant(
        "helper",
        default=True,
        description="Install devmem-helperd (sbin) and its systemd unit, for ranks of users "
        "without CAP_NET_ADMIN",
    )

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("openmpi")
    depends_on("openmpi+cuda", when="+cuda")
    depends_on("libmnl")
    depends_on("libdrm")
    depends_on("hwloc@2:")

    # Open MPI 5's developer headers miss a few of those its opal_config.h names: the same
    # version's release tarball, with the checksum Spack's own openmpi package knows for it
    for _v, _info in Openmpi.versions.items():
        if _v.satisfies(Version("5")) and "sha256" in _info:
            resource(
                name="openmpi-src",
                url=Openmpi.url_for_version(None, _v),
                sha256=_info["sha256"],
                destination="ompi-src",
                when=f"^openmpi@{_v}",
            )

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        args = [f"--with-ompi={self.spec['openmpi'].prefix}"]
        src = join_path(self.stage.source_path, "ompi-src")
        if self.spec.satisfies("^openmpi@5:") and os.path.isdir(src):
            tops = [d for d in os.listdir(src) if d.startswith("openmpi-")]
            if tops:
                args.append(f"--with-ompi-src={join_path(src, tops[0])}")
        return args

    @run_after("install")
    def drop_helper(self):
        if self.spec.satisfies("~helper"):
            for f in (
                join_path(self.prefix.sbin, "devmem-helperd"),
                join_path(self.prefix.share, "man", "man8", "devmem-helperd.8"),
                join_path(self.prefix.share, "btl_devmem", "devmem-helperd.service"),
                join_path(self.prefix.share, "btl_devmem", "devmem-helperd.conf"),
            ):
                if os.path.exists(f):
                    os.remove(f)
            if os.path.isdir(self.prefix.sbin) and not os.listdir(self.prefix.sbin):
                os.rmdir(self.prefix.sbin)

    def setup_run_environment(self, env):
        # Open MPI finds the component here. The variable replaces Open MPI's own default, so
        # its own component directory (ompi_info says where) follows ours, as in the modulefile
        ompi_info = Executable(join_path(self.spec["openmpi"].prefix.bin, "ompi_info"))
        own = ompi_info("--path", "pkglibdir", output=str, error=os.devnull, fail_on_error=False)
        own = own.split(":", 1)[-1].strip()
        env.set(
            "OMPI_MCA_mca_base_component_path",
            ":".join(d for d in (self.prefix.lib.openmpi, own) if d),
        )
