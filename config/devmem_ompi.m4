dnl SPDX-License-Identifier: BSD-3-Clause
dnl DEVMEM_FIND_OMPI: locate an installed Open MPI with its developer headers.
dnl
dnl Found from --with-ompi=PREFIX (bin/mpicc under it) or the mpicc on PATH. Open MPI 5's
dnl developer headers need two helpers (below): the headers its install leaves out, from its
dnl source (--with-ompi-src), and PMIx's, which its mpicc does not name.
dnl Sets and substitutes:
dnl   OMPI_CPPFLAGS OMPI_LDFLAGS OMPI_LIBS  flags to build a component against it
dnl   MPICC                                 the wrapper compiler (tests and benchmarks)
dnl   OMPI_MPI_LIBS                         the MPI libraries its wrapper links (Open MPI 6:
dnl                                         -lmpi -lopen_mpi), for programs built without it
dnl   DEVMEM_OMPI_VERSION                   x.y.z read from its opal_config.h
dnl   DEVMEM_BTL_API                        BTL_VERSION from its btl.h (310 = 3.1, 330 = 3.3)
dnl   DEVMEM_OMPI_PKGLIBDIR                 its own component directory (ompi_info --path pkglibdir)
AC_DEFUN([DEVMEM_FIND_OMPI], [
    AC_ARG_WITH([ompi],
        [AS_HELP_STRING([--with-ompi=PREFIX],
                        [Open MPI installation to build against (default: the mpicc on PATH)])],
        [], [with_ompi=])
    AS_IF([test -n "$with_ompi"],
          [AC_PATH_PROG([MPICC], [mpicc], [], [$with_ompi/bin])],
          [AC_PATH_PROG([MPICC], [mpicc])])
    AS_IF([test -z "$MPICC"],
          [AC_MSG_ERROR([mpicc not found; install Open MPI's development package (Debian: libopenmpi-dev) or pass --with-ompi=PREFIX])])
    AS_IF([test -n "$with_ompi"],
          [AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$with_ompi/bin])],
          [AC_PATH_PROG([OMPI_INFO], [ompi_info])])

    AC_MSG_CHECKING([Open MPI include directories])
    devmem_ompi_incdirs=`$MPICC --showme:incdirs 2>/dev/null`
    OMPI_CPPFLAGS=
    for d in $devmem_ompi_incdirs; do
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"
        AS_IF([test -f "$d/openmpi/opal_config.h"], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d/openmpi"])
    done
    AC_MSG_RESULT([$OMPI_CPPFLAGS])

    AC_MSG_CHECKING([Open MPI library directories])
    devmem_ompi_libdirs=`$MPICC --showme:libdirs 2>/dev/null`
    OMPI_LDFLAGS=
    for d in $devmem_ompi_libdirs; do OMPI_LDFLAGS="$OMPI_LDFLAGS -L$d -Wl,-rpath,$d"; done
    AC_MSG_RESULT([$OMPI_LDFLAGS])
    DEVMEM_OMPI_PREFIX=`echo $devmem_ompi_libdirs | sed 's/ .*//'`

    devmem_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    devmem_opal_config_h=
    for d in $devmem_ompi_incdirs; do
        AS_IF([test -z "$devmem_opal_config_h" && test -f "$d/openmpi/opal_config.h"],
              [devmem_opal_config_h=$d/openmpi/opal_config.h])
        AS_IF([test -z "$devmem_opal_config_h" && test -f "$d/opal_config.h"],
              [devmem_opal_config_h=$d/opal_config.h])
    done
    AS_IF([test -z "$devmem_opal_config_h"],
        [AC_MSG_ERROR([opal_config.h not found: this Open MPI was installed without developer headers (Debian: install libopenmpi-dev; a source build: configure it --with-devel-headers)])])
    dnl Open MPI's headers are its compiler's: one built by gcc with _Float16 short floats,
    dnl say, does not compile with an older clang
    devmem_ompi_cc=`$MPICC --showme:command 2>/dev/null`
    AC_CHECK_HEADER([opal_config.h], [],
        [AC_MSG_ERROR([$devmem_opal_config_h does not compile with $CC; Open MPI was built with $devmem_ompi_cc (use that compiler: CC=$devmem_ompi_cc); config.log has the compiler's words])])

    dnl Read from the text: on an install with missing headers, opal_config.h does not compile.
    AC_MSG_CHECKING([Open MPI version])
    devmem_ompi_major=`sed -n 's/^@%:@define OPAL_MAJOR_VERSION \([[0-9]]*\).*/\1/p' "$devmem_opal_config_h"`
    devmem_ompi_minor=`sed -n 's/^@%:@define OPAL_MINOR_VERSION \([[0-9]]*\).*/\1/p' "$devmem_opal_config_h"`
    devmem_ompi_release=`sed -n 's/^@%:@define OPAL_RELEASE_VERSION \([[0-9]]*\).*/\1/p' "$devmem_opal_config_h"`
    DEVMEM_OMPI_VERSION="$devmem_ompi_major.$devmem_ompi_minor.$devmem_ompi_release"
    AC_MSG_RESULT([$DEVMEM_OMPI_VERSION (from $devmem_opal_config_h)])

    DEVMEM_OMPI_PMIX
    CPPFLAGS="$devmem_save_CPPFLAGS $OMPI_CPPFLAGS"

    dnl The OPAL headers the component includes, in one go: where they do not compile, look
    dnl for named-but-missing headers (Open MPI 5) and take them from its source.
    m4_define([DEVMEM_OPAL_PROBE], [AC_LANG_SOURCE([[#include <opal_config.h>
#include <opal/class/opal_free_list.h>
#include <opal/mca/btl/btl.h>
#include <opal/mca/btl/base/base.h>
#include <opal/util/proc.h>]])])
    AC_MSG_CHECKING([whether Open MPI's BTL headers compile])
    AC_COMPILE_IFELSE([DEVMEM_OPAL_PROBE], [AC_MSG_RESULT([yes])], [
        AC_MSG_RESULT([no])
        DEVMEM_OMPI_MISSING_HEADERS
        CPPFLAGS="$devmem_save_CPPFLAGS $OMPI_CPPFLAGS"
        AC_MSG_CHECKING([whether Open MPI's BTL headers compile now])
        AC_COMPILE_IFELSE([DEVMEM_OPAL_PROBE], [AC_MSG_RESULT([yes])], [
            AC_MSG_RESULT([no])
            AC_MSG_ERROR([Open MPI $DEVMEM_OMPI_VERSION's BTL headers do not compile (opal/mca/btl/btl.h and what it includes); config.log has the compiler's words])])
    ])

    AC_MSG_CHECKING([BTL API version])
    AC_COMPUTE_INT([DEVMEM_BTL_API], [BTL_VERSION],
                   [#include <opal_config.h>
                    #include <opal/mca/btl/btl.h>], [DEVMEM_BTL_API=0])
    AC_MSG_RESULT([$DEVMEM_BTL_API])
    dnl ob1 refuses an eager limit below its largest header (contrib/devmem-device-buffers.conf)
    AS_CASE([$DEVMEM_BTL_API],
        [310], [DEVMEM_OB1_EAGER_MIN=56],
        [330], [DEVMEM_OB1_EAGER_MIN=80],
        [AC_MSG_ERROR([unsupported BTL API version $DEVMEM_BTL_API (supported: 310 in Open MPI 4.1, 330 in 5.0)])])
    AC_MSG_CHECKING([whether Open MPI has CUDA support])
    AC_COMPUTE_INT([devmem_ompi_cuda], [OPAL_CUDA_SUPPORT + 0], [#include <opal_config.h>],
                   [devmem_ompi_cuda=0])
    AS_IF([test "$devmem_ompi_cuda" = 1], [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
    CPPFLAGS=$devmem_save_CPPFLAGS

    OMPI_LIBS="-lopen-pal"
    dnl A 4.x BTL that takes device buffers must start Open MPI's CUDA support itself (the
    dnl convertor copies device memory only once a BTL has called it): libmca_common_cuda.
    AS_IF([test "$devmem_ompi_cuda" = 1 && test "$DEVMEM_BTL_API" -lt 330], [
        devmem_save_LDFLAGS=$LDFLAGS
        LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
        AC_CHECK_LIB([mca_common_cuda], [mca_common_cuda_stage_one_init],
            [OMPI_LIBS="$OMPI_LIBS -lmca_common_cuda"],
            [AC_MSG_ERROR([this Open MPI has CUDA support but no libmca_common_cuda])],
            [-lopen-pal])
        LDFLAGS=$devmem_save_LDFLAGS
    ])
    dnl 5.x: the component calls libevent through OPAL's macros
    AS_IF([test "$DEVMEM_BTL_API" -ge 330], [OMPI_LIBS="$OMPI_LIBS -levent_core -levent_pthreads"])

    DEVMEM_OMPI_PKGLIBDIR=
    AS_IF([test -n "$OMPI_INFO"],
          [DEVMEM_OMPI_PKGLIBDIR=`$OMPI_INFO --path pkglibdir 2>/dev/null | sed -e 's/.*: *//'`])

    dnl 128-bit compare-and-swap in OPAL's inline atomics needs it on x86_64.
    AS_CASE([$host_cpu], [x86_64], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -mcx16"])

    AC_DEFINE_UNQUOTED([DEVMEM_BUILT_OMPI_VERSION], ["$DEVMEM_OMPI_VERSION"],
                       [Open MPI version the component was built against])
    AC_SUBST([MPICC])
    AC_SUBST([OMPI_CPPFLAGS])
    AC_SUBST([OMPI_LDFLAGS])
    AC_SUBST([OMPI_LIBS])
    OMPI_MPI_LIBS=
    for l in `$MPICC --showme:libs 2>/dev/null`; do OMPI_MPI_LIBS="$OMPI_MPI_LIBS -l$l"; done
    AS_IF([test -z "$OMPI_MPI_LIBS"], [OMPI_MPI_LIBS=-lmpi])
    AC_SUBST([OMPI_MPI_LIBS])
    AC_SUBST([DEVMEM_OMPI_VERSION])
    AC_SUBST([DEVMEM_BTL_API])
    AC_SUBST([DEVMEM_OB1_EAGER_MIN])
    AC_SUBST([DEVMEM_OMPI_PKGLIBDIR])
])

dnl DEVMEM_OMPI_MISSING_HEADERS: Open MPI 5.0's --with-devel-headers install leaves out the
dnl headers its opal_config.h names for the threads and timer frameworks (an Open MPI bug:
dnl 5.0.7 and 5.0.10 at least). They are plain source files, so the same version's source tree
dnl supplies them: --with-ompi-src=DIR copies the missing ones into the build tree.
AC_DEFUN([DEVMEM_OMPI_MISSING_HEADERS], [
    AC_ARG_WITH([ompi-src],
        [AS_HELP_STRING([--with-ompi-src=DIR],
                        [source tree of the same Open MPI version, for the headers an Open MPI 5 install lacks (Debian: apt-get source openmpi; otherwise the release tarball, unpacked)])],
        [], [with_ompi_src=])
    AC_MSG_CHECKING([for headers Open MPI's opal_config.h names but did not install])
    devmem_ompi_named=`sed -n 's/^@%:@define MCA_[[A-Za-z0-9_]]*_HEADER "\(opal\/[[^"]]*\)"/\1/p' "$devmem_opal_config_h"`
    devmem_ompi_missing=
    for h in $devmem_ompi_named; do
        devmem_found=no
        for d in $devmem_ompi_incdirs; do
            AS_IF([test -f "$d/$h" || test -f "$d/openmpi/$h"], [devmem_found=yes])
        done
        AS_IF([test "$devmem_found" = no], [devmem_ompi_missing="$devmem_ompi_missing $h"])
    done
    AS_IF([test -z "$devmem_ompi_missing"], [AC_MSG_RESULT([none])
           AC_MSG_ERROR([Open MPI $DEVMEM_OMPI_VERSION's BTL headers do not compile, and no header its opal_config.h names is missing; config.log has the compiler's words])], [
        AC_MSG_RESULT([$devmem_ompi_missing])
        AS_IF([test -z "$with_ompi_src"], [AC_MSG_ERROR([Open MPI $DEVMEM_OMPI_VERSION was installed without headers its own opal_config.h includes:
   $devmem_ompi_missing
This is an Open MPI bug (--with-devel-headers leaves them out). They come from the source
of the same version: configure again with --with-ompi-src=DIR, where DIR is
  - on Debian or Ubuntu: the tree that 'apt-get source openmpi' unpacks (needs deb-src lines)
  - otherwise: openmpi-$DEVMEM_OMPI_VERSION.tar.bz2 from the Open MPI release, unpacked
  - or the tree Open MPI was built from.])])
        devmem_src_version=
        AS_IF([test -f "$with_ompi_src/VERSION"], [
            devmem_src_version=`sed -n 's/^major=//p; s/^minor=//p; s/^release=//p' "$with_ompi_src/VERSION" | tr '\n' . | sed 's/\.$//'`
        ])
        AS_IF([test "$devmem_src_version" != "$DEVMEM_OMPI_VERSION"],
              [AC_MSG_ERROR([--with-ompi-src=$with_ompi_src is not the source of Open MPI $DEVMEM_OMPI_VERSION (its VERSION file says '$devmem_src_version')])])
        dnl each with the other headers of its component's directory, which it includes
        devmem_hdr_dir=`pwd`/ompi-headers
        for h in $devmem_ompi_missing; do
            AS_IF([test -f "$with_ompi_src/$h"], [],
                  [AC_MSG_ERROR([$h is not in $with_ompi_src either])])
            devmem_d=`dirname $h`
            AS_MKDIR_P([$devmem_hdr_dir/$devmem_d])
            cp "$with_ompi_src/$devmem_d"/*.h "$devmem_hdr_dir/$devmem_d/"
        done
        AC_MSG_NOTICE([copied them from $with_ompi_src into $devmem_hdr_dir])
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$devmem_hdr_dir"
        CPPFLAGS="$CPPFLAGS -I$devmem_hdr_dir"
    ])
])

dnl DEVMEM_OMPI_PMIX: Open MPI 5's headers include <pmix.h>, which mpicc does not name.
dnl The PMIx to use is the one that Open MPI was built with: --with-pmix=DIR, else the one
dnl installed under Open MPI's own prefix (its internal PMIx), else the one its configure
dnl line named, else pkg-config's.
AC_DEFUN([DEVMEM_OMPI_PMIX], [
    AC_ARG_WITH([pmix],
        [AS_HELP_STRING([--with-pmix=DIR],
                        [PMIx installation that Open MPI 5 was built with (default: Open MPI's own prefix, its configure line, then pkg-config)])],
        [], [with_pmix=])
    AS_IF([test "$devmem_ompi_major" -ge 5], [
        devmem_ompi_root=`echo "$DEVMEM_OMPI_PREFIX" | sed 's|/lib[[^/]]*$||'`
        devmem_pmix_from_ompi=
        AS_IF([test -n "$OMPI_INFO"], [
            devmem_pmix_from_ompi=`$OMPI_INFO 2>/dev/null | sed -n "s/.*'--with-pmix=\(\/[[^']]*\)'.*/\1/p"`
        ])
        devmem_pmix_cands=
        AS_IF([test -n "$with_pmix"], [devmem_pmix_cands="dir:$with_pmix"],
              [devmem_pmix_cands="none dir:$devmem_ompi_root ${devmem_pmix_from_ompi:+dir:$devmem_pmix_from_ompi} pkg-config"])
        AC_MSG_CHECKING([for the PMIx headers Open MPI $DEVMEM_OMPI_VERSION was built with])
        devmem_pmix_cflags=no
        devmem_pmix_cpp=$CPPFLAGS
        for c in $devmem_pmix_cands; do
            AS_CASE([$c],
                [none], [devmem_try=],
                [dir:*], [devmem_try="-I`echo "$c" | sed 's/^dir://'`/include"],
                [pkg-config], [devmem_try=`$PKG_CONFIG --cflags pmix 2>/dev/null` || continue])
            CPPFLAGS="$devmem_pmix_cpp $devmem_try"
            AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <pmix.h>]])],
                              [devmem_pmix_cflags=$devmem_try; break])
        done
        CPPFLAGS=$devmem_pmix_cpp
        AS_IF([test "$devmem_pmix_cflags" = no],
              [AC_MSG_ERROR([pmix.h not found for Open MPI $DEVMEM_OMPI_VERSION: pass --with-pmix=DIR, the PMIx it was built with])])
        AC_MSG_RESULT([${devmem_pmix_cflags:-found with Open MPI's own flags}])
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS $devmem_pmix_cflags"
        CPPFLAGS="$CPPFLAGS $devmem_pmix_cflags"
    ])
])
