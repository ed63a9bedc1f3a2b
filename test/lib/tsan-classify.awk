# SPDX-License-Identifier: BSD-3-Clause
# Sorts ThreadSanitizer reports (the text between its "==================" lines) into:
#   ours      a racing access, or a lock taken, whose first frame outside the sanitizer's
#             interceptors is in our source tree (OURS, a path fragment): a failure
#   buffer    a race on memory the test program allocated (its message buffers), or one
#             where the program's own code is a party, whoever else wrote it (our receive
#             path included): MPI orders
#             those through request completion inside Open MPI, which is not built with the
#             sanitizer, so the detector cannot see it
#   openmpi   everything else: both sides inside Open MPI's own code (its headers' inline
#             free lists included), whose synchronisation the detector cannot see either
#   unnamed   a report with a frame in our component (OURS_DSO) that has no symbol: it cannot
#             be sorted (no symbolizer?), so it counts against us like "ours"
# Prints every "ours" and "unnamed" report whole, then one line:
# "tsan: N ours, N unnamed, N buffer, N openmpi".
# usage: awk -v OURS=/opal/mca/btl/devmem/ -v OURS_DSO=mca_btl_devmem.so -v APP=/test/mpi/ \
#            -f tsan-classify.awk LOG...
function interceptor(fn) {
    return fn ~ /^(__interceptor_|__tsan_)/ ||
        fn ~ /^(memcpy|memmove|memset|memcmp|strlen|free|malloc|calloc|realloc|read|write|recv|recvmsg|send|sendmsg|readv|writev|pthread_[a-z_]+)$/
}
function finish(   kind) {
    if (!inrep) return
    kind = (appbuf ? "buffer" : (mine ? "ours" : (unnamed ? "unnamed" : "openmpi")))
    n[kind]++
    if (kind == "ours" || kind == "unnamed") printf "%s", rep
    inrep = 0
}
/^==================$/ { finish(); next }
/WARNING: ThreadSanitizer:/ { inrep = 1; rep = ""; mine = 0; appbuf = 0; unnamed = 0; section = ""; top = 1 }
!inrep { next }
{ rep = rep $0 "\n" }
/^  [A-Z]/ {
    # a new section: an access, a mutex, a location, a thread's creation
    section = ($0 ~ /Thread T[0-9]+ .*created by|Location is|created at:|Mutex M[0-9]+ .*created at/) ? "ctx" : "access"
    appsec = ($0 ~ /Location is heap block/)
    top = 1
    next
}
/^ +#[0-9]+ / {
    fn = $2
    if (appsec && index($0, APP) > 0) appbuf = 1
    if (fn == "<null>" && OURS_DSO != "" && index($0, "(" OURS_DSO "+") > 0) unnamed = 1
    if (section == "access" && top && !interceptor(fn)) {
        top = 0
        if (index($0, OURS) > 0) mine = 1
        # the program itself is a party (its free of a buffer, say): the memory is its own
        if (index($0, APP) > 0) appbuf = 1
    }
}
END {
    finish()
    printf "tsan: %d ours, %d unnamed, %d buffer, %d openmpi\n", n["ours"], n["unnamed"],
        n["buffer"], n["openmpi"]
}
