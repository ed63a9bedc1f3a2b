dnl SPDX-License-Identifier: BSD-3-Clause
dnl btl/devmem built inside an Open MPI source tree: copy this directory to
dnl opal/mca/btl/devmem of an Open MPI 5.0 tree and run its autogen.pl, which finds this
dnl file, then configure and build Open MPI as usual. (This project's own configure.ac
dnl builds the same directory against an installed Open MPI instead; Makefile.am serves both,
dnl told apart by DEVMEM_IN_OMPI_TREE.)

dnl MCA_opal_btl_devmem_POST_CONFIG(should_build): conditionals outside any shell branch.
AC_DEFUN([MCA_opal_btl_devmem_POST_CONFIG], [
    AM_CONDITIONAL([DEVMEM_IN_OMPI_TREE], [true])
])

dnl MCA_opal_btl_devmem_CONFIG(action-if-can-build, action-if-cannot)
AC_DEFUN([MCA_opal_btl_devmem_CONFIG], [
    AC_CONFIG_FILES([opal/mca/btl/devmem/Makefile])
    btl_devmem_CPPFLAGS=
    btl_devmem_LIBS=
    dnl devmem TCP, netlink and the socket options are Linux's
    AS_CASE([$host_os], [linux*], [btl_devmem_happy=yes], [btl_devmem_happy=no])
    AS_IF([test "$btl_devmem_happy" = yes], [
        dnl the optional libraries of the kernel layer, as in config/devmem_libs.m4
        PKG_CHECK_MODULES([btl_devmem_libmnl], [libmnl],
            [btl_devmem_CPPFLAGS="$btl_devmem_CPPFLAGS -DHAVE_LIBMNL=1 $btl_devmem_libmnl_CFLAGS"
             btl_devmem_LIBS="$btl_devmem_LIBS $btl_devmem_libmnl_LIBS"],
            [AC_MSG_WARN([btl devmem: no libmnl, so no netlink binding (install libmnl-dev)])])
        PKG_CHECK_MODULES([btl_devmem_libdrm], [libdrm],
            [btl_devmem_CPPFLAGS="$btl_devmem_CPPFLAGS -DHAVE_LIBDRM=1 $btl_devmem_libdrm_CFLAGS"
             btl_devmem_LIBS="$btl_devmem_LIBS $btl_devmem_libdrm_LIBS"],
            [AC_MSG_NOTICE([btl devmem: no libdrm, so no drm dmabuf provider])])
        PKG_CHECK_MODULES([btl_devmem_hwloc], [hwloc >= 2.0],
            [btl_devmem_CPPFLAGS="$btl_devmem_CPPFLAGS -DHAVE_HWLOC=1 $btl_devmem_hwloc_CFLAGS"
             btl_devmem_LIBS="$btl_devmem_LIBS $btl_devmem_hwloc_LIBS"],
            [AC_MSG_NOTICE([btl devmem: no hwloc >= 2.0, so no NIC/GPU locality])])
        dnl the CUDA driver is loaded at run time
        AC_CHECK_LIB([dl], [dlopen], [btl_devmem_LIBS="$btl_devmem_LIBS -ldl"])
    ])
    dnl only the component structure leaves the DSO, or libopen-pal when linked in. Open
    dnl MPI checks its own visibility flag after configuring its components (empty here:
    dnl 6.0's in-tree DSO exported 391 symbols), so the compiler is asked here.
    btl_devmem_CFLAGS=
    btl_devmem_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -fvisibility=hidden -Werror"
    AC_MSG_CHECKING([whether btl devmem can hide its symbols])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[__attribute__((visibility("default"))) int btl_devmem_seen;]], [[]])],
        [btl_devmem_CFLAGS=-fvisibility=hidden
         AC_MSG_RESULT([yes (-fvisibility=hidden)])],
        [AC_MSG_RESULT([no])])
    CFLAGS=$btl_devmem_save_CFLAGS
    AC_SUBST([btl_devmem_CPPFLAGS])
    AC_SUBST([btl_devmem_CFLAGS])
    AC_SUBST([btl_devmem_LIBS])
    OPAL_SUMMARY_ADD([Transports], [TCP with device memory (devmem)], [], [$btl_devmem_happy])
    AS_IF([test "$btl_devmem_happy" = yes], [$1], [$2])
])
