/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component: the Open MPI version check, interface selection, one
 * listen socket per module (what connects to it is btl_devmem_conn.c's), and the modex
 * record.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal.h"
#include "opal/util/show_help.h"

#include "base/btl_devmem.h"
#include "base/btl_devmem_fault.h"
#include "base/btl_devmem_frag.h"
#include "sockets/btl_devmem_helper.h"
#include "sockets/btl_devmem_pollset.h"
#include "sockets/btl_devmem_sock.h"
#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_conn.h"
#include "connections/btl_devmem_module.h"
#include "connections/btl_devmem_proc.h"
#include "rdma/btl_devmem_reg.h"
#include "devflow/btl_devmem_devflow.h"
#include "devflow/btl_devmem_rxthread.h"
#include "btl_devmem_liveness.h"
#include "btl_devmem_params.h"
#include "btl_devmem_pml.h"
#include "btl_devmem_progress.h"
#include "btl_devmem_stats.h"
#include "btl_devmem_wiring.h"

static int component_open(void);
static int component_close(void);
static mca_btl_base_module_t **component_init(int *num_btls, bool enable_progress_threads,
                                              bool enable_mpi_threads);

mca_btl_devmem_component_t mca_btl_devmem_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("devmem"),
            .mca_open_component = component_open,
            .mca_close_component = component_close,
            .mca_register_component_params = mca_btl_devmem_params_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = component_init,
        .btl_progress = mca_btl_devmem_progress,
    },
};

#ifdef MCA_BASE_COMPONENT_INIT
/* Open MPI 6 finds a component linked into libopen-pal through this pointer (its table of
 * static components names mca_btl_devmem_component_ptr) */
MCA_BTL_DEVMEM_EXPORT MCA_BASE_COMPONENT_INIT(opal, btl, devmem)
#endif

/* ---------------------------------------------------------------- open / close */

static int component_open(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    char built[32];

    /* The MCA loader does not compare versions: a component built for another Open MPI
     * series would load and crash on the first mismatched struct. */
    snprintf(built, sizeof(built), "%d.%d.", OPAL_MAJOR_VERSION, OPAL_MINOR_VERSION);
    if (0 != strncmp(opal_version_string, built, strlen(built))) {
        opal_output(0,
                    "btl:devmem: this component was built for Open MPI %d.%d.%d but is "
                    "loaded into Open MPI %s; rebuild it against this Open MPI (configure "
                    "--with-ompi=...). Not using btl_devmem.",
                    OPAL_MAJOR_VERSION, OPAL_MINOR_VERSION, OPAL_RELEASE_VERSION,
                    opal_version_string);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    memset(&c->stats, 0, sizeof(c->stats));
    memset(c->lane_rx_bytes, 0, sizeof(c->lane_rx_bytes));
    memset(c->queue_rx_bytes, 0, sizeof(c->queue_rx_bytes));
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->procs, opal_proc_table_t);
    opal_proc_table_init(&c->procs, 16, 256);
    OBJ_CONSTRUCT(&c->pending_accepts, opal_list_t);
    /* at open, not init: Open MPI 5 initializes BTLs only for a PML that uses them */
    mca_btl_devmem_pml_check_start();
    return OPAL_SUCCESS;
}

static void modules_release(void)
{
    mca_btl_devmem_liveness_stop();
    mca_btl_devmem_devflow_idle_stop();
    mca_btl_devmem_rxthreads_stop(); /* the lanes they served have closed */
    mca_btl_devmem_devflow_fini();
    mca_btl_devmem_reg_fini(); /* its TX bindings, before the kernel interface goes */
    mca_btl_devmem_dev_fini();
    mca_btl_devmem_modules_free();
    mca_btl_devmem_pollset_close();
}

/* An Open MPI 4.x with CUDA support copies device memory in its convertor (eager sends and
 * receives of device buffers) only once a BTL has started its CUDA support, as the BTLs that
 * handle device memory do. Declared here: common_cuda.h is not among every installation's
 * developer headers. */
#if OPAL_CUDA_SUPPORT && BTL_VERSION < 330
#define DEVMEM_OMPI_COMMON_CUDA 1
int mca_common_cuda_stage_one_init(void);
void mca_common_cuda_fini(void);
static bool common_cuda_started;
#endif

static int component_close(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    mca_btl_devmem_pml_check_stop();
    mca_btl_devmem_dispatch_lock();
    mca_btl_devmem_held_drop_all(&c->pending_accepts);
    if (c->stats_enabled && mca_btl_devmem_num_modules > 0) {
        mca_btl_devmem_stats_print();
    }
    mca_btl_devmem_proc_release_all();
    modules_release();
    mca_btl_devmem_dispatch_unlock();
    mca_btl_devmem_frag_lists_fini();
    OBJ_DESTRUCT(&c->pending_accepts);
    OBJ_DESTRUCT(&c->procs);
    OBJ_DESTRUCT(&c->lock);
    mca_btl_devmem_params_fini();
    opal_output_close(c->output);
#ifdef DEVMEM_OMPI_COMMON_CUDA
    if (common_cuda_started) {
        mca_common_cuda_fini();
        common_cuda_started = false;
    }
#endif
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------------- init */

/*
 * An earlier life of this component in this process (Open MPI 5 closes it when the last
 * session ends and opens it again for the next one) published a modex record, and peers on
 * other hosts keep that one: their PMIx clients do not see it replaced (a key put again
 * after the fence of a new session keeps its first value there; a peer on this host reads
 * the new one). So this life takes that record's secret and listens on its ports again,
 * and the record stays true. Reads it into c->prev; false when there is none.
 */
static bool prev_record_read(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    c->prev = NULL;
    c->prev_n = 0;
    if (!MCA_BTL_DEVMEM_REOPENS) {
        return false;
    }
    if (OPAL_SUCCESS != mca_btl_devmem_proc_read_modex(&opal_proc_local_get()->proc_name, true,
                                                       &c->secret, NULL, &c->prev,
                                                       &c->prev_n)) {
        return false;
    }
    DEVMEM_VERBOSE(10, "opened again in this process: the secret and ports of its earlier modex "
                   "record, which peers keep");
    return true;
}

/* The port module m listened on in an earlier life (its device-flow port with devflow), 0:
 * none to take again. */
static uint16_t prev_port(const mca_btl_devmem_module_t *m, bool devflow)
{
    const mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const struct mca_btl_devmem_modex_addr *a;
    struct mca_btl_devmem_ip ip;

    if (m->index >= (uint32_t) c->prev_n) {
        return 0;
    }
    a = &c->prev[m->index];
    if (a->module != m->index || a->link != m->link || !mca_btl_devmem_modex_ip(a, &ip)
        || !mca_btl_devmem_ip_equal(&ip, &m->itf.addr)) {
        return 0;
    }
    return ntohs(devflow ? a->devflow_port : a->port);
}

static int create_listener(mca_btl_devmem_module_t *m)
{
    uint16_t want = prev_port(m, false);
    int rc = mca_btl_devmem_listen_socket(&m->itf, want, &m->listener.fd, &m->listener.port);

    if (0 != rc) {
        return rc;
    }
    if (0 != want && want != m->listener.port) {
        DEVMEM_VERBOSE(1, "%s: port %u, which peers on other hosts know from an earlier "
                       "session, is taken: they cannot connect", m->itf.name, (unsigned) want);
    }
    return mca_btl_devmem_listener_start(&m->listener);
}

/* The kernel's boot id, which network namespaces and containers of one machine share: how a
 * rank learns which of its peers share its CPUs. Left zero (unknown) when unreadable. */
static void machine_read(uint8_t id[16])
{
    char text[64];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t n = 0;

    memset(id, 0, 16);
    if (NULL == f) {
        return;
    }
    if (NULL != fgets(text, sizeof(text), f)) {
        for (const char *p = text; '\0' != *p && n < 32; p++) {
            int v = *p >= '0' && *p <= '9'   ? *p - '0'
                    : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                             : -1;

            if (v >= 0) {
                id[n / 2] = (uint8_t) (id[n / 2] << 4 | v);
                n++;
            }
        }
    }
    fclose(f);
    if (32 != n) {
        memset(id, 0, 16);
    }
}

static int publish_modex(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    size_t size = sizeof(struct mca_btl_devmem_modex_hdr)
                  + mca_btl_devmem_num_modules * sizeof(struct mca_btl_devmem_modex_addr);
    uint8_t *blob = calloc(1, size);
    struct mca_btl_devmem_modex_hdr hdr = {MCA_BTL_DEVMEM_MODEX_MAGIC,
                                           MCA_BTL_DEVMEM_MODEX_VERSION,
                                           (uint16_t) mca_btl_devmem_num_modules, c->secret, {0}};
    int rc;

    memcpy(hdr.machine, c->machine, sizeof(hdr.machine));
    if (NULL == blob) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(blob, &hdr, sizeof(hdr));
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        const mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];
        struct mca_btl_devmem_modex_addr a = {
            .family = AF_INET == m->itf.addr.family ? MCA_BTL_DEVMEM_MODEX_IPV4
                                                    : MCA_BTL_DEVMEM_MODEX_IPV6,
            .port = htons(m->listener.port),
            .prefix = m->itf.prefix,
            .flags = m->itf.loopback ? MCA_BTL_DEVMEM_ADDR_LOOPBACK : 0,
            .module = m->index,
            .link = m->link,
            .devflow_port = NULL != m->devpath.dev ? htons(m->devpath.dev->listener.port) : 0,
        };
        memcpy(a.addr, m->itf.addr.a.bytes, mca_btl_devmem_ip_len(&m->itf.addr));
        memcpy(blob + sizeof(hdr) + i * sizeof(a), &a, sizeof(a));
    }
    OPAL_MODEX_SEND(rc, MCA_BTL_DEVMEM_MODEX_SCOPE, &c->super.btl_version, blob, size);
    free(blob);
    return rc;
}

/*
 * How send calls cut a connection's queue on an interface. On loopback both copies of a
 * payload run on this host: 512 KiB calls, copied out while still in the cache, make a 4 MiB
 * ping-pong 2.2-2.4x as fast, and a lone frame of up to 1 MiB (a ping-pong's answer) still
 * goes in one call, 5 % faster at 1 MiB. Elsewhere no limit: a 512 KiB limit under BBR costs
 * 15-27 % of the bandwidth at 256 KiB-4 MiB and 7-13 % at a 1 MiB ping-pong (doc/tuning.md).
 * btl_devmem_testing write_chunk= sets the limit for tests (calls ending inside frames).
 */
static struct mca_btl_devmem_write_shape write_shape_for(const mca_btl_devmem_component_t *c,
                                                         const struct mca_btl_devmem_if *itf)
{
    struct mca_btl_devmem_write_shape shape = {.chunk = SIZE_MAX, .whole = 0};

    if (itf->loopback) {
        shape.chunk = 512 * 1024;
        shape.whole = 1024 * 1024;
    }
    if (c->write_chunk >= 0) {
        shape.chunk = c->write_chunk > 0 ? (size_t) c->write_chunk : SIZE_MAX;
    }
    return shape;
}

/* The interfaces btl_devmem_if_include/exclude and btl_devmem_family leave: their count,
 * or an OPAL error (the help text said why). */
static int select_interfaces(mca_btl_devmem_component_t *c, struct mca_btl_devmem_if *ifs)
{
    char why[256] = "", unmatched[64] = "";
    enum mca_btl_devmem_family family;
    int n = mca_btl_devmem_if_discover(ifs, MCA_BTL_DEVMEM_IF_MAX);

    if (n < 0) {
        opal_output(0, "btl:devmem: cannot list network interfaces: %s", strerror(-n));
        return OPAL_ERROR;
    }
    if (0 == strcmp(c->family, "auto")) {
        family = MCA_BTL_DEVMEM_FAMILY_AUTO;
    } else if (0 == strcmp(c->family, "ipv4") || 0 == strcmp(c->family, "4")) {
        family = MCA_BTL_DEVMEM_FAMILY_IPV4;
    } else if (0 == strcmp(c->family, "ipv6") || 0 == strcmp(c->family, "6")) {
        family = MCA_BTL_DEVMEM_FAMILY_IPV6;
    } else {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_family",
                                       c->family, "auto, ipv4 or ipv6");
        return OPAL_ERR_BAD_PARAM;
    }
    n = mca_btl_devmem_if_select(ifs, n, c->if_include, c->if_exclude, why, sizeof(why),
                                 unmatched, sizeof(unmatched));
    if (n < 0) {
        mca_btl_devmem_show_help_local("invalid if list", why);
        return OPAL_ERR_BAD_PARAM;
    }
    if ('\0' != unmatched[0]) {
        mca_btl_devmem_show_help_local("if_include unmatched", unmatched);
    }
    return mca_btl_devmem_if_pick_family(ifs, n, family);
}

/* Open MPI's accelerator, decided once: the send and registration paths only test the
 * flags. */
static void accelerator_flags(mca_btl_devmem_component_t *c)
{
    const char *accel = mca_btl_devmem_accelerator();

    c->accel_cuda = 0 == strcmp(accel, "cuda");
    c->accel_foreign = !c->accel_cuda && 0 != strcmp(accel, "null")
                       && 0 != strcmp(accel, "none");
    DEVMEM_VERBOSE(5, "Open MPI's accelerator: %s; gets from its device memory %s", accel,
                   c->accel_cuda                ? "offered to the PML"
                   : 0 == strcmp(accel, "none") ? "as the build allows (Open MPI 4)"
                                                : "not offered (CUDA memory only)");
}

/* The module of interface itf for link `link` of `links`, listening; added to
 * mca_btl_devmem_modules. 0 or an OPAL error. */
static int module_add(mca_btl_devmem_component_t *c, const struct mca_btl_devmem_if *itf,
                      int link, int links)
{
    mca_btl_devmem_module_t *m = malloc(sizeof(*m));
    char addr[MCA_BTL_DEVMEM_IP_STRLEN];
    int rc;

    if (NULL == m) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(m, &mca_btl_devmem_module_template, sizeof(*m));
#if BTL_VERSION >= 330
    if (!c->accel_cuda) {
        m->super.btl_flags &= ~MCA_BTL_FLAGS_ACCELERATOR_GET;
    }
#endif
    if (!c->sendi) {
        m->super.btl_sendi = NULL; /* the PML then packs nothing itself */
    }
    /* each extra link shares the interface: split its bandwidth */
    m->super.btl_bandwidth = mca_btl_devmem_module_template.super.btl_bandwidth / links;
    m->super.btl_latency = mca_btl_devmem_module_template.super.btl_latency * links;
    if (OPAL_SUCCESS != (rc = mca_btl_devmem_module_add(m, itf, (uint32_t) link,
                                                         write_shape_for(c, itf)))) {
        free(m);
        return rc;
    }
    m->devpath.prev_port = prev_port(m, true);
    if (0 != (rc = create_listener(m))) {
        opal_output(0, "btl:devmem: cannot listen on %s (%s): %s", m->itf.name,
                    mca_btl_devmem_ip_str(&m->itf.addr, addr, sizeof(addr)), strerror(-rc));
        return OPAL_ERROR;
    }
    DEVMEM_VERBOSE(10, "module %u: %s %s/%u port %u link %d", m->index, m->itf.name,
                   mca_btl_devmem_ip_str(&m->itf.addr, addr, sizeof(addr)),
                   (unsigned) m->itf.prefix, (unsigned) m->listener.port, link);
    return OPAL_SUCCESS;
}

/* A module per selected interface and link (btl_devmem_links), each listening. */
static int create_modules(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct mca_btl_devmem_if ifs[MCA_BTL_DEVMEM_IF_MAX];
    int n, rc, links = c->links > 0 ? c->links : 1;

    if ((n = select_interfaces(c, ifs)) < 0) {
        return n;
    }
    accelerator_flags(c);
    if (0 == n) {
        DEVMEM_VERBOSE(5, "no usable interface (if_include='%s', if_exclude='%s', family %s)",
                       c->if_include, c->if_exclude, c->family);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    for (int link = 0; link < links; link++) {
        for (int i = 0; i < n; i++) {
            if (OPAL_SUCCESS != (rc = module_add(c, &ifs[i], link, links))) {
                return rc;
            }
        }
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_module_t **init_locked(int *num_btls)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    mca_btl_base_module_t **btls = NULL;
    size_t cap;
    int rc;

    *num_btls = 0;
    /* first: what follows reads the parsed settings */
    if (OPAL_SUCCESS != mca_btl_devmem_params_check()) {
        return NULL;
    }
    if (OPAL_SUCCESS != mca_btl_devmem_wiring_init()) {
        opal_output(0, "btl:devmem: more per-peer or per-fragment states than there are "
                       "slots for");
        return NULL;
    }
    mca_btl_devmem_nofile_init();
    machine_read(c->machine);
    c->machine_peers = 0; /* counted again as this life's add_procs meets them */
    if (!prev_record_read()
        && sizeof(c->secret) != getrandom(&c->secret, sizeof(c->secret), 0)) {
        opal_output(0, "btl:devmem: getrandom failed: %s", strerror(errno));
        return NULL;
    }
    rc = mca_btl_devmem_frag_lists_init(mca_btl_devmem_module_template.super.btl_eager_limit,
                                        mca_btl_devmem_module_template.super.btl_max_send_size);
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_devmem_fault_init();
    }
    if (OPAL_SUCCESS == rc && 0 != (rc = mca_btl_devmem_pollset_open(c->poll_max))) {
        opal_output(0, "btl:devmem: cannot watch sockets: %s", strerror(-rc));
        rc = OPAL_ERROR;
    }
    if (OPAL_SUCCESS == rc && OPAL_SUCCESS == (rc = create_modules())
        && OPAL_SUCCESS == (rc = mca_btl_devmem_dev_init(&mca_btl_devmem_modules[0]->devpath,
                                                      mca_btl_devmem_devflow_accepted))) {
        char paths[4096];

        mca_btl_devmem_dev_paths(paths, sizeof(paths));
        mca_btl_devmem_params_status(paths);
        rc = publish_modex();
    }
    if (OPAL_SUCCESS == rc && 0 != c->rx_threads && NULL != mca_btl_devmem_dev_batch(&cap)) {
        int n = c->rx_threads, trc;
        char why[96];

        if (n < 0) {
            n = mca_btl_devmem_rxthreads_auto(why, sizeof(why));
            DEVMEM_VERBOSE(10, "btl_devmem_rx_threads -1: %d receiving thread(s) (%s)", n, why);
        }
        if (n > 0 && 0 != (trc = mca_btl_devmem_rxthreads_start(n))) {
            /* the progress thread serves the lanes, as with btl_devmem_rx_threads 0 */
            opal_output(0, "btl:devmem: cannot start %d receiving thread(s): %s; the progress "
                           "thread receives the device flows", n, strerror(-trc));
        }
    }
    free(c->prev); /* the listeners have their ports */
    c->prev = NULL;
    c->prev_n = 0;
    if (OPAL_SUCCESS != rc) {
        goto fail;
    }
    btls = malloc(mca_btl_devmem_num_modules * sizeof(*btls));
    if (NULL == btls) {
        goto fail;
    }
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        btls[i] = &mca_btl_devmem_modules[i]->super;
    }
    mca_btl_devmem_liveness_start();
#ifdef DEVMEM_OMPI_COMMON_CUDA
    (void) mca_common_cuda_stage_one_init(); /* it says itself when CUDA is unusable */
    common_cuda_started = true;
#endif
    *num_btls = mca_btl_devmem_num_modules;
    return btls;
fail:
    modules_release();
    return NULL;
}

/* Any thread level: the model is in btl_devmem.h. Init and close hold the dispatch lock, as
 * everything that adds sockets to the set or takes them out does. */
static mca_btl_base_module_t **component_init(int *num_btls, bool enable_progress_threads,
                                              bool enable_mpi_threads)
{
    mca_btl_base_module_t **btls;

    mca_btl_devmem_dispatch_lock();
    btls = init_locked(num_btls);
    mca_btl_devmem_dispatch_unlock();
    DEVMEM_VERBOSE(10, "%d module(s), MPI threads %s, progress threads %s", *num_btls,
                   enable_mpi_threads ? "on" : "off", enable_progress_threads ? "on" : "off");
    return btls;
}
