// 32-bit index arithmetic: ember's `Int` is 64 bits, so `global_idx.x` and the indices built on it
// are computed in 64 bits (mul.wide.u32 of ctaid and ntid, add.s64), right for grids of any size.
// A kernel whose grid stays below 2^31 threads says so with one cast, and gets the code nvcc gives
// CUDA's `int` indices: a 32-bit mad for the index, compare and bounds, and one mul.wide.s32 for
// the address. Loads through Ptr<const T> stay on the read-only path (ld.global.nc).
// RUN: lit-index32 --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-index32 --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-index32 --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(scale64, {"x", "y", "n"}, [](Ptr<const float> x, Ptr<float> y, Int n) {
    Int i = global_idx.x;
    if_(i < n, [&] { y[i] = x[i] * 2.0f; });
})
EMBER_LIT_KERNEL(scale32, {"x", "y", "n"}, [](Ptr<const float> x, Ptr<float> y, Int32 n) {
    Int32 i = cast<int32_t>(global_idx.x);
    if_(i < n, [&] { y[i] = x[i] * 2.0f; });
})

// IR-LABEL: kernel: scale32
// IR:       cast<i32>(((block_dim.x * block_idx.x) + thread_idx.x))

// PTX-LABEL: .entry scale64(
// PTX:       mul.wide.u32 {{%rd[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}};
// PTX:       add.s64
// PTX:       setp.ge.s64
// PTX:       ld.global.nc.f32
// PTX-LABEL: .entry scale32(
// PTX-NOT:   .s64
// PTX:       mad.lo.s32 [[I:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}};
// PTX-NEXT:  setp.ge.s32 {{%p[0-9]+}}, [[I]], {{%r[0-9]+}};
// PTX-NOT:   .s64
// PTX:       mul.wide.s32 {{%rd[0-9]+}}, [[I]], 4;
// PTX-NOT:   mul.lo.s64
// PTX:       ld.global.nc.f32
// PTX:       st.global.f32

EMBER_LIT_MAIN()
