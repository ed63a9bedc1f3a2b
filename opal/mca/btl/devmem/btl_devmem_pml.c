/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job's PML, and whether it drives BTLs. ob1 sends through the BML and so through this
 * component; ucx and cm (MTLs) do not, and they outrank ob1 where their hardware is (pml ucx
 * on a node with a ConnectX NIC). Open MPI chooses the PML after the BTLs are initialized and
 * does not say which: a job that named btl devmem would run over something else in silence,
 * its stats at 0 bytes (Open MPI 4.1) or the component never even initialized (5.0). So from
 * the component's open on, once the PML is chosen (a timer, which fires from the progress
 * MPI_Init makes while it exchanges addresses), rank 0 of a job whose PML drives no BTL and
 * that named btl devmem says so once, with the fix. The PML is an Open MPI layer above this
 * one: its name is read from libmpi's selected component, looked up at run time, and nothing
 * is said where that symbol is not found.
 */
#include "opal_config.h"

#include <dlfcn.h>
#include <string.h>

#include "btl_devmem_pml.h"

#include "opal/mca/base/mca_base_var.h"

#define PML_SYMBOL "mca_pml_base_selected_component" /* its first member: the component */
#define PML_LOOKS 50                                 /* 5 s of 100 ms looks, then silence */

static opal_event_t timer;
static bool armed, used;
static int looks;

/* PMLs that carry point-to-point messages without any BTL. */
static bool drives_no_btl(const char *pml)
{
    static const char *const names[] = {"ucx", "cm", "yalla"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (0 == strcmp(pml, names[i])) {
            return true;
        }
    }
    return false;
}

/* Whether the btl selection names us (not "^devmem"): only then is silence a surprise. */
static bool named_by_user(void)
{
    const char *const *value = NULL;
    int idx = mca_base_var_find("opal", "btl", NULL, NULL);

    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL)
        || NULL == value || NULL == *value || '^' == (*value)[0]) {
        return false;
    }
    for (const char *p = *value; NULL != (p = strstr(p, "devmem")); p += 6) {
        if ((p == *value || ',' == p[-1]) && (',' == p[6] || '\0' == p[6])) {
            return true;
        }
    }
    return false;
}

static void look(int fd, short flags, void *arg)
{
    const mca_base_component_t *pml = dlsym(RTLD_DEFAULT, PML_SYMBOL);
    struct timeval again = {0, 100000};

    (void) fd, (void) flags, (void) arg;
    armed = false;
    if (used || NULL == pml) {
        return;
    }
    if ('\0' == pml->mca_component_name[0]) { /* not chosen yet */
        if (++looks < PML_LOOKS) {
            opal_event_evtimer_add(&timer, &again);
            armed = true;
        }
        return;
    }
    DEVMEM_VERBOSE(10, "the job's PML is %s", pml->mca_component_name);
    if (drives_no_btl(pml->mca_component_name) && named_by_user()
        && 0 == opal_proc_local_get()->proc_name.vpid) {
        mca_btl_devmem_show_help_local("pml drives no btl", pml->mca_component_name,
                                       pml->mca_component_name);
    }
}

void mca_btl_devmem_pml_check_start(void)
{
    struct timeval now = {0, 0};

    /* tools that open components without the event library (ompi_info) have no base */
    if (armed || used || NULL == opal_sync_event_base) {
        return;
    }
    opal_event_evtimer_set(opal_sync_event_base, &timer, look, NULL);
    opal_event_evtimer_add(&timer, &now);
    armed = true;
}

void mca_btl_devmem_pml_check_used(void)
{
    used = true;
}

void mca_btl_devmem_pml_check_stop(void)
{
    if (armed) {
        opal_event_del(&timer);
        armed = false;
    }
}
