/// \file
/// compiler_build_id(): the identity of this build of the compiler.
///
/// [Note] Compiler build identity
/// The code the compiler emits depends on more than the IR, the target, the options and the LLVM
/// version: on ember's own code generator (every file of compiler/: lowering, the pass pipeline,
/// the targets, the math library, the CPU fibers and ORC loader) and on how it was built. So a
/// build computes, in cmake/EmberBuildId.cmake (run by a custom command of
/// compiler/CMakeLists.txt), the SHA-256 of
/// - the content of every file under compiler/lib and compiler/include, and compiler/CMakeLists.txt
///   (by path relative to compiler/, so that two checkouts of one commit agree);
/// - the C++ compiler (id, version, target), the build type, CMAKE_CXX_FLAGS of that type, the
///   C++ standard, and the compile options and definitions the library is really built with
///   (generator expressions: flags added anywhere, a sanitizer build's too);
/// - LLVM: its version, the content of llvm-config.h and the name and size of each LLVM library.
/// Ninja reruns the command when any of these files changes, and the header (EmberBuildId.h) is
/// rewritten only when the value changes. Not inputs: the DSL (the IR hash of the key covers
/// what the tracer produced) and the runtime (it loads what the compiler made; the CUDA link that
/// turns PTX into a cubin passes no code-affecting option, and the cubin key holds the driver
/// version and the device arch). The compile cache puts the identity in every key ([Note]
/// Compile cache in runtime/lib/CompileCache.h), so a build whose compiler differs never reads an
/// entry another build wrote.
#include "ember/compiler/Compiler.h"

#include "EmberBuildId.h"

namespace ember {

std::string compiler_build_id() { return EMBER_COMPILER_BUILD_ID; }

} // namespace ember
