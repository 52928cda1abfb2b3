// Static shared arrays and barriers: .shared globals and bar.sync on NVPTX, the block's buffer and
// the fiber runtime on the CPU ([Note] CPU fibers), with every shared-memory access checked
// ([Note] CPU kernel memory).
// RUN: lit-shared --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-shared --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-shared --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-shared --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-shared --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(tile_sum, {"in", "out"}, [](Ptr<float> in, Ptr<float> out) {
    auto tile = shared_array<float, 256>();
    auto flags = shared_array<int32_t, 8>();
    auto t = thread_idx.x;
    tile[t] = in[global_idx.x];
    flags[t % 8] = 1;
    barrier();
    if_(t == 0, [&] {
        Var<float> acc(0.0f);
        for_(0, 256, [&](Int j) { acc += tile[j]; });
        out[block_idx.x] = acc;
    });
})
// IR-LABEL: kernel: tile_sum
// IR:       shared %0: f32[256]
// IR-NEXT:  shared %1: i32[8]
// IR:       barrier
// LLVM-LABEL: kernel: tile_sum
// LLVM-NV-DAG: @tile_sum.shared.{{.*}} = internal addrspace(3) global [256 x float] undef, align 16
// LLVM-NV-DAG: @tile_sum.shared.{{.*}} = internal addrspace(3) global [8 x i32] undef, align 16
// LLVM-NV:   store float {{.*}}, ptr addrspace(3)
// LLVM-NV:   call void @llvm.nvvm.barrier0()
// The CPU body finds the block's shared memory in its context; the arrays are 16-aligned in it.
// LLVM-CPU:  %shared.base = load ptr
// LLVM-CPU:  getelementptr inbounds i8, ptr %shared.base{{[0-9]*}}, i64 1024
// Every access is checked against the block's shared memory ([Note] CPU kernel memory): one
// outside it is reported and goes to a scratch location.
// LLVM-CPU:  %shared.bytes = load i64
// LLVM-CPU:  %shared.offset = sub i64
// LLVM-CPU:  %shared.inside = and i1
// LLVM-CPU:  br i1 %shared.inside, label %shared.access, label %shared.outside
// LLVM-CPU:  shared.outside:
// LLVM-CPU:  %shared.scratch = call ptr @__ember_cpu_shared_fault(ptr %fault, i64 %shared.offset, i32 4, i64 %shared.bytes, i32 1,
// LLVM-CPU:  shared.access:
// LLVM-CPU:  %shared.addr = phi ptr [ %{{[0-9]+}}, %entry ], [ %shared.scratch, %shared.outside ]
// LLVM-CPU:  store float %{{[0-9]+}}, ptr %shared.addr, align 4
// LLVM-CPU:  call void @__ember_cpu_barrier()
// The static arrays (1056 bytes), then the launch's dynamic shared memory at a 16-byte boundary,
// from the host thread's arena; the blocks run on its kernel stack.
// LLVM-CPU:  define void @tile_sum(
// LLVM-CPU:  %shared.bytes = add i64 1056, %shared_mem_bytes
// LLVM-CPU:  call void @__ember_cpu_enter(ptr @tile_sum.blocks, ptr %args, ptr %launch, i64 %shared.bytes)
// LLVM-CPU:  define internal void @tile_sum.blocks({{.*}}, ptr %shared)
// LLVM-CPU-NOT: alloca i8
// LLVM-CPU:  store ptr %shared, ptr
// LLVM-CPU:  call void @__ember_cpu_run_block(ptr @tile_sum.thread
// LLVM:      ret void
// PTX-LABEL: kernel: tile_sum
// (The never-read flags array is optimised away.)
// PTX:       .shared .align 16 .b8 {{.*}}[1024];
// PTX:       st.shared.f32
// PTX:       bar.sync 0;
// PTX:       ld.shared.v4.f32

EMBER_LIT_KERNEL(dynamic, {"out"}, [](Ptr<float> out) {
    auto a = dynamic_shared<float>();
    auto b = dynamic_shared<int32_t>();
    a[thread_idx.x] = 1.0f;
    barrier();
    out[thread_idx.x] = a[0] + cast<float>(b[1]);
})
// IR-LABEL: kernel: dynamic
// IR:       shared %0: f32[]
// IR-NEXT:  shared %1: i32[]
// LLVM-LABEL: kernel: dynamic
// Both views alias the one dynamic array (CUDA's extern __shared__).
// LLVM-NV:  @dynamic_dynamic_shared = external addrspace(3) global [0 x i8], align 16
// LLVM-CPU: %dynamic_dynamic_shared = load ptr
// LLVM-CPU: call ptr @__ember_cpu_shared_fault(
// LLVM-CPU: %shared.bytes = add i64 0, %shared_mem_bytes
// LLVM-CPU: call void @__ember_cpu_enter(ptr @dynamic.blocks
// LLVM:     ret void
// PTX-LABEL: kernel: dynamic
// PTX:      .extern .shared .align 16 .b8 dynamic_dynamic_shared[];

EMBER_LIT_KERNEL(fences_and_locals, {"out"}, [](Ptr<int32_t> out) {
    auto a = local_array<int32_t, 8>();
    for_(0, 8, [&](Int j) { a[j] = cast<int32_t>(j * thread_idx.x); });
    out[thread_idx.x] = a[thread_idx.x % 8];
    fence_block();
    fence_device();
    fence_system();
})
// IR-LABEL: kernel: fences_and_locals
// IR:       local %0: i32[8]
// IR:       fence block
// IR-NEXT:  fence device
// IR-NEXT:  fence system
// LLVM-LABEL: kernel: fences_and_locals
// LLVM:     alloca [8 x i32], align 16
// LLVM-NV:  call void @llvm.nvvm.membar.cta()
// LLVM-NV:  call void @llvm.nvvm.membar.gl()
// LLVM-NV:  call void @llvm.nvvm.membar.sys()
// LLVM-CPU: fence syncscope("singlethread") seq_cst
// LLVM-CPU: fence seq_cst
// LLVM:     ret void
// PTX-LABEL: kernel: fences_and_locals
// PTX:      .local .align 16 .b8 __local_depot
// PTX:      membar.cta;
// PTX:      membar.gl;
// PTX:      membar.sys;

EMBER_LIT_MAIN()
