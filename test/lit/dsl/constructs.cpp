// Every construct of the DSL, through IR, LLVM IR (NVPTX and CPU), PTX and CPU assembly.
// RUN: lit-constructs --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-constructs --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-constructs --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-constructs --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-constructs --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
// RUN: %if host-x86_64 %{ lit-constructs --emit=asm --target=cpu | FileCheck %s --check-prefix=ASM %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(int_arith, {"out", "a", "b"}, [](Ptr<int32_t> out, Int32 a, Int32 b) {
    out[0] = a + b;
    out[1] = a - b;
    out[2] = a * b;
    out[3] = a / b;
    out[4] = a % b;
    out[5] = (a & b) | (a ^ b);
    out[6] = (a << b) + (a >> 3);
    out[7] = -a + ~b;
})
// IR-LABEL: kernel: int_arith
// IR:       %out[0:i64] = (%a + %b)
// IR-NEXT:  %out[1:i64] = (%a - %b)
// IR-NEXT:  %out[2:i64] = (%a * %b)
// IR-NEXT:  %out[3:i64] = (%a / %b)
// IR-NEXT:  %out[4:i64] = (%a % %b)
// IR-NEXT:  %out[5:i64] = ((%a & %b) | (%a ^ %b))
// IR-NEXT:  %out[6:i64] = ((%a << %b) + (%a >> 3:i32))
// IR-NEXT:  %out[7:i64] = (-%a + ~%b)
// LLVM-LABEL: kernel: int_arith
// LLVM:     add i32 %a, %b
// LLVM:     sub i32 %a, %b
// LLVM:     mul i32 %a, %b
// Division by zero yields 0 and MIN / -1 wraps: the divisor is made safe first.
// LLVM:     icmp eq i32 %b, 0
// LLVM:     sdiv i32
// LLVM:     srem i32
// LLVM:     shl i32
// LLVM:     ashr i32
// PTX-LABEL: kernel: int_arith
// PTX:      .visible .entry int_arith(
// PTX-DAG:  add.s32
// PTX-DAG:  mul.lo.s32
// PTX-DAG:  div.s32
// PTX-DAG:  shl.b32
// PTX-DAG:  shr.s32
// ASM-LABEL: kernel: int_arith
// ASM:      int_arith:
// ASM:      idivl

EMBER_LIT_KERNEL(float_arith, {"out", "x", "y"}, [](Ptr<double> out, Float64 x, Float64 y) {
    out[0] = x + y * 2.0;
    out[1] = (x - y) / y;
    out[2] = min(x, y) + max(x, -y);
    out[3] = cast<double>(cast<int32_t>(x)) + cast<double>(cast<float>(y));
})
// IR-LABEL: kernel: float_arith
// IR:       %out[0:i64] = (%x + (%y * 2.0:f64))
// IR:       %out[2:i64] = (min(%x, %y) + max(%x, -%y))
// IR:       %out[3:i64] = (cast<f64>(cast<i32>(%x)) + cast<f64>(cast<f32>(%y)))
// LLVM-LABEL: kernel: float_arith
// No fast-math flags and no contraction into fma: IEEE semantics.
// LLVM:     fmul double %y, 2.0
// LLVM-NEXT: fadd double %x,
// LLVM:     fdiv double
// LLVM:     call double @llvm.vector.reduce.fmin.v2f64
// LLVM:     call double @llvm.vector.reduce.fmax.v2f64
// Float to int saturates.
// LLVM:     call i32 @llvm.fptosi.sat.i32.f64
// LLVM:     fptrunc double %y to float
// PTX-LABEL: kernel: float_arith
// y * 2.0 is exactly y + y.
// PTX:      add.rn.f64
// PTX:      add.rn.f64
// PTX:      div.rn.f64
// PTX-NOT:  fma.rn.f64
// PTX:      ret;
// ASM-LABEL: kernel: float_arith
// ASM:      float_arith:
// ASM:      divsd

EMBER_LIT_KERNEL(compare_logic, {"out", "i", "u", "f"}, [](Ptr<bool> out, Int i, UInt32 u, Float32 f) {
    out[0] = i < 1 && u <= 2u;
    out[1] = i > 3 || !(u >= 4u);
    out[2] = (i == 5) ^ (f != 6.0f);
    out[3] = select(f < 0.5f, u == 7u, f >= 1.5f);
})
// IR-LABEL: kernel: compare_logic
// IR:       %out[0:i64] = ((%i < 1:i64) && (%u <= 2:u32))
// IR-NEXT:  %out[1:i64] = ((%i > 3:i64) || !(%u >= 4:u32))
// IR-NEXT:  %out[2:i64] = ((%i == 5:i64) ^ (%f != 6.0:f32))
// IR-NEXT:  %out[3:i64] = select((%f < 0.5:f32), (%u == 7:u32), (%f >= 1.5:f32))
// LLVM-LABEL: kernel: compare_logic
// LLVM:     icmp slt i64 %i, 1
// Unsigned types compare unsigned.
// LLVM:     icmp ule i32 %u, 2
// LLVM:     and i1
// LLVM:     icmp uge i32 %u, 4
// LLVM:     xor i1 {{.*}}, true
// LLVM:     or i1
// `!=` on floats is true for NaN (unordered); the others are ordered.
// LLVM:     fcmp une float %f, 6.0
// LLVM:     fcmp olt float %f, 5.0
// LLVM:     fcmp oge float %f, 1.5
// LLVM:     select i1
// PTX-LABEL: kernel: compare_logic
// PTX:      setp
// PTX:      st.global.u8
// ASM-LABEL: kernel: compare_logic
// ASM:      compare_logic:

EMBER_LIT_KERNEL(special_registers, {"out"}, [](Ptr<int64_t> out) {
    out[0] = thread_idx.x + thread_idx.y + thread_idx.z;
    out[1] = block_idx.x + block_idx.y + block_idx.z;
    out[2] = block_dim.x + block_dim.y + block_dim.z;
    out[3] = grid_dim.x + grid_dim.y + grid_dim.z;
    out[4] = global_idx.z;
})
// IR-LABEL: kernel: special_registers
// IR:       %out[0:i64] = ((thread_idx.x + thread_idx.y) + thread_idx.z)
// IR-NEXT:  %out[1:i64] = ((block_idx.x + block_idx.y) + block_idx.z)
// IR-NEXT:  %out[2:i64] = ((block_dim.x + block_dim.y) + block_dim.z)
// IR-NEXT:  %out[3:i64] = ((grid_dim.x + grid_dim.y) + grid_dim.z)
// IR-NEXT:  %out[4:i64] = ((block_dim.z * block_idx.z) + thread_idx.z)
// LLVM-LABEL: kernel: special_registers
// LLVM-NV-DAG: @llvm.nvvm.read.ptx.sreg.tid.y()
// LLVM-NV-DAG: @llvm.nvvm.read.ptx.sreg.tid.z()
// LLVM-NV-DAG: @llvm.nvvm.read.ptx.sreg.ctaid.z()
// LLVM-NV-DAG: @llvm.nvvm.read.ptx.sreg.ntid.z()
// LLVM-NV-DAG: @llvm.nvvm.read.ptx.sreg.nctaid.y()
// LLVM-CPU:  define internal void @special_registers.body(ptr {{.*}}%out, ptr
// LLVM:      ret void
// PTX-LABEL: kernel: special_registers
// PTX-DAG:   %tid.z
// PTX-DAG:   %ctaid.y
// PTX-DAG:   %ntid.z
// PTX-DAG:   %nctaid.x
// ASM-LABEL: kernel: special_registers
// ASM:       special_registers:

EMBER_LIT_KERNEL(control_flow, {"out", "n"}, [](Ptr<int64_t> out, Int n) {
    Var<int64_t> acc(0);
    for_(0, n, [&](Int i) {
        if_(i % 2 == 0, [&] { continue_(); });
        if_(i > 100, [&] { break_(); });
        acc += i;
    });
    for_(n, 0, -3, [&](Int i) { out[i] = i; });
    while_([&] { return acc > 10; }, [&] { acc -= 10; });
    if_(acc == 0, [&] { out[0] = 1; }).elif_(acc == 1, [&] { out[0] = 2; }).else_([&] { out[0] = acc; });
})
// IR-LABEL: kernel: control_flow
// IR:       var %0: i64 = 0:i64
// IR-NEXT:  for %1: i64 = 0:i64 to %n step 1:i64 {
// IR-NEXT:    if ((%1 % 2:i64) == 0:i64) {
// IR-NEXT:      continue
// IR-NEXT:    }
// IR-NEXT:    if (%1 > 100:i64) {
// IR-NEXT:      break
// IR-NEXT:    }
// IR-NEXT:    let %2: i64 = %0
// IR-NEXT:    %0 = (%2 + %1)
// IR-NEXT:  }
// IR-NEXT:  for %3: i64 = %n to 0:i64 step -3:i64 {
// IR-NEXT:    %out[%3] = %3
// IR-NEXT:  }
// IR-NEXT:  while (%0 > 10:i64) {
// IR-NEXT:    let %4: i64 = %0
// IR-NEXT:    %0 = (%4 - 10:i64)
// IR-NEXT:  }
// IR-NEXT:  let %5: i64 = %0
// IR-NEXT:  if (%5 == 0:i64) {
// IR-NEXT:    %out[0:i64] = 1:i64
// IR-NEXT:  } else {
// The elif_ condition reads acc only when the first condition is false.
// IR-NEXT:    let %6: i64 = %0
// IR-NEXT:    if (%6 == 1:i64) {
// LLVM-LABEL: kernel: control_flow
// LLVM:      br i1
// LLVM:      ret void
// PTX-LABEL: kernel: control_flow
// PTX:       bra.uni
// PTX:       ret;
// ASM-LABEL: kernel: control_flow
// ASM:       control_flow:

EMBER_LIT_KERNEL(memory, {"dst", "src", "n"}, [](Ptr<float> dst, Ptr<float> src, Int32 n) {
    auto i = global_idx.x;
    if_(i < cast<int64_t>(n), [&] {
        Float32 old = dst[i];
        dst[i] += src[i] * 2.0f;
        dst[i + 1] = old;
        src[cast<uint32_t>(n)] = dst[0];
    });
})
// IR-LABEL: kernel: memory
// IR:         let %0: f32 = %dst[((block_dim.x * block_idx.x) + thread_idx.x)]
// `a += b` evaluates b first (C++17), then reads a.
// IR-NEXT:    let %1: f32 = %src[((block_dim.x * block_idx.x) + thread_idx.x)]
// IR-NEXT:    let %2: f32 = %dst[((block_dim.x * block_idx.x) + thread_idx.x)]
// IR-NEXT:    %dst[((block_dim.x * block_idx.x) + thread_idx.x)] = (%2 + (%1 * 2.0:f32))
// IR-NEXT:    %dst[(((block_dim.x * block_idx.x) + thread_idx.x) + 1:i64)] = %0
// IR-NEXT:    let %3: f32 = %dst[0:i64]
// IR-NEXT:    %src[cast<u32>(%n)] = %3
// LLVM-LABEL: kernel: memory
// An unsigned index is zero-extended.
// LLVM:      zext i32 %n to i64
// PTX-LABEL: kernel: memory
// PTX:       ld.global.f32
// PTX:       st.global.f32
// ASM-LABEL: kernel: memory
// ASM:       memory:

EMBER_LIT_KERNEL(read_only, {"in", "out"}, [](Ptr<const float> in, Ptr<float> out) {
    out[global_idx.x] = in[global_idx.x] * 2.0f;
})
// IR-LABEL: kernel: read_only
// IR:       kernel @read_only(%in: ptr<global const f32>, %out: ptr<global f32>) {
// LLVM-LABEL: kernel: read_only
// LLVM:     load float, ptr{{.*}}, align 4, !invariant.load
// PTX-LABEL: kernel: read_only
// The read-only data path.
// PTX:      ld.global.nc.f32
// ASM-LABEL: kernel: read_only
// ASM:      read_only:

EMBER_LIT_MAIN()
