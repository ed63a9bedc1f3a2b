dnl SPDX-License-Identifier: BSD-3-Clause
dnl DEVMEM_FIND_LIBS: the optional libraries of the kernel layer.
dnl Each is used where present and reported in the summary; none is required to build.
AC_DEFUN([DEVMEM_FIND_LIBS], [
    PKG_CHECK_MODULES([LIBMNL], [libmnl],
        [devmem_have_libmnl=yes; AC_DEFINE([HAVE_LIBMNL], [1], [libmnl is available])],
        [devmem_have_libmnl="no (netlink binding unavailable: install libmnl-dev)"])
    AM_CONDITIONAL([HAVE_LIBMNL], [test "$devmem_have_libmnl" = yes])

    PKG_CHECK_MODULES([LIBDRM], [libdrm],
        [devmem_have_libdrm=yes; AC_DEFINE([HAVE_LIBDRM], [1], [libdrm is available])],
        [devmem_have_libdrm="no (drm provider unavailable: install libdrm-dev)"])
    AM_CONDITIONAL([HAVE_LIBDRM], [test "$devmem_have_libdrm" = yes])

    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0],
        [devmem_have_hwloc=yes; AC_DEFINE([HAVE_HWLOC], [1], [hwloc is available])],
        [devmem_have_hwloc="no (NIC/GPU locality unavailable: install libhwloc-dev)"])
    AM_CONDITIONAL([HAVE_HWLOC], [test "$devmem_have_hwloc" = yes])

    dnl CUDA is never a build dependency: the cuda provider dlopens libcuda.so.1 and
    dnl declares the few driver entry points it needs. The headers only serve the GPU tests.
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit for the GPU tests (default: /usr/local/cuda)])],
        [], [with_cuda=/usr/local/cuda])
    AS_IF([test -f "$with_cuda/include/cuda.h"],
          [devmem_have_cuda_h="found in $with_cuda"; CUDA_HOME=$with_cuda],
          [devmem_have_cuda_h="not found (GPU tests skip)"; CUDA_HOME=])
    AC_SUBST([CUDA_HOME])

    AC_SEARCH_LIBS([dlopen], [dl])
])
