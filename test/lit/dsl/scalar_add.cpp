// The seed's scalar_add through every stage and target.
// RUN: lit-scalar-add --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-scalar-add --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-scalar-add --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-scalar-add --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-scalar-add --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
// RUN: %if host-x86_64 %{ lit-scalar-add --emit=asm --target=cpu | FileCheck %s --check-prefix=ASM %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(scalar_add, {"vector", "size", "scalar"}, [](Ptr<float> vector, Int size, Float32 scalar) {
    auto idx = block_idx.x * block_dim.x + thread_idx.x;
    if_(idx < size, [&] { vector[idx] += scalar; });
})
EMBER_LIT_MAIN()

// IR-LABEL: kernel: scalar_add
// IR-NEXT:  kernel @scalar_add(%vector: ptr<global f32>, %size: i64, %scalar: f32) {
// IR-NEXT:    if (((block_idx.x * block_dim.x) + thread_idx.x) < %size) {
// IR-NEXT:      let %0: f32 = %vector[((block_idx.x * block_dim.x) + thread_idx.x)]
// IR-NEXT:      %vector[((block_idx.x * block_dim.x) + thread_idx.x)] = (%0 + %scalar)
// IR-NEXT:    }
// IR-NEXT:  }

// LLVM-LABEL:  kernel: scalar_add
// LLVM-NV:     define void @scalar_add(ptr addrspace(1) {{.*}}%vector, i64 {{.*}}%size, float {{.*}}%scalar)
// LLVM-NV:     call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
// LLVM-NV:     call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
// LLVM-NV:     call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// LLVM-CPU:    define {{.*}}@scalar_add.body(ptr {{.*}}%vector, i64 {{.*}}%size, float {{.*}}%scalar, ptr
// LLVM:        icmp slt i64
// LLVM:        load float, ptr{{( addrspace\(1\))?}}
// LLVM:        fadd float
// LLVM:        store float
// LLVM-NV:     !nvvm.annotations = !{![[ANN:[0-9]+]]}
// LLVM-NV:     ![[ANN]] = !{ptr @scalar_add, !"kernel", i32 1}
// LLVM-CPU:    define void @scalar_add(ptr {{.*}}, ptr {{.*}})

// PTX-LABEL: kernel: scalar_add
// PTX:       .visible .entry scalar_add(
// PTX-DAG:   mov.u32 %r{{[0-9]+}}, %ctaid.x;
// PTX-DAG:   mov.u32 %r{{[0-9]+}}, %ntid.x;
// PTX-DAG:   mov.u32 %r{{[0-9]+}}, %tid.x;
// PTX:       ld.global.f32
// PTX:       add.rn.f32
// PTX:       st.global.f32

// ASM-LABEL: kernel: scalar_add
// ASM:       scalar_add:
// ASM:       adds
