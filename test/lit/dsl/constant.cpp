// constant_array: a module global in constant memory that the host writes (CUDA's __constant__).
// NVPTX: a visible .const variable named as declared, read with ld.const (also through a device
// function's ConstPtr parameter); on the CPU an ordinary global under a prefixed symbol.
// RUN: lit-constant --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-constant --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefix=LLVM-NV
// RUN: lit-constant --emit=llvm --target=cpu | FileCheck %s --check-prefix=LLVM-CPU
// RUN: lit-constant --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-constant --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

const auto scaled = device_function("scaled", {"c", "i", "x"}, [](ConstPtr<float> c, Int i, Float32 x) {
    return c[i] * x;
});

EMBER_LIT_KERNEL(poly, {"out", "x", "n"}, [](Ptr<float> out, Ptr<const float> x, Int n) {
    auto coeffs = constant_array<float, 256>("coeffs");
    auto bias = constant_array<int32_t, 2>("bias", {7, -1});
    auto i = global_idx.x;
    if_(i < n, [&] { out[i] = scaled(coeffs, i % 256, x[i]) + cast<float>(bias[0]); });
})
// IR-LABEL: kernel: poly
// IR:       func @scaled(%c: ptr<constant const f32>, %i: i64, %x: f32) -> f32 {
// IR:       constant %coeffs: f32[256] @coeffs
// IR-NEXT:  constant %bias: i32[2] @bias = [7:i32, -1:i32]
// IR:       @scaled(%coeffs,
// LLVM-NV-LABEL: kernel: poly
// LLVM-NV-DAG: @coeffs = addrspace(4) externally_initialized global [256 x float] zeroinitializer, align 16
// LLVM-NV-DAG: @bias = addrspace(4) externally_initialized global [2 x i32] [i32 7, i32 -1], align 16
// LLVM-CPU-LABEL: kernel: poly
// LLVM-CPU-DAG: @__ember_constant_coeffs = externally_initialized global [256 x float] zeroinitializer, align 16
// LLVM-CPU-DAG: @__ember_constant_bias = externally_initialized global [2 x i32] [i32 7, i32 -1], align 16
// PTX-LABEL: kernel: poly
// PTX-DAG:  .visible .const .align 16 .b8 coeffs[1024];
// PTX-DAG:  .visible .const .align 16 .b8 bias[8] = {7, 0, 0, 0, 255, 255, 255, 255};
// PTX:      ld.const.f32

EMBER_LIT_MAIN()
