/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gather kernels (see cudrv_ptx.h).
 */
#include "cudrv_ptx.h"

/*
 * The gather kernel: block b copies piece b of an array of {dst, src, len} (24 bytes each);
 * its threads stride through the piece 16 bytes at a time when dst, src and len are all
 * 16-byte aligned, else byte by byte (neighbouring threads touch neighbouring bytes, so the
 * accesses still coalesce). Written in PTX so that no CUDA compiler is needed to build; the
 * driver compiles it for the GPU at hand. ISA 6.0 / sm_50 keeps every driver since CUDA 9.
 */
const char devmem_gather_ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry devmem_gather(.param .u64 p_ops, .param .u32 p_n)\n"
    "{\n"
    "  .reg .pred %p<4>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b64 %rd<14>;\n"
    "  ld.param.u64 %rd1, [p_ops];\n"
    "  ld.param.u32 %r1, [p_n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  setp.ge.u32 %p1, %r2, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r2, 24;\n"
    "  add.s64 %rd2, %rd1, %rd2;\n"
    "  ld.global.u64 %rd3, [%rd2];\n"
    "  ld.global.u64 %rd4, [%rd2+8];\n"
    "  ld.global.u64 %rd5, [%rd2+16];\n"
    "  cvta.to.global.u64 %rd3, %rd3;\n"
    "  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  cvt.u64.u32 %rd6, %r3;\n"
    "  cvt.u64.u32 %rd7, %r4;\n"
    "  or.b64 %rd8, %rd3, %rd4;\n"
    "  or.b64 %rd8, %rd8, %rd5;\n"
    "  and.b64 %rd8, %rd8, 15;\n"
    "  setp.ne.s64 %p2, %rd8, 0;\n"
    "  @%p2 bra BYTES;\n"
    "  shr.u64 %rd9, %rd5, 4;\n"
    "VEC:\n"
    "  setp.ge.u64 %p3, %rd6, %rd9;\n"
    "  @%p3 bra DONE;\n"
    "  shl.b64 %rd10, %rd6, 4;\n"
    "  add.s64 %rd11, %rd4, %rd10;\n"
    "  add.s64 %rd12, %rd3, %rd10;\n"
    "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd11];\n"
    "  st.global.v4.u32 [%rd12], {%r5, %r6, %r7, %r8};\n"
    "  add.s64 %rd6, %rd6, %rd7;\n"
    "  bra VEC;\n"
    "BYTES:\n"
    "  setp.ge.u64 %p3, %rd6, %rd5;\n"
    "  @%p3 bra DONE;\n"
    "  add.s64 %rd11, %rd4, %rd6;\n"
    "  add.s64 %rd12, %rd3, %rd6;\n"
    "  ld.global.u8 %r5, [%rd11];\n"
    "  st.global.u8 [%rd12], %r5;\n"
    "  add.s64 %rd6, %rd6, %rd7;\n"
    "  bra BYTES;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";


/*
 * The persistent gather. Thread 0 polls the host's count of posted pieces (an acquire at
 * system scope, then a short nanosleep between reads so that an idle ring costs the PCIe
 * link a read every half microsecond and the SM nearly nothing); the block's warps then
 * take the new pieces in turn, warp w pieces w, w + 32, ... A piece whose dst, src and len
 * are 16-byte aligned goes as 16-byte loads and stores, lane l at 16 l, a warp 512 bytes a
 * step. Any other (a packet's payload is 4044 bytes, so the pieces of a receive are seldom
 * aligned) goes in windows of 512 bytes: lane l copies bytes l, l + 32, ... l + 480 of the
 * window, 16 independent byte loads then 16 byte stores, so that each load or store of the
 * warp touches 32 adjacent bytes and a lane waits for memory once a window; the last,
 * partial window the same with each byte predicated. After the round a barrier, a
 * system-wide fence and the done count, which the host reads. Ring entries are read as
 * relaxed system-scope loads: the ring wraps, and an entry must not come from a cached line
 * of the lap before. sm_70 and PTX ISA 6.3 (nanosleep, scoped loads).
 */
#define RING_16(m)                                                                         \
    m(0, 0) m(1, 32) m(2, 64) m(3, 96) m(4, 128) m(5, 160) m(6, 192) m(7, 224) m(8, 256)    \
    m(9, 288) m(10, 320) m(11, 352) m(12, 384) m(13, 416) m(14, 448) m(15, 480)
#define RING_LD(k, off) "  ld.global.u8 %q" #k ", [%rd18+" #off "];\n"
#define RING_ST(k, off) "  st.global.u8 [%rd19+" #off "], %q" #k ";\n"
#define RING_IN(k, off) "  setp.gt.s64 %pk" #k ", %rd21, " #off ";\n"
#define RING_PLD(k, off) "  @%pk" #k " ld.global.u8 %q" #k ", [%rd18+" #off "];\n"
#define RING_PST(k, off) "  @%pk" #k " st.global.u8 [%rd19+" #off "], %q" #k ";\n"

/* One string, as the driver takes it: longer than the 4095 characters C99 promises, which
 * every compiler that builds Open MPI accepts (-Woverlength-strings says so under its
 * -pedantic). */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#endif
const char devmem_gather_ring_ptx[] =
    ".version 6.3\n"
    ".target sm_70\n"
    ".address_size 64\n"
    "\n"
    ".shared .align 8 .b64 ring_posted;\n"
    "\n"
    ".visible .entry devmem_gather_ring(.param .u64 p_ring, .param .u64 p_ctl,\n"
    "                                   .param .u64 p_mask)\n"
    "{\n"
    "  .reg .pred %p<8>;\n"
    "  .reg .pred %pk<16>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b32 %q<16>;\n"
    "  .reg .b64 %rd<24>;\n"
    "  ld.param.u64 %rd1, [p_ring];\n"
    "  ld.param.u64 %rd2, [p_ctl];\n"
    "  ld.param.u64 %rd3, [p_mask];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  shr.u32 %r2, %r1, 5;\n"        /* warp */
    "  and.b32 %r3, %r1, 31;\n"       /* lane */
    "  cvt.u64.u32 %rd4, %r2;\n"
    "  cvt.u64.u32 %rd5, %r3;\n"
    "  shl.b64 %rd6, %rd5, 4;\n"      /* the lane's first offset in a piece */
    "  mov.u32 %r4, %ntid.x;\n"
    "  shr.u32 %r4, %r4, 5;\n"
    "  cvt.u64.u32 %rd7, %r4;\n"      /* warps in the block */
    "  mov.u64 %rd8, 0;\n"            /* head: pieces done */
    "  setp.eq.u32 %p1, %r1, 0;\n"
    "WAIT:\n"
    "  @!%p1 bra SYNC;\n"
    "POLL:\n"
    "  ld.acquire.sys.global.u64 %rd9, [%rd2];\n"
    "  ld.relaxed.sys.global.u64 %rd10, [%rd2+16];\n"
    "  setp.ne.u64 %p2, %rd9, %rd8;\n"
    "  setp.ne.u64 %p3, %rd10, 0;\n"
    "  or.pred %p2, %p2, %p3;\n"
    "  @%p2 bra SEEN;\n"
    "  nanosleep.u32 500;\n"
    "  bra POLL;\n"
    "SEEN:\n"
    "  st.shared.u64 [ring_posted], %rd9;\n"
    "SYNC:\n"
    "  bar.sync 0;\n"
    "  ld.shared.u64 %rd9, [ring_posted];\n"
    "  setp.eq.u64 %p2, %rd9, %rd8;\n" /* nothing new: thread 0 saw the stop */
    "  @%p2 bra EXIT;\n"
    "  add.s64 %rd11, %rd8, %rd4;\n"
    "PIECE:\n"
    "  setp.ge.u64 %p3, %rd11, %rd9;\n"
    "  @%p3 bra ROUND;\n"
    "  and.b64 %rd12, %rd11, %rd3;\n"
    "  mul.lo.u64 %rd12, %rd12, 24;\n"
    "  add.s64 %rd12, %rd1, %rd12;\n"
    "  ld.relaxed.sys.global.u64 %rd13, [%rd12];\n"
    "  ld.relaxed.sys.global.u64 %rd14, [%rd12+8];\n"
    "  ld.relaxed.sys.global.u64 %rd15, [%rd12+16];\n"
    "  cvta.to.global.u64 %rd13, %rd13;\n"
    "  cvta.to.global.u64 %rd14, %rd14;\n"
    "  mov.u64 %rd16, %rd6;\n"
    "  or.b64 %rd17, %rd13, %rd14;\n"
    "  or.b64 %rd17, %rd17, %rd15;\n"
    "  and.b64 %rd17, %rd17, 15;\n"
    "  setp.ne.u64 %p4, %rd17, 0;\n"
    "  @%p4 bra WINDOW;\n"
    "VEC:\n"
    "  setp.ge.u64 %p5, %rd16, %rd15;\n"
    "  @%p5 bra NEXT;\n"
    "  add.s64 %rd18, %rd14, %rd16;\n"
    "  add.s64 %rd19, %rd13, %rd16;\n"
    "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd18];\n"
    "  st.global.v4.u32 [%rd19], {%r5, %r6, %r7, %r8};\n"
    "  add.s64 %rd16, %rd16, 512;\n"
    "  bra VEC;\n"
    "WINDOW:\n"
    "  mov.u64 %rd16, 0;\n"           /* the window's start in the piece */
    "WIN:\n"
    "  add.s64 %rd20, %rd16, 512;\n"
    "  setp.gt.u64 %p5, %rd20, %rd15;\n"
    "  @%p5 bra TAIL;\n"
    "  add.s64 %rd18, %rd14, %rd16;\n"
    "  add.s64 %rd18, %rd18, %rd5;\n"
    "  add.s64 %rd19, %rd13, %rd16;\n"
    "  add.s64 %rd19, %rd19, %rd5;\n"
    RING_16(RING_LD)
    RING_16(RING_ST)
    "  mov.u64 %rd16, %rd20;\n"
    "  bra WIN;\n"
    "TAIL:\n"
    "  add.s64 %rd16, %rd16, %rd5;\n"
    "  sub.s64 %rd21, %rd15, %rd16;\n"  /* bytes from this lane's first on (may be <= 0) */
    "  add.s64 %rd18, %rd14, %rd16;\n"
    "  add.s64 %rd19, %rd13, %rd16;\n"
    RING_16(RING_IN)
    RING_16(RING_PLD)
    RING_16(RING_PST)
    "NEXT:\n"
    "  add.s64 %rd11, %rd11, %rd7;\n"
    "  bra PIECE;\n"
    "ROUND:\n"
    "  bar.sync 0;\n"
    "  @!%p1 bra ADVANCE;\n"
    "  fence.sc.sys;\n"
    "  st.relaxed.sys.global.u64 [%rd2+8], %rd9;\n"
    "ADVANCE:\n"
    "  mov.u64 %rd8, %rd9;\n"
    "  bra WAIT;\n"
    "EXIT:\n"
    "  ret;\n"
    "}\n";
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
