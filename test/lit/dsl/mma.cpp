// Fragments of an Mma in the DSL: load_matrix is one ldmatrix per fragment (B's pair one x4),
// mma one mma.sync whose operands are the ldmatrix results themselves (no moves, no
// conversions); load() is one load per element, store() one per element. The IR binds ldmatrix
// and mma where they are written (they are warp operations).
// RUN: lit-mma --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-mma --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-mma --emit=asm --target=nvptx:sm_90 | %ptxas-verify -arch=sm_90a %}
// RUN: lit-mma --emit=llvm --target=cpu | FileCheck %s --check-prefix=CPU
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(tile_mma, {"c"}, [](Ptr<float> c) {
    using Op = Mma<bfloat16, m16n8k16>;
    auto sa = shared_array<bfloat16, 16 * 24>();
    auto sb = shared_array<bfloat16, 16 * 24>();
    Op::A a;
    Op::B b0, b1;
    Op::C d0, d1;
    a.load_matrix(sa, 0, 24);
    b0.load_matrix_pair(b1, sb, 0, 24);
    d0 = mma(a, b0, d0);
    d1 = mma(a, b1, d1);
    d0.store(c, 0, 16);
    d1.store(c, 8, 16);
})
// IR-LABEL: kernel: tile_mma
// IR:       ldmatrix.x4(%{{[0-9]+}}[
// IR:       ldmatrix.x4.trans(%{{[0-9]+}}[
// IR:       let %{{[0-9]+}}: f32x4 = mma.m16n8k16.bf16(
// IR:       let %{{[0-9]+}}: f32x4 = mma.m16n8k16.bf16(

// PTX-LABEL: .entry tile_mma(
// PTX:       ldmatrix.sync.aligned.m8n8.x4.shared.b16 {[[A0:%r[0-9]+]], [[A1:%r[0-9]+]],
// PTX-SAME:  [[A2:%r[0-9]+]], [[A3:%r[0-9]+]]}
// PTX:       ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {[[B0:%r[0-9]+]], [[B1:%r[0-9]+]],
// PTX-SAME:  [[B2:%r[0-9]+]], [[B3:%r[0-9]+]]}
// PTX-NOT:   mov.b32
// PTX-NOT:   cvt
// PTX:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NEXT:  {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}},
// PTX-NEXT:  {[[A0]], [[A1]], [[A2]], [[A3]]},
// PTX-NEXT:  {[[B0]], [[B1]]},
// PTX:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NEXT:  {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}},
// PTX-NEXT:  {[[A0]], [[A1]], [[A2]], [[A3]]},
// PTX-NEXT:  {[[B2]], [[B3]]},
// PTX-COUNT-8: st.global.f32
// PTX-NOT:   st.global

// CPU-LABEL: kernel: tile_mma
// CPU:       call void @__ember_cpu_ldmatrix(i32 4, i32 0,
// CPU:       call void @__ember_cpu_ldmatrix(i32 4, i32 1,
// CPU:       call void @__ember_cpu_mma(i32 1, i32 16, i32 0,
// CPU:       call void @__ember_cpu_mma(i32 1, i32 16, i32 0,

EMBER_LIT_MAIN()
