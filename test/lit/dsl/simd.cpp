// SIMD<T, N> through IR, LLVM IR, PTX (and ptxas) and CPU assembly: vector loads and stores,
// lane-wise operators with broadcast scalars, masks and select, lanes, reductions, casts, Var and
// device functions of vectors.
// RUN: lit-simd --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-simd --emit=ir | ember-compile - --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-simd --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-simd --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-simd --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-simd --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
// RUN: %if ptxas %{ lit-simd --emit=asm --target=nvptx:sm_80 | %ptxas-verify -arch=sm_80 %}
// RUN: %if host-x86_64 %{ lit-simd --emit=asm --target=cpu | FileCheck %s --check-prefix=ASM %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(axpy4, {"y", "x", "a"}, [](Ptr<float> y, Ptr<const float> x, Float32 a) {
    Int i = global_idx.x * 4;
    auto xv = x.load<4>(i);
    y.store(i, fma(xv, a, y.load<4>(i)));
})
// IR-LABEL: kernel: axpy4
// IR:       let %0: f32x4 = load<4>(%x[{{.*}}])
// IR:       let %1: f32x4 = load<4>(%y[{{.*}}])
// IR-NEXT:  %y[{{.*}}] = fma(%0, f32x4(%a), %1)
// LLVM-LABEL: kernel: axpy4
// LLVM-NV:  load <4 x float>, ptr addrspace(1) %{{.*}}, align 16, !invariant.load
// LLVM-NV:  call <4 x float> @llvm.fma.v4f32
// LLVM-NV:  store <4 x float> %{{.*}}, ptr addrspace(1) %{{.*}}, align 16
// The CPU checks the alignment, reports a misaligned access and does it unaligned.
// LLVM-CPU: %misaligned = icmp ne i64 %{{.*}}, 0
// LLVM-CPU: call void @__ember_cpu_misaligned(ptr %fault, i64 %{{.*}}, i32 16, i32 16, i32 0,
// LLVM-CPU: load <4 x float>, ptr %{{.*}}, align 1
// LLVM-CPU: load <4 x float>, ptr %{{.*}}, align 16
// PTX-LABEL: kernel: axpy4
// PTX:      ld.global.nc.v4.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}];
// PTX:      ld.global.v4.f32
// PTX:      st.global.v4.f32 [%rd{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
// ASM-LABEL: kernel: axpy4
// ASM:      __ember_cpu_misaligned

EMBER_LIT_KERNEL(lanes, {"out", "flags", "k"}, [](Ptr<int32_t> out, Ptr<bool> flags, Int32 k) {
    SIMD<int32_t, 4> v(k, k + 1, 2, 3);
    SIMD<bool, 4> m = (v > 1) && (v != k);
    out.store(0, select(m, v / 0, -v));
    out[4] = v[3] + reduce_add(v) + reduce_max(v ^ 5);
    flags.store(0, m);
    flags[4] = any(m) || all(!m);
    Var<SIMD<int32_t, 4>> acc(0);
    acc += v;
    acc = acc * 2;
    out.store(8, cast<int32_t>(cast<SIMD<float, 4>>(acc) * 0.5f));
})
// IR-LABEL: kernel: lanes
// IR:       %out[0:i64] = select(((i32x4(%k, (%k + 1:i32), 2:i32, 3:i32) > i32x4(1:i32)) && {{.*}}), ({{.*}} / i32x4(0:i32)), -i32x4({{.*}}))
// IR-NEXT:  %out[4:i64] = ((extract<3>({{.*}}) + reduce_add({{.*}})) + reduce_max(({{.*}} ^ i32x4(5:i32))))
// IR-NEXT:  %flags[0:i64] = {{.*}}
// IR-NEXT:  %flags[4:i64] = (reduce_or({{.*}}) || reduce_and(!{{.*}}))
// IR-NEXT:  var %[[ACC:[0-9]+]]: i32x4 = i32x4(0:i32)
// IR:       %[[ACC]] = ({{.*}} * i32x4(2:i32))
// IR:       %out[8:i64] = cast<i32x4>((cast<f32x4>(%{{[0-9]+}}) * f32x4(0.5:f32)))
// LLVM-LABEL: kernel: lanes
// LLVM:     insertelement <4 x i32>
// LLVM:     icmp sgt <4 x i32>
// LLVM:     call i32 @llvm.vector.reduce.add.v4i32
// LLVM:     call i32 @llvm.vector.reduce.smax.v4i32
// LLVM:     store <4 x i8>
// LLVM:     call i1 @llvm.vector.reduce.or.v4i1
// LLVM:     call <4 x i32> @llvm.fptosi.sat.v4i32.v4f32
// PTX-LABEL: kernel: lanes
// PTX:      st.global.v4.u32

EMBER_LIT_KERNEL(reductions, {"out", "p"}, [](Ptr<float> out, Ptr<const float> p) {
    auto v = p.load<8>(0);
    out[0] = reduce_add(v);
    out[1] = reduce_mul(v);
    out[2] = reduce_min(v);
    out[3] = reduce_max(v);
})
// The float fold is a tree: the upper half onto the lower half, the same on every target.
// LLVM-LABEL: kernel: reductions
// LLVM:     %[[LO:[0-9]+]] = shufflevector <8 x float> %{{.*}}, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
// LLVM-NEXT: %[[HI:[0-9]+]] = shufflevector <8 x float> %{{.*}}, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
// LLVM-NEXT: fadd <4 x float> %[[LO]], %[[HI]]
// LLVM-NOT: @llvm.vector.reduce.fadd
// LLVM:     call float @llvm.vector.reduce.fmin.v2f32
// PTX-LABEL: kernel: reductions
// PTX:      ld.global.nc.v4.f32
// PTX:      ld.global.nc.v4.f32

const auto dot4 = device_function("dot4", {"a", "b"}, [](SIMD<float, 4> a, SIMD<float, 4> b) { return reduce_add(a * b); });
const auto scale4 = device_function("scale4", {"a", "s"}, [](SIMD<float, 4> a, Float32 s) { return a * s; });

EMBER_LIT_KERNEL(functions, {"out", "p"}, [](Ptr<float> out, Ptr<const float> p) {
    auto v = p.load<4>(0);
    out[0] = dot4(v, scale4(v, 2.0f));
    out[1] = dot4(v, 1.0f); // a scalar argument broadcasts
})
// IR-LABEL: kernel: functions
// IR:       func @scale4(%a: f32x4, %s: f32) -> f32x4 {
// IR-NEXT:    return (%a * f32x4(%s))
// IR:       func @dot4(%a: f32x4, %b: f32x4) -> f32 {
// IR-NEXT:    return reduce_add((%a * %b))
// IR:       let %{{[0-9]+}}: f32x4 = @scale4(%0, 2.0:f32)
// IR:       @dot4(%0, f32x4(1.0:f32))
// LLVM-LABEL: kernel: functions
// LLVM:     define internal float @dot4(<4 x float> noundef %a, <4 x float> noundef %b

EMBER_LIT_KERNEL(half8, {"h", "b"}, [](Ptr<half> h, Ptr<bfloat16> b) {
    auto v = h.load<8>(0);
    h.store(8, v * 2.0f + v);
    b.store(0, cast<bfloat16>(v));
})
// SIMD<half, 8> is 16 bytes: one vector access each way.
// LLVM-LABEL: kernel: half8
// LLVM:     load <8 x half>, ptr {{.*}}, align 16
// LLVM:     store <8 x half> {{.*}}, align 16
// LLVM:     store <8 x bfloat> {{.*}}, align 16
// PTX-LABEL: kernel: half8
// PTX:      ld.global.v4.b32
// PTX:      st.global.v4.b32

EMBER_LIT_MAIN()
