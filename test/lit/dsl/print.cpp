// print() inside kernels: IR, LLVM IR (vprintf on NVPTX, printf on the CPU), PTX and ptxas.
// RUN: lit-print --emit=ir | FileCheck %s --check-prefix=IR
// RUN: lit-print --emit=llvm --target=nvptx:sm_90 | FileCheck %s --check-prefixes=LLVM,LLVM-NV
// RUN: lit-print --emit=llvm --target=cpu | FileCheck %s --check-prefixes=LLVM,LLVM-CPU
// RUN: lit-print --emit=asm --target=nvptx:sm_90 | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ lit-print --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

EMBER_LIT_KERNEL(prints, {"x", "flag", "small"}, [](Float32 x, Bool flag, UInt8 small) {
    print("thread", thread_idx.x, "of", block_dim.x);
    print(x, flag, small, 7, "100% \"done\"", sep("\t"), end(";\n"));
})
// IR-LABEL: kernel: prints
// IR:       print("thread", thread_idx.x, "of", block_dim.x)
// IR-NEXT:  print(%x, %flag, %small, 7:i32, "100% \"done\"", sep="\t", end=";\n")
// LLVM-LABEL: kernel: prints
// LLVM-DAG:   c"thread %lld of %lld\0A\00"
// '%' in text is doubled; floats print as %g, bool as a string, small integers widen.
// LLVM-DAG:   c"%g\09%s\09%u\09%d\09100%% \22done\22;\0A\00"
// LLVM-DAG:   c"True\00"
// LLVM-NV:    call i32 @vprintf(ptr
// LLVM-CPU:   call i32 (ptr, ...) @printf(ptr
// LLVM:       fpext float %x to double
// LLVM:       zext i8 %small to i32
// PTX-LABEL: kernel: prints
// PTX:       .extern .func  (.param .b32 func_retval0) vprintf
// PTX:       call.uni (retval0),
// PTX-NEXT:  vprintf,

EMBER_LIT_MAIN()
