// Warp operations: shfl.sync / vote.sync over the warp's existing lanes on NVPTX (all 32 but in a
// partial last warp, computed from tid and ntid; not activemask, which after divergent code
// names only the lanes that happen to be converged); the fiber runtime's rendezvous on the CPU
// ([Note] CPU fibers).
// RUN: lit-warp --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-warp --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-warp --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-warp --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-warp --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(warp_ops, {"out", "x", "d"}, [](Ptr<double> out, Float32 x, Float64 d) {
    out[0] = cast<double>(shuffle_down(x, 1));
    out[1] = shuffle_xor(d, 16);
    out[2] = cast<double>(ballot(x > 0.0f));
    out[3] = select(warp_all(x > 0.0f) || warp_any(x < 0.0f), 1.0, d);
    out[4] = warp_sum(d);
})
// IR-LABEL: kernel: warp_ops
// Warp operations are bound where they are written (they are collective).
// IR:       let %0: f32 = shuffle_down(%x, 1:i32)
// IR:       let %1: f64 = shuffle_xor(%d, 16:i32)
// IR:       let %2: u32 = ballot((%x > 0.0:f32))
// IR:       let %3: bool = warp_all((%x > 0.0:f32))
// IR-NEXT:  let %4: bool = warp_any((%x < 0.0:f32))
// The sum is a butterfly of five shuffles.
// IR:       shuffle_xor(%d, 16:i32)
// IR:       shuffle_xor({{.*}}, 1:i32)
// LLVM-LABEL: kernel: warp_ops
// LLVM-NV-NOT: activemask
// LLVM-NV:  %warp.lanes = sub i32
// LLVM-NV:  %warp.mask = select i1 %{{.*}}, i32 -1, i32 %{{.*}}
// LLVM-NV:  call i32 @llvm.nvvm.shfl.sync.down.i32(i32 %warp.mask, i32 %{{.*}}, i32 1, i32 31)
// A 64-bit value travels as two 32-bit halves.
// LLVM-NV:  call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM-NV:  call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM-NV:  call i32 @llvm.nvvm.vote.ballot.sync
// LLVM-CPU: call i64 @__ember_cpu_warp(i32 2,
// LLVM-CPU: call i64 @__ember_cpu_warp(i32 3,
// LLVM-CPU: call i64 @__ember_cpu_warp(i32 4,
// LLVM-CPU: call void @__ember_cpu_run_block(ptr @warp_ops.thread
// LLVM:     ret void
// PTX-LABEL: kernel: warp_ops
// PTX-NOT:  activemask
// PTX:      shfl.sync.down.b32
// PTX:      shfl.sync.bfly.b32
// PTX:      vote.sync.ballot.b32
// PTX:      vote.sync.all.pred

EMBER_LIT_MAIN()
