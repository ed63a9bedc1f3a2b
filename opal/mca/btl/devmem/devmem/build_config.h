/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the build found (HAVE_LIBMNL, HAVE_LIBDRM, HAVE_HWLOC): from this project's config.h,
 * or, inside an Open MPI source tree, from the command line (configure.m4 there), where
 * "config.h" is no file of ours.
 */
#ifndef DEVMEM_BUILD_CONFIG_H
#define DEVMEM_BUILD_CONFIG_H

#if defined(HAVE_CONFIG_H) && !defined(DEVMEM_IN_OMPI_TREE)
#include "config.h"
#endif

#endif /* DEVMEM_BUILD_CONFIG_H */
