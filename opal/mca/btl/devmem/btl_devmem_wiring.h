/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the layers are joined. A lower layer never calls a higher one (doc/design.md, Layers);
 * what it must tell one goes through what the higher one registered, all of it here, so that
 * a reader of endpoint.c who meets hooks.get_req finds in one place who answers:
 *   - the endpoint's hooks: a connection came up, closes, drops its socket or goes away; a
 *     SEND frame takes its place on the wire; the frames of the layers above (GET_REQ,
 *     GET_RESP, PUSH, DEVFLOW, LANES) and the checks every frame needs first;
 *   - the lanes a get may take (get and put ask the device flows how a get is cut);
 *   - each layer's per-peer state on the endpoint and per-fragment state on the fragment
 *     (rdma, push, devflow register theirs in their init, called from here).
 * Two more are set where their layer starts: the device layer's accept callback
 * (mca_btl_devmem_dev_init, given the device flows' in btl_devmem_component.c) and the
 * receiving threads, which serve the device flows' lanes (mca_btl_devmem_rxthreads_start).
 * A fragment's completion is its owner's: the done function the layer that made it set.
 */
#ifndef MCA_BTL_DEVMEM_WIRING_H
#define MCA_BTL_DEVMEM_WIRING_H

/* At the component's init, before any endpoint or fragment exists: OPAL_SUCCESS, or
 * OPAL_ERR_OUT_OF_RESOURCE when the per-peer states do not fit the endpoint's slots. */
int mca_btl_devmem_wiring_init(void);

#endif /* MCA_BTL_DEVMEM_WIRING_H */
