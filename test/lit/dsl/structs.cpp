// Struct parameters (EMBER_STRUCT): one kernel parameter per field, named param.field, through IR,
// LLVM IR, PTX (and ptxas) and CPU assembly; a device function taking a struct.
// RUN: lit-structs --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-structs --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-structs --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-structs --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-structs --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
// RUN: %if host-x86_64 %{ lit-structs --emit=asm --target=cpu | FileCheck %s --check-prefix=ASM %}
#include "LitMain.h"
using namespace ember;

struct View {
    Ptr<float> data;
    Int n;
};
EMBER_STRUCT(View, data, n)

struct Job {
    View out;
    NoAlias<Ptr<const float>> in;
    Float32 scale;
};
EMBER_STRUCT(Job, out, in, scale)

const auto scale_at = device_function("scale_at", {"v", "i", "s"}, [](View v, Int i, Float32 s) {
    if_(i < v.n, [&] { v.data[i] *= s; });
});

EMBER_LIT_KERNEL(view_scale, {"v", "s"}, [](View v, Float32 s) { scale_at(v, global_idx.x, s); })
// IR-LABEL: kernel: view_scale
// IR:       func @scale_at(%v.data: ptr<global f32>, %v.n: i64, %i: i64, %s: f32) {
// IR-NEXT:    if (%i < %v.n) {
// IR-NEXT:      let %0: f32 = %v.data[%i]
// IR-NEXT:      %v.data[%i] = (%0 * %s)
// IR:       kernel @view_scale(%v.data: ptr<global f32>, %v.n: i64, %s: f32) {
// IR-NEXT:    @scale_at(%v.data, %v.n, ((block_dim.x * block_idx.x) + thread_idx.x), %s)
// IR-NEXT:  }
// LLVM-LABEL: kernel: view_scale
// LLVM-NV:  define void @view_scale(ptr addrspace(1) {{.*}}%v.data, i64 {{.*}}%v.n, float {{.*}}%s)
// LLVM-CPU: define internal void @view_scale.body(ptr {{.*}}%v.data, i64 {{.*}}%v.n, float {{.*}}%s,
// PTX-LABEL: kernel: view_scale
// PTX:      .entry view_scale(
// PTX-NEXT: .param .u64 {{.*}}view_scale_param_0,
// PTX-NEXT: .param .u64 view_scale_param_1,
// PTX-NEXT: .param .f32 view_scale_param_2
// ASM-LABEL: kernel: view_scale
// ASM:      view_scale:

// Nested structs flatten in declaration order; noalias and the read-only path stay per field.
EMBER_LIT_KERNEL(job, {"j", "extra"}, [](Job j, Int extra) {
    Int i = global_idx.x;
    if_(i < j.out.n + extra, [&] { j.out.data[i] = j.in[i] * j.scale; });
})
// IR-LABEL: kernel: job
// IR:       kernel @job(%j.out.data: ptr<global f32>, %j.out.n: i64, %j.in: ptr<global const f32> noalias, %j.scale: f32, %extra: i64) {
// IR:         let %0: f32 = %j.in[
// IR-NEXT:    %j.out.data[{{.*}}] = (%0 * %j.scale)
// LLVM-LABEL: kernel: job
// LLVM-NV:  define void @job(ptr addrspace(1) {{.*}}%j.out.data, i64 {{.*}}%j.out.n, ptr addrspace(1) noalias {{.*}}%j.in, float {{.*}}%j.scale, i64 {{.*}}%extra)
// LLVM-CPU: define internal void @job.body(ptr {{.*}}%j.out.data, i64 {{.*}}%j.out.n, ptr noalias {{.*}}%j.in, float {{.*}}%j.scale, i64 {{.*}}%extra,
// PTX-LABEL: kernel: job
// PTX:      .entry job(
// PTX-COUNT-3: .param .u64
// PTX-NEXT: .param .f32
// PTX-NEXT: .param .u64
// The read-only, noalias field is loaded through the non-coherent path.
// PTX:      ld.global.nc.f32
// ASM-LABEL: kernel: job
// ASM:      job:

EMBER_LIT_MAIN()
