/*
 * What differs between the Open MPI series the component builds against (4.1 and 5.0), in
 * one place, so that the other files read the same for both. The series is told by the BTL
 * interface version: 3.1 in Open MPI 4.1, 3.3 in 5.0.
 */
#ifndef MCA_BTL_DEVMEM_OMPI_H
#define MCA_BTL_DEVMEM_OMPI_H

#include "opal_config.h"

#include "opal/mca/btl/btl.h"

#if BTL_VERSION >= 330
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/util/event.h"
#else
#include "opal/mca/event/event.h"
#include "opal/mca/pmix/pmix.h"
#endif

/* The component symbol the MCA base looks up in our DSO. */
#if BTL_VERSION >= 330
#define MCA_BTL_DEVMEM_EXPORT OPAL_DECLSPEC
#else
#define MCA_BTL_DEVMEM_EXPORT OPAL_MODULE_DECLSPEC
#endif

/* Modex scope: 5.0 passes PMIx's own constants, 4.1 its wrapper's. */
#if BTL_VERSION >= 330
#define MCA_BTL_DEVMEM_MODEX_SCOPE PMIX_GLOBAL
#else
#define MCA_BTL_DEVMEM_MODEX_SCOPE OPAL_PMIX_GLOBAL
#endif

#endif /* MCA_BTL_DEVMEM_OMPI_H */
