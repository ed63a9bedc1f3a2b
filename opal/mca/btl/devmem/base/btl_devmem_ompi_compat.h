/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the Open MPI series the component builds against (4.1 and 5.0), in
 * one place, so that the other files read the same for both. The series is told by the BTL
 * interface version: 3.1 in Open MPI 4.1, 3.3 in 5.0.
 */
#ifndef MCA_BTL_DEVMEM_OMPI_COMPAT_H
#define MCA_BTL_DEVMEM_OMPI_COMPAT_H

#include "opal_config.h"

#include <stdarg.h>
#include <stdlib.h>

#include "opal/mca/btl/btl.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

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

/* A help topic of ours, rendered here and printed on this process's stderr (show_help.c). Open MPI
 * 4.1's forwarding of show_help to mpirun loses long messages sent during MPI_Init (mpirun
 * says "Data unpack would read past end of buffer" instead), and the user errors found there
 * are the ones a user must see; every series prints them this one way. */
void mca_btl_devmem_show_help_local(const char *topic, ...);

/* Modex scope: 5.0 passes PMIx's own constants, 4.1 its wrapper's. */
#if BTL_VERSION >= 330
#define MCA_BTL_DEVMEM_MODEX_SCOPE PMIX_GLOBAL
#else
#define MCA_BTL_DEVMEM_MODEX_SCOPE OPAL_PMIX_GLOBAL
#endif

/* The CPUs a process of the job was bound to at launch, as the runtime lists them ("0-3,8",
 * PMIX_CPUSET); NULL when it was not bound or the runtime does not say. Free the result. */
static inline char *mca_btl_devmem_proc_cpus(const opal_proc_t *proc)
{
    char *list = NULL;
    int rc;

#if BTL_VERSION >= 330
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, PMIX_CPUSET, &proc->proc_name, &list, PMIX_STRING);
#else
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_CPUSET, &proc->proc_name, &list, OPAL_STRING);
#endif
    if (OPAL_SUCCESS != rc) {
        free(list);
        return NULL;
    }
    return list;
}

/* The number of processes in this job, 0 when the runtime does not say. */
static inline int mca_btl_devmem_job_size(void)
{
#if BTL_VERSION >= 330
    return (int) opal_process_info.num_procs;
#else
    opal_process_name_t wild = {.jobid = opal_proc_local_get()->proc_name.jobid,
                                .vpid = OPAL_VPID_WILDCARD};
    uint32_t size = 0, *sizep = &size;
    int rc;

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &wild, &sizep, OPAL_UINT32);
    return OPAL_SUCCESS == rc ? (int) size : 0;
#endif
}

/* Whether this component may be opened again in the same process: Open MPI 5 closes it when
 * the last MPI session ends and opens it for the next one; 4.1 initializes once. */
#if BTL_VERSION >= 330
#define MCA_BTL_DEVMEM_REOPENS 1
#else
#define MCA_BTL_DEVMEM_REOPENS 0
#endif

/* Open MPI 5's accelerator framework: which component it selected ("null" without one;
 * "cuda", "rocm", "ze") and whether it calls a pointer device memory. Open MPI 4.1 has no
 * such framework: device memory is what the component's own CUDA check finds. */
#if BTL_VERSION >= 330
#include <stdbool.h>
#include <stdint.h>

#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/accelerator/base/base.h"

static inline const char *mca_btl_devmem_accelerator(void)
{
    const char *name = opal_accelerator_base_selected_component.base_version.mca_component_name;
    return '\0' != name[0] ? name : "null";
}

static inline bool mca_btl_devmem_accelerator_is_device(const void *ptr)
{
    int dev_id = -1;
    uint64_t flags = 0;
    return NULL != opal_accelerator.check_addr
           && opal_accelerator.check_addr(ptr, &dev_id, &flags) > 0;
}
#else
static inline const char *mca_btl_devmem_accelerator(void)
{
    return "none";
}

static inline bool mca_btl_devmem_accelerator_is_device(const void *ptr)
{
    return false;
}
#endif

#endif /* MCA_BTL_DEVMEM_OMPI_COMPAT_H */
