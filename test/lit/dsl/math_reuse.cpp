// A math call used several times is one node in the traced IR (the front end shares it), and it
// is emitted once per scope: where its uses follow each other, one call; a use in a branch or a
// loop body that comes first gets its own call there, and so does the use after it ([Note] Math
// calls emitted once, compiler/lib/CodeGenLLVM.cpp). The front end binds a load to a `let` where
// it is written, so a call of a loaded value is reused too. (A call that reads a mutable variable
// directly is emitted at each use; the front end never builds one: CodeGenTest builds it.)
// RUN: lit-math-reuse --emit=llvm --target=nvptx:sm_90 | FileCheck %s
// RUN: lit-math-reuse --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
#include "LitMain.h"
using namespace ember;

// Five uses in one scope, two more in the branches of an if, one after it: one call.
EMBER_LIT_KERNEL(same_scope, {"y", "a"}, [](Ptr<float> y, Float32 a) {
    Float32 e = exp(a * 0.5f);
    y[0] = e + e * e;
    y[1] = e - e;
    if_(a > 0.0f, [&] { y[2] = e; }).else_([&] { y[3] = e; });
    y[4] = e;
})

// First used in the then branch: the else branch and the code after the if each emit it again.
EMBER_LIT_KERNEL(branch_first, {"y", "a"}, [](Ptr<float> y, Float32 a) {
    Float32 e = exp(a);
    if_(a > 0.0f, [&] { y[0] = e + e; }).else_([&] { y[1] = e; });
    y[2] = e;
})

// A call of the loop index inside a body unrolled by 4 by hand: one call per copy and one in
// the loop for the rest.
EMBER_LIT_KERNEL(unrolled, {"y", "n"}, [](Ptr<float> y, Int n) {
    Var<float> acc(0.0f);
    for_(
        Int(0), n, Int(1) + n % 2,
        [&](Int k) {
            Float32 g = exp(cast<float>(k));
            acc += g * g;
        },
        unroll(4));
    y[0] = acc;
})

// exp of a loaded value (a let): one call.
EMBER_LIT_KERNEL(of_load, {"x", "y"}, [](Ptr<const float> x, Ptr<float> y) {
    Float32 e = exp(x[0]);
    y[0] = e;
    y[1] = e;
})

// CHECK-LABEL: kernel: same_scope
// CHECK:       define {{.*}}@same_scope(
// CHECK:       call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       ret void

// CHECK-LABEL: kernel: branch_first
// CHECK:       define {{.*}}@branch_first(
// CHECK:       if.then:
// CHECK:       call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       if.else:
// CHECK:       call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       if.end:
// CHECK:       call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       ret void

// CHECK-LABEL: kernel: unrolled
// CHECK:       define {{.*}}@unrolled(
// CHECK-COUNT-5: call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       ret void

// CHECK-LABEL: kernel: of_load
// CHECK:       define {{.*}}@of_load(
// CHECK:       call float @__ember_exp_f32(
// CHECK-NOT:   call float @__ember_exp_f32(
// CHECK:       ret void

// One short path, one call of the full function for the rare arguments:
// PTX-LABEL: .entry same_scope(
// PTX:         call.uni
// PTX-NOT:     call.uni
// PTX:         ret;

EMBER_LIT_MAIN()
