// Hopper's operations in the DSL: tma_load, the mbarriers and wgmma trace to one IR statement
// each, where they are written; a WarpgroupAccumulator<16> is two f32x4 variables, which wgmma,
// its fence and its wait name; a TensorMap parameter is the map's address. NVPTX emits them for
// sm_90a (which ptxas accepts), the CPU calls its runtime.
// RUN: lit-warpgroup --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-warpgroup --emit=asm --target=nvptx:sm_90a | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-warpgroup --emit=asm --target=nvptx:sm_90a | %ptxas-verify -arch=sm_90a %}
// RUN: lit-warpgroup --emit=llvm --target=cpu | FileCheck %s --check-prefix=CPU
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(tile_wgmma, {"a", "b", "d"},
                 [](TensorMap<bfloat16> a, TensorMap<bfloat16> b, Ptr<float> d) {
                     auto smem = dynamic_shared<bfloat16>();
                     auto bar = dynamic_shared<uint64_t>();
                     if_(thread_idx.x == 0, [&] {
                         mbarrier_init(bar, 1024, 1);
                         fence_proxy_async();
                     });
                     barrier();
                     if_(thread_idx.x == 0, [&] {
                         mbarrier_expect_tx(bar, 1024, 2 * 64 * 64 * 2);
                         tma_load(smem, 0, a, 0, 0, bar, 1024);
                         tma_load(smem, 4096, b, 0, 0, bar, 1024);
                     });
                     mbarrier_wait(bar, 1024, 0);
                     WarpgroupAccumulator<16> acc;
                     wgmma_fence(acc);
                     wgmma(smem, 0, smem, 4096, acc);
                     wgmma(smem, 16, smem, 4096 + 16, acc);
                     wgmma_commit();
                     wgmma_wait<0>(acc);
                     acc[0].store(d, 0, 16);
                     acc[1].store(d, 8, 16);
                 })
// IR-LABEL: kernel: tile_wgmma
// IR:       kernel @tile_wgmma(%a.desc: ptr<global const u64>, %b.desc: ptr<global const u64>,
// IR:       mbarrier.init(%[[B:[0-9]+]][1024:i64], 1:i64)
// IR:       fence.proxy.async
// IR:       mbarrier.expect_tx(%[[B]][1024:i64], 16384:i64)
// IR-NEXT:  tma_load(%[[S:[0-9]+]][0:i64], %a.desc, 0:i64, 0:i64, %[[B]][1024:i64])
// IR-NEXT:  tma_load(%[[S]][4096:i64], %b.desc, 0:i64, 0:i64, %[[B]][1024:i64])
// IR:       mbarrier.wait(%[[B]][1024:i64], 0:i64)
// IR:       var %[[A0:[0-9]+]]: f32x4 = f32x4(0.0:f32)
// IR-NEXT:  var %[[A1:[0-9]+]]: f32x4 = f32x4(0.0:f32)
// IR-NEXT:  wgmma.fence(%[[A0]], %[[A1]])
// IR-NEXT:  wgmma.m64n16k16.bf16(%[[S]][0:i64], %[[S]][4096:i64]; %[[A0]], %[[A1]])
// IR-NEXT:  wgmma.m64n16k16.bf16(%[[S]][16:i64], %[[S]][4112:i64]; %[[A0]], %[[A1]])
// IR-NEXT:  wgmma.commit
// IR-NEXT:  wgmma.wait(0; %[[A0]], %[[A1]])

// PTX-LABEL: .entry tile_wgmma(
// PTX:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX:       mbarrier.try_wait.parity.shared::cta.b64
// PTX:       wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// PTX:       wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// PTX:       wgmma.wait_group.sync.aligned 0;

// CPU-LABEL: define {{.*}}@tile_wgmma
// CPU:       call void @__ember_cpu_tma_load(
// CPU:       call void @__ember_cpu_wgmma(i32 1, i32 16,

EMBER_LIT_MAIN()
