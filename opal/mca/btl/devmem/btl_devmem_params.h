/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's MCA parameters (btl_devmem_params.c).
 */
#ifndef MCA_BTL_DEVMEM_PARAMS_H
#define MCA_BTL_DEVMEM_PARAMS_H

#include "opal_config.h"

BEGIN_C_DECLS

/* Registers every parameter of the component and the base BTL ones (the MCA register hook). */
int mca_btl_devmem_params_register(void);

/* The ranges of the parameters that have one and the settings of btl_devmem_testing, at
 * init: OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM with the user told which. */
int mca_btl_devmem_params_check(void);

/* At close: what the check kept of btl_devmem_testing goes. */
void mca_btl_devmem_params_fini(void);

/* Set btl_devmem_device_paths, the informational variable that tells MPI_T readers
 * (devmem-check) what the device path is on each interface. */
void mca_btl_devmem_params_status(const char *text);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_PARAMS_H */
