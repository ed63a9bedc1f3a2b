/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether the job's point-to-point layer drives BTLs at all: said once when it does not.
 */
#ifndef MCA_BTL_DEVMEM_PML_H
#define MCA_BTL_DEVMEM_PML_H

#include "base/btl_devmem.h"

BEGIN_C_DECLS

/* At component open, before Open MPI chooses its PML: look once it has (a timer). */
void mca_btl_devmem_pml_check_start(void);
/* The PML asked for peers (add_procs): it drives BTLs, nothing to say. */
void mca_btl_devmem_pml_check_used(void);
void mca_btl_devmem_pml_check_stop(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_PML_H */
