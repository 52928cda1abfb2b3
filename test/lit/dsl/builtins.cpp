// Built-in functions and return_ through IR, LLVM IR, PTX (and ptxas) and CPU assembly.
// RUN: lit-builtins --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-builtins --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-builtins --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-builtins --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-builtins --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
// RUN: %if host-x86_64 %{ lit-builtins --emit=asm --target=cpu | FileCheck %s --check-prefix=ASM %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(int_builtins, {"out", "x"}, [](Ptr<uint32_t> out, Int32 x) {
    out[0] = cast<uint32_t>(abs(x));
    out[1] = popcount(cast<uint32_t>(x));
    out[2] = clz(cast<uint32_t>(x));
    out[3] = ctz(cast<uint32_t>(x));
    out[4] = cast<uint32_t>(clamp(x, 0, 9));
})
// IR-LABEL: kernel: int_builtins
// IR:       %out[0:i64] = cast<u32>(abs(%x))
// IR-NEXT:  %out[1:i64] = popcount(cast<u32>(%x))
// IR-NEXT:  %out[2:i64] = clz(cast<u32>(%x))
// IR-NEXT:  %out[3:i64] = ctz(cast<u32>(%x))
// IR-NEXT:  %out[4:i64] = cast<u32>(min(max(%x, 0:i32), 9:i32))
// LLVM-LABEL: kernel: int_builtins
// abs of INT_MIN and clz/ctz of 0 are defined: the poison flags are false.
// LLVM:     call i32 @llvm.abs.i32(i32 %x, i1 false)
// LLVM:     call i32 @llvm.ctpop.i32
// LLVM:     call i32 @llvm.ctlz.i32({{.*}}, i1 false)
// LLVM:     call i32 @llvm.cttz.i32({{.*}}, i1 false)
// PTX-LABEL: kernel: int_builtins
// PTX-DAG:  // abs.s32 as setp + not + add + selp
// PTX-DAG:  popc.b32
// PTX-DAG:  clz.b32
// ctz(0) is 32, then ctz via popc((~x) & (x - 1)).
// PTX-DAG:  mov.b32 %r{{[0-9]+}}, 32;
// ASM-LABEL: kernel: int_builtins
// ASM:      int_builtins:

EMBER_LIT_KERNEL(float_builtins, {"out", "x", "y"}, [](Ptr<float> out, Float32 x, Float32 y) {
    out[0] = sqrt(x);
    out[1] = floor(x) + ceil(x) + trunc(x) + round(x);
    out[2] = fma(x, y, 1.0f);
    out[3] = copysign(abs(x), y);
    out[4] = select(isnan(x) || isinf(y) || !isfinite(x), x, y);
})
// IR-LABEL: kernel: float_builtins
// IR:       %out[0:i64] = sqrt(%x)
// IR-NEXT:  %out[1:i64] = (((floor(%x) + ceil(%x)) + trunc(%x)) + round(%x))
// IR-NEXT:  %out[2:i64] = fma(%x, %y, 1.0:f32)
// IR-NEXT:  %out[3:i64] = copysign(abs(%x), %y)
// IR-NEXT:  %out[4:i64] = select(((isnan(%x) || isinf(%y)) || !isfinite(%x)), %x, %y)
// LLVM-LABEL: kernel: float_builtins
// LLVM:     call float @llvm.sqrt.f32(float %x)
// LLVM:     call float @llvm.floor.f32
// LLVM:     call float @llvm.round.f32
// LLVM:     call float @llvm.fma.f32(float %x, float %y, float 1.0
// LLVM:     call float @llvm.copysign.f32
// LLVM:     fcmp uno float %x, %x
// LLVM:     fcmp oeq float {{.*}}, 0x7FF0000000000000
// LLVM:     fcmp one float {{.*}}, 0x7FF0000000000000
// PTX-LABEL: kernel: float_builtins
// Correctly rounded: sqrt.rn, not sqrt.approx.
// PTX:      sqrt.rn.f32
// PTX:      cvt.rmi.f32.f32
// PTX:      fma.rn.f32
// ASM-LABEL: kernel: float_builtins
// ASM:      float_builtins:
// ASM:      sqrtss

EMBER_LIT_KERNEL(early_exit, {"out", "n"}, [](Ptr<int32_t> out, Int n) {
    auto i = global_idx.x;
    if_(i >= n, [&] { return_(); });
    out[i] = 1;
})
// IR-LABEL: kernel: early_exit
// IR:       if (((block_dim.x * block_idx.x) + thread_idx.x) >= %n) {
// IR-NEXT:    return
// IR-NEXT:  }
// LLVM-LABEL: kernel: early_exit
// LLVM-NV:  define void @early_exit(
// LLVM-CPU: define internal void @early_exit.body(
// LLVM:     ret void
// LLVM:     store i32 1
// PTX-LABEL: kernel: early_exit
// PTX:      ret;
// ASM-LABEL: kernel: early_exit
// ASM:      early_exit:

EMBER_LIT_KERNEL(atomics, {"c", "f", "u"}, [](Ptr<int32_t> c, Ptr<double> f, Ptr<uint64_t> u) {
    Int32 old = atomic_add(c[0], 1);
    atomic_min(c[1], old);
    atomic_max(u[0], 7u);
    atomic_add(f[0], 0.5);
    atomic_cas(c[2], 0, old);
    atomic_exchange(c[3], 4);
})
// IR-LABEL: kernel: atomics
// The old value is bound where the atomic is written, like a load.
// IR:       let %0: i32 = atomic_add(%c[0:i64], 1:i32)
// IR-NEXT:  let %1: i32 = atomic_min(%c[1:i64], %0)
// IR-NEXT:  let %2: u64 = atomic_max(%u[0:i64], 7:u64)
// IR-NEXT:  let %3: f64 = atomic_add(%f[0:i64], 0.5:f64)
// IR-NEXT:  let %4: i32 = atomic_cas(%c[2:i64], 0:i32, %0)
// IR-NEXT:  let %5: i32 = atomic_exchange(%c[3:i64], 4:i32)
// LLVM-LABEL: kernel: atomics
// Relaxed ordering, like CUDA's atomic functions.
// LLVM:     atomicrmw add ptr{{.*}}, i32 1 monotonic
// LLVM:     atomicrmw min ptr
// LLVM:     atomicrmw umax ptr{{.*}}, i64 7 monotonic
// LLVM:     atomicrmw fadd ptr{{.*}}, double 5.000000e-01 monotonic
// LLVM:     cmpxchg ptr{{.*}}, i32 0, i32 {{.*}} monotonic monotonic
// LLVM:     atomicrmw xchg ptr
// PTX-LABEL: kernel: atomics
// PTX:      atom.global.add.u32
// PTX:      atom.global.min.s32
// PTX:      atom.global.max.u64
// PTX:      atom.global.add.f64
// PTX:      atom.global.cas.b32
// PTX:      atom.global.exch.b32
// ASM-LABEL: kernel: atomics
// ASM:      lock

// Scopes: block (shared memory here) and system; device is the default.
EMBER_LIT_KERNEL(scoped_atomics, {"c", "f"}, [](Ptr<uint32_t> c, Ptr<float> f) {
    auto s = shared_array<uint32_t, 4>();
    Int32 zero = 0;
    s[0] = 0u;
    barrier();
    UInt32 old = atomic_add(s[zero], 1u, MemoryScope::Block);
    atomic_max(c[0], old, MemoryScope::System);
    atomic_add(f[0], 1.5f, MemoryScope::System);
    atomic_cas(c[1], 0u, old, MemoryScope::Block);
    atomic_sub(c[2], 3u, MemoryScope::Block);
})
// IR-LABEL: kernel: scoped_atomics
// IR:       atomic_add.block(%{{[0-9]+}}[0:i32], 1:u32)
// IR:       atomic_max.system(%c[0:i64], %{{[0-9]+}})
// IR:       atomic_add.system(%f[0:i64], 1.5:f32)
// IR:       atomic_cas.block(%c[1:i64], 0:u32, %{{[0-9]+}})
// PTX-LABEL: kernel: scoped_atomics
// PTX:      atom.cta.add.u32
// PTX:      atom.sys.max.u32
// PTX:      atom.sys.add.f32
// PTX:      atom.cta.cas.b32
// PTX:      atom.cta.add.u32
// ASM-LABEL: kernel: scoped_atomics
// ASM:      lock

// noalias (C's restrict) on a kernel's pointer parameter, and on a device function's.
const auto scale_into = device_function("scale_into", {"y", "x", "i"}, [](NoAlias<Ptr<float>> y, Ptr<const float> x, Int i) {
    y[i] = x[i] * 2.0f;
});
EMBER_LIT_KERNEL(restrict_params, {"y", "x", "n"}, [](NoAlias<Ptr<float>> y, Ptr<const float> x, Int n) {
    for_(0, n, [&](Int i) { scale_into(y, x, i); });
})
// IR-LABEL: kernel: restrict_params
// IR:       func @scale_into(%y: ptr<global f32> noalias, %x: ptr<global const f32>, %i: i64) {
// IR:       kernel @restrict_params(%y: ptr<global f32> noalias, %x: ptr<global const f32>, %n: i64) {
// LLVM-LABEL: kernel: restrict_params
// LLVM-NV:  define void @restrict_params(ptr addrspace(1) noalias noundef %y,
// LLVM-CPU: define internal void @restrict_params.body(ptr noalias noundef %y,

// 16-bit floats: host types half/bfloat16, DSL Float16/BFloat16, IR f16/bf16.
EMBER_LIT_KERNEL(halves, {"h", "b", "s"}, [](Ptr<half> h, Ptr<bfloat16> b, Float16 s) {
    Float16 x = h[0] * s + 1.0f;
    h[1] = x;
    b[0] = cast<bfloat16>(x) * b[1];
})
// IR-LABEL: kernel: halves
// IR:       kernel @halves(%h: ptr<global f16>, %b: ptr<global bf16>, %s: f16) {
// IR:       ((%0 * %s) + 1.0:f16)
// LLVM-LABEL: kernel: halves
// LLVM:     fmul half
// LLVM:     fmul bfloat
// PTX-LABEL: kernel: halves
// PTX:      .param .align 2 .b8 halves_param_2[2]

EMBER_LIT_MAIN()
