dnl DEVMEM_FIND_OMPI: locate an installed Open MPI with its developer headers.
dnl
dnl Found from --with-ompi=PREFIX (bin/mpicc under it) or the mpicc on PATH.
dnl Sets and substitutes:
dnl   OMPI_CPPFLAGS OMPI_LDFLAGS OMPI_LIBS  flags to build a component against it
dnl   MPICC                                 the wrapper compiler (tests and benchmarks)
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
    AC_CHECK_HEADER([opal_config.h], [],
        [AC_MSG_ERROR([opal_config.h not found: this Open MPI was installed without developer headers (Debian: install libopenmpi-dev)])])
    AC_CHECK_HEADER([opal/mca/btl/btl.h], [],
        [AC_MSG_ERROR([opal/mca/btl/btl.h not found: Open MPI's developer headers are incomplete])],
        [#include <opal_config.h>])

    AC_MSG_CHECKING([Open MPI version])
    AC_COMPUTE_INT([devmem_ompi_major], [OPAL_MAJOR_VERSION], [#include <opal_config.h>], [devmem_ompi_major=0])
    AC_COMPUTE_INT([devmem_ompi_minor], [OPAL_MINOR_VERSION], [#include <opal_config.h>], [devmem_ompi_minor=0])
    AC_COMPUTE_INT([devmem_ompi_release], [OPAL_RELEASE_VERSION], [#include <opal_config.h>], [devmem_ompi_release=0])
    DEVMEM_OMPI_VERSION="$devmem_ompi_major.$devmem_ompi_minor.$devmem_ompi_release"
    AC_MSG_RESULT([$DEVMEM_OMPI_VERSION])

    AC_MSG_CHECKING([BTL API version])
    AC_COMPUTE_INT([DEVMEM_BTL_API], [BTL_VERSION],
                   [#include <opal_config.h>
                    #include <opal/mca/btl/btl.h>], [DEVMEM_BTL_API=0])
    AC_MSG_RESULT([$DEVMEM_BTL_API])
    AS_CASE([$DEVMEM_BTL_API],
        [310], [],
        [330], [AC_MSG_WARN([BTL API 3.3 (Open MPI 5.x): the code is written for it, but only 3.1 is tested])],
        [AC_MSG_ERROR([unsupported BTL API version $DEVMEM_BTL_API (supported: 310, 330)])])
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
    AS_IF([test "$DEVMEM_BTL_API" -ge 330], [
        dnl 5.x headers include PMIx's and libevent's (mpicc omits them, ompi#10315)
        PKG_CHECK_MODULES([PMIX], [pmix], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS $PMIX_CFLAGS"], [:])
        OMPI_LIBS="$OMPI_LIBS -levent_core -levent_pthreads"
    ])

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
    AC_SUBST([DEVMEM_OMPI_VERSION])
    AC_SUBST([DEVMEM_BTL_API])
    AC_SUBST([DEVMEM_OMPI_PKGLIBDIR])
])
