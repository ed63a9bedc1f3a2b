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
