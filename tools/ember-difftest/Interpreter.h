/// \file
/// A reference interpreter of ember's kernel IR, written from [Note] IR semantics (IR.h) alone and
/// sharing no code with the compiler: the oracle of ember-difftest.
///
/// [Note] Reference interpreter
/// ============================
/// `run_kernel` executes a kernel for a whole grid, block after block, over memory regions the
/// caller provides (one per pointer parameter). Every value is kept as raw bits of its IR type
/// (integers wrapped to their width, floats as their IEEE encodings, bool 0/1), and each operator
/// follows the semantics note: wrapping integers, division by zero = 0, saturating float -> int
/// casts, correctly rounded float arithmetic without contraction (f16, bf16 and f32 computed in
/// double and rounded once to the type, which is exact for + - * / sqrt; fma of f16/bf16 with a
/// round-to-odd intermediate), IEEE minNum/maxNum.
///
/// Threads of a block run statement by statement: a statement without a barrier or a warp
/// operation runs to completion for thread 0, 1, ... in turn (a race-free kernel cannot tell);
/// a barrier is a point every thread has reached once the statements before it ran for all; a
/// statement holding warp operations evaluates their operands for every lane first, then the
/// operations warp by warp, then the rest of the statement per thread. Barriers and warp
/// operations may appear at the top of the kernel body, in blocks, uniform `if`s and in `for`
/// loops whose bounds every thread agrees on; elsewhere (divergent control flow) the interpreter
/// throws `Unsupported` rather than guess. Vectors are first rewritten into one scalar per lane
/// (a vector load or store is its lanes' element accesses; reduce folds as the note says). Not
/// supported (`Unsupported`): the math
/// library (rsqrt ... erf, whose bits only ember's own implementation defines), print, constant
/// memory and dynamic shared memory.
#ifndef EMBER_TOOLS_DIFFTEST_INTERPRETER_H
#define EMBER_TOOLS_DIFFTEST_INTERPRETER_H

#include "ember/compiler/IR.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember::difftest {

/// The kernel uses something the interpreter does not model (see [Note] Reference interpreter).
struct Unsupported : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// The kernel is undefined (an access out of bounds, a partial warp, a barrier not reached by
/// every thread, a loop that does not end): a bug of whoever made the kernel.
struct Undefined : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The memory behind one pointer parameter: elements of the parameter's pointee type.
struct Region {
    std::vector<uint8_t> bytes;
};

struct Launch {
    uint64_t grid = 1, block = 1; ///< x dimensions (y and z are 1)
    /// Upper bound on the statements one thread may run (a guard against endless loops).
    uint64_t max_steps_per_thread = 1u << 16;
};

/// Runs `k` over `regions` (one per parameter, in order; every parameter is a pointer). Throws
/// Unsupported or Undefined.
void run_kernel(const ir::Kernel &k, std::vector<Region> &regions, const Launch &launch);

/// Float helpers shared with the runner: the bits of the type's float nearest `d`, and the value
/// of float bits (exact).
uint64_t encode_float(ir::ScalarType t, double d);
double decode_float(ir::ScalarType t, uint64_t bits);

} // namespace ember::difftest

#endif // EMBER_TOOLS_DIFFTEST_INTERPRETER_H
