/// \file
/// The kernel IR: immutable, reference-counted expression and statement nodes with structured
/// control flow, identity-based variables, and the semantics every pass and back end relies on.
///
/// [Note] IR semantics
/// ===================
/// * Evaluation. Statements run in order. An expression is evaluated where the statement that
///   holds it runs, operands left to right. Expressions are pure except `Load`, which reads
///   memory at that point; the front end binds every load and every read of a mutable variable to
///   a `let` where the user wrote it, so a tree never observes a later store or assignment.
///   `&&` and `||` (Binary And/Or on bool) evaluate both operands: there is no short circuit.
/// * Integers wrap (two's complement) on overflow for +, -, * and unary minus; there is no
///   undefined behaviour and no poison. Division truncates toward zero, and `a % b` has the sign
///   of `a` (C). Division or remainder by zero yields 0. `MIN / -1` wraps to `MIN` and
///   `MIN % -1` is 0. Shift amounts are taken modulo the bit width; `>>` is arithmetic for signed
///   and logical for unsigned types.
/// * Floats are IEEE-754 with round-to-nearest-even and no fast-math: no reassociation, no
///   contraction of a*b+c into fma (unless the kernel says `fp_contract(fast)`, below), no flush
///   of subnormals, division and sqrt correctly rounded.
///   `min`/`max` of floats follow IEEE-754 minNum/maxNum (a NaN operand yields the other one).
///   Comparisons with NaN are false, except `!=` which is true.
/// * Casts: int to int truncates or extends by the source's signedness; float to int truncates
///   toward zero and saturates to the destination's range (NaN gives 0); int to float rounds to
///   nearest; float to float rounds to nearest; bool to number gives 0 or 1; number to bool is
///   `x != 0`.
/// * 8-bit floats. `e4m3` (bias 7, 3 mantissa bits, largest finite 448, no infinities, NaN
///   S.1111.111) and `e5m2` (bias 15, 2 mantissa bits, largest finite 57344, infinities and NaNs
///   as f16's) are the OCP FP8 formats tensor cores multiply. They have no arithmetic, comparison
///   or atomics: they are loaded, stored, selected, put in and taken out of vectors, cast, and
///   multiplied by mma. A cast of one to f16, bf16 or f32 is exact (every value is representable,
///   subnormals included; NaN stays NaN, e5m2's infinities stay infinite). A cast to one from f16,
///   bf16, f32 or the other 8-bit float rounds to nearest even and saturates, as PTX's
///   `cvt.rn.satfinite` does: a magnitude above the largest finite value, infinity included,
///   gives the largest finite value with its sign, and NaN gives 0x7f. Other types cast through
///   f32.
/// * Memory. `Load`/`Store` address `ptr[index]` in elements of the pointee type; the index is any
///   integer type, sign- or zero-extended by its own signedness. An access outside the memory an
///   allocation covers is undefined (as in CUDA): on the CPU device it may crash the process.
///   Stores through a `const` (read-only) pointer are rejected by the verifier. A pointer
///   parameter marked `noalias` asserts (C's `restrict`) that, while the kernel or call runs,
///   memory accessed through it is accessed through no pointer that is not derived from it; the
///   compiler may reorder and combine its accesses accordingly. A kernel that breaks the
///   assertion is undefined.
/// * Vectors. A vector type `TxN` (N = 2, 4, 8 or 16 lanes of a non-void scalar T) holds N
///   values. Unary, Binary, Compare (giving boolxN), Cast (between vectors of equal lane counts),
///   Select (a bool condition picks a whole arm, a boolxN one picks lane by lane) and the
///   intrinsics (Call) apply to each lane with the scalar rules above: integer lanes wrap, a lane
///   divided by 0 gives 0, float lanes round as scalars do, the math library gives each lane the
///   bits the scalar function gives. `TxN(a)` repeats the scalar a in every lane, `TxN(a0, ...,
///   aN-1)` puts a_i in lane i, `extract<k>(v)` reads lane k (0 <= k < N, a constant).
///   `reduce_<op>(v)` folds the lanes into one scalar: add and mul (numbers; integers wrap), min
///   and max (numbers; floats as minNum/maxNum), and, or, xor (integers, or bool: `reduce_and`
///   is "all lanes", `reduce_or` "any lane"). Float add and mul fold in a fixed tree, the same on
///   every target: the upper half of the lanes is combined lane-wise into the lower half until
///   one lane is left, so reduce_add(f32x4(a, b, c, d)) is (a + c) + (b + d), each + rounded.
///   Kernel parameters, print items, pointees and the operands of atomics, warp operations,
///   indices, loop bounds and conditions are scalars.
/// * Vector memory. `load<N>(p[i])` reads elements i ... i+N-1 of `p` as one TxN value, and a
///   Store of a TxN value writes them, each as one access (16 bytes at most per machine access).
///   The address of element i must be a multiple of min(N * sizeof(T), 16) bytes (a bool takes
///   one byte): a 16-byte vector moves in one instruction (ld.global.v4.f32 on NVIDIA, an aligned
///   vector move on the CPU), and a wider one in 16-byte pieces. A misaligned vector access is an
///   error of the launch, never a silent slow path: NVIDIA GPUs fault
///   (CUDA_ERROR_MISALIGNED_ADDRESS, after which the CUDA context is unusable); the CPU device
///   checks every vector access, carries out a misaligned one all the same (with unaligned moves),
///   and fails the launch with a LaunchError naming the kernel, the address and the alignment.
/// * Special registers are `i64` values: thread_idx.{x,y,z} in [0, block_dim), block_idx in
///   [0, grid_dim), block_dim and grid_dim >= 1. They are constant for a thread's lifetime.
/// * Variables. A `Variable` is an identity: two variables with the same name are different
///   variables, and passes compare pointers. Params and `let`s are immutable; `var`s (Declare)
///   are mutable and are read through `VarRef`. A loop index is immutable inside its body.
///   A variable is in scope from its definition to the end of the enclosing block.
/// * Loops. `for %i = b to e step s` evaluates b, e and s once, then runs the body for
///   i = b, b + s, b + 2s, ... while (s > 0 ? i < e : s < 0 ? i > e : false), counting in exact
///   integers: the loop ends where the next index would leave the index type's range instead of
///   wrapping around, so it runs exactly max(0, ceil((e - b) / s)) times (none for s = 0).
///   `while c` re-evaluates c before every iteration. `break` and `continue` act on the innermost
///   loop.
/// * Launch bounds. `kernel @k(...) max_threads(T) min_blocks(B) max_registers(R)` (each
///   optional, in this order) promises that no launch of @k has more than T threads per block
///   (the runtime rejects one that does), asks that B blocks of T threads fit on a multiprocessor
///   at once, and caps registers per thread at R: PTX's .maxntid, .minnctapersm and .maxnreg
///   (nvvm.annotations), AMDGPU's amdgpu-flat-work-group-size and amdgpu-num-vgpr (B has no
///   AMDGPU counterpart), nothing on the CPU. They change how registers are allocated (spills
///   where R or B is tight), never what the kernel computes. Ranges: T 1 to 1024, B 1 to 32
///   (only with T), R 16 to 255.
/// * Contraction. `kernel @k(...) fp_contract(fast)` lets the compiler fuse a float multiply
///   and an add or subtract that uses its result into one fma, rounded once (LLVM's `contract`
///   flag on every fadd, fsub and fmul of the kernel and of the functions it calls; CUDA's
///   default `--fmad=true`). Which pairs fuse is the optimiser's choice, so results may differ
///   between targets and compiler versions, usually in the last bit. Without it (the default,
///   `fp_contract(off)`, not printed) every operation rounds as written and a kernel computes the
///   same bits on every target; `fma()` fuses where the author says. The math library is never
///   contracted.
/// * Unroll hints. `for ... unroll(none)`, `unroll(full)` or `unroll(N)` asks the optimiser to
///   keep the loop rolled, to unroll it completely, or by N: LLVM loop metadata
///   (`llvm.loop.unroll.disable`, `.full`, `.count`) on the backedge, on every target. A hint
///   never changes the loop's meaning; `full` takes effect only where the trip count is a
///   constant after optimisation, `N` leaves a remainder loop where N does not divide it (where
///   the trip count is not a constant, the code generator emits the groups of N itself: [Note]
///   Unrolling by hand in CodeGenLLVM.cpp). Without a hint (nothing printed) LLVM's own
///   heuristics decide for a loop whose trip count is a constant; one whose trip count is known
///   only at run time stays rolled (`llvm.loop.unroll.runtime.disable`).
/// * Intrinsics (Call). abs(MIN) wraps to MIN; abs of a float clears the sign bit. popcount,
///   clz and ctz count bits of the integer's width; clz(0) and ctz(0) are that width. sqrt is
///   correctly rounded; floor, ceil and trunc round as named; round rounds half away from zero
///   (C's round); fma(a, b, c) rounds once; copysign takes b's sign; isnan, isinf and isfinite
///   give bool; fmin and fmax are IEEE minNum/maxNum, like min and max. All of these are exact on
///   every target. The math library (rsqrt, cbrt, exp ... erf) is ember's own code, the same
///   on every target, with the error bounds docs/math.md publishes; f16 and bf16 arguments are
///   computed in f32 and rounded. The `fast_` functions use approximate hardware instructions
///   where the target has them (error bounds in docs/math.md) and the accurate function elsewhere.
/// * Atomic read-modify-writes `ptr[index]` indivisibly with respect to every other atomic of the
///   device and returns the old value; the ordering is relaxed (CUDA's atomicAdd): use fences for
///   ordering. Integer add/sub wrap; min/max follow the type's signedness; float add rounds as +.
///   cas writes `value` only where the old value equals `compare` (bitwise for integers). An
///   atomic of scope `block` is indivisible only with respect to the atomics of its block (cheaper
///   on GPUs, e.g. for shared memory), `device` (the default) for the device, and `system` also
///   for the host and other devices (CUDA's atomicAdd_block / atomicAdd / atomicAdd_system).
/// * Warp operations are collective over the 32 lanes of a warp (lane = the thread's linear index
///   in its block modulo 32): every existing lane of the warp must execute the same operation
///   together. shuffle_idx reads lane `lane % 32`; shuffle_up/down read `lane -/+ delta` and give
///   the reader's own value outside [0, 32); shuffle_xor reads `lane ^ mask`. Reading a lane that
///   does not exist (a partial last warp) is undefined. ballot gives the u32 whose bit i is lane
///   i's condition; warp_any / warp_all are whether any / all of the lanes' conditions hold.
///   wave_ballot gives the u64 whose bit i is the condition of lane i of the thread's hardware
///   wave: on a wave of 64 (AMD CDNA) both warps of the wave, bits 0-31 the first and 32-63 the
///   second, every lane of the wave executing it together; wherever the wave is the warp (NVIDIA,
///   AMD RDNA, the CPU device) the warp's ballot, bits 32-63 zero. Lanes that do not exist or
///   have returned contribute 0.
/// * Matrix multiply-accumulate. `mma.<shape>.<input>(a, b, c)` is a warp operation (all 32
///   lanes of the warp execute it together; a warp with fewer live lanes is undefined, and the
///   CPU device fails the launch) computing D = A * B + C for an m x k matrix A, a k x n matrix B
///   and m x n matrices C and D, each spread over the warp's lanes as fragments, the layouts of
///   the PTX ISA's `mma.sync.aligned.<shape>.row.col`. With g = lane / 4 and t = lane % 4, a
///   lane's vector element i is, for the shapes and inputs there are:
///   - m16n8k16, f16 or bf16: a (8 elements) A[g + 8 * (i / 2 % 2)][2t + i % 2 + 8 * (i / 4)];
///     b (4) B[2t + i % 2 + 8 * (i / 2)][g].
///   - m16n8k8, f16 or bf16: a (4) A[g + 8 * (i / 2)][2t + i % 2]; b (2) B[2t + i][g].
///   - m16n8k8, tf32: a (4, f32) A[g + 8 * (i % 2)][t + 4 * (i / 2)]; b (2, f32) B[t + 4i][g].
///   - m16n8k32, e4m3 or e5m2: a (16) A[g + 8 * (i / 4 % 2)][4t + i % 4 + 16 * (i / 8)]; b (8)
///     B[4t + i % 4 + 16 * (i / 4)][g].
///   - c and the result, for every shape (4 elements): C[g + 8 * (i / 2)][2t + i % 2], f32, or
///     f16 with f16 inputs (the products are then summed in f16 precision at least).
///   Every product of two elements is exact; the k products and C's element are summed in f32
///   precision at least, in an order and with roundings the hardware chooses (NVIDIA's tensor
///   cores do not round each step to nearest), so the last bits may differ between targets. tf32
///   inputs are f32 values of which only the sign, the exponent and the 10 high bits of the
///   mantissa take part (the 13 low bits are ignored). The CPU device sums in f32 in the order of
///   k, starting from C's element, and rounds an f16 result once. NVIDIA sm_80 and later; the
///   8-bit floats sm_89 and later (PTX ISA 8.4, which the PTX of such a kernel declares).
/// * Matrix loads. `ldmatrix.xN(p[i])` and `ldmatrix.xN.trans(p[i])` (N = 1, 2 or 4; p a
///   `ptr<shared T>` of a 16-bit T) are warp operations as mma is: together they load N matrices
///   of 8 x 8 elements, each row 8 consecutive elements (16 bytes, the address aligned to 16) at
///   the address `p + i` of one lane: lane 8j + r gives row r of matrix j (lanes 8N to 31 give
///   addresses that are not used). Lane l receives a vector of 2N elements: elements 2j and
///   2j + 1 are row l / 4, columns 2 * (l % 4) and 2 * (l % 4) + 1 of matrix j, or with `.trans`
///   column l / 4, rows 2 * (l % 4) and 2 * (l % 4) + 1 (the matrix transposed). These are the
///   fragments mma takes: one x4 gives a m16n8k16 A fragment, one x2.trans of a row-major k x n
///   tile a B fragment. NVIDIA sm_75 and later (`ldmatrix.sync.aligned.m8n8`).
/// * Warpgroup matrix multiply-accumulate. `wgmma.m64n<N>k16.<f16|bf16>(a[i], b[j]; acc...)` is
///   an operation of a warpgroup: the four warps of threads 128g to 128g + 127 of a block run it
///   together (all 128 threads, the same operands). A is a 64 x 16 matrix, B a 16 x N one (N a
///   multiple of 8 up to 256), both in shared memory in the 128-byte swizzled K-major layout:
///   A(m, k) is the element at byte offset `o(a + i) + 128 m + 2 k` and B(k, n) the one at
///   `o(b + j) + 128 n + 2 k`, where o(p) is p's offset from the start of the block's shared
///   memory, and a byte offset x stands for x with its bits 4-6 exclusive-ored with its bits 7-9
///   (CUDA's 128-byte swizzle: rows of 128 bytes, the 16-byte chunks of row r permuted by r % 8).
///   o(a + i) and o(b + j) modulo 1024 must be 0, 32, 64 or 96 (the first 16 columns of a tile
///   of 64-element rows starting on a 1024-byte boundary, or the next 16, 32 or 48). With
///   `b[j] mn S` B is MN-major instead: B(k, n) is at `o(b + j) + S (n / 64) + 1024 (k / 8) +
///   128 (k % 8) + 2 (n % 64)`, swizzled the same way (a row-major k x n slice brought in as
///   boxes of 64 columns, S bytes apart; o(b + j) a multiple of 1024, S too). D = A B +
///   D, in f32, lives in the `acc` variables (N / 8 of them, f32x4): warp w of the warpgroup
///   holds rows 16w to 16w + 15, and in each warp acc[t] is the m16n8 accumulator fragment (as
///   mma's c) of columns 8t to 8t + 7. wgmma is asynchronous: it starts the multiplication, and
///   the accumulators may be read or written only after `wgmma.commit` and a `wgmma.wait` that
///   leaves its group complete; `wgmma.fence(acc...)` must come before the first wgmma after the
///   accumulators or the operands in shared memory were written otherwise, and shared memory
///   written by ordinary stores needs `fence.proxy.async` and a barrier before a wgmma reads it.
///   The products are summed in f32 in an order the hardware chooses. NVIDIA sm_90a
///   (`wgmma.mma_async`); the CPU device and other targets compute it at once, each thread its
///   own elements, in k order.
/// * Memory barriers and the tensor memory accelerator. An mbarrier is a u64 in shared memory
///   that counts the arrivals of a phase: `mbarrier.init(bar[i], count)` (one thread, before
///   any other use, then a barrier) sets the count a phase waits for; `mbarrier.arrive` arrives;
///   `mbarrier.expect_tx(bar[i], bytes)` arrives and adds `bytes` that asynchronous copies must
///   also complete in this phase. When both reach zero the phase completes and the next begins
///   (phases alternate parity 0, 1, 0, ...); `mbarrier.wait(bar[i], parity)` waits until the
///   phase of that parity has completed (the current phase, when it has that parity; waiting for
///   a phase two back returns at once). `tma_load(dst[i], map, x, y, bar[j])` starts copying the
///   box of the 2-D tensor map `map` whose first element is (column x, row y) into shared memory
///   at dst[i] (128-byte aligned; 1024 for the 128-byte swizzle): the box's rows one after the
///   other, swizzled as the map says, elements outside the matrix zero, and completes the copy's
///   bytes on bar[j]. One thread issues it. NVIDIA sm_90 (`cp.async.bulk.tensor`,
///   `mbarrier.try_wait.parity`); on the CPU device a copy done at once, and a wait that no
///   other thread can ever end is a LaunchError.
/// * Clusters. A launch may group its blocks into clusters of `cluster_dim` blocks in each
///   dimension (the grid a whole number of them; 1 x 1 x 1 without clusters, and on targets that
///   have none, where `cluster_dim` reads 1); the blocks of a cluster run at the same time. A
///   block's rank in its cluster is its place in it, x fastest. `cluster_barrier` waits for every
///   thread of every block of the cluster, as `barrier` does for a block, and orders the memory
///   accesses before it (shared memory included) before those after it.
///   `mbarrier.arrive_cluster(bar[i], rank)` arrives on the mbarrier at bar[i]'s offset in the
///   shared memory of block `rank` of the cluster, this thread's earlier accesses ordered before
///   what follows the completion of that phase. `tma_load(..., bar[j], multicast mask)` copies the
///   box to dst[i]'s offset in every block of the cluster whose rank is a set bit of the 16-bit
///   mask, completing its bytes on each one's mbarrier at bar[j]'s offset. An mbarrier that
///   another block arrives on or copies into must be initialised before that (a cluster_barrier
///   between), and a block must not end while others may still do so (another one at the end).
///   A rank outside the cluster is undefined (a LaunchError on the CPU device). NVIDIA sm_90
///   (`barrier.cluster.arrive/wait`, `mapa` + `mbarrier.arrive.release.cluster`,
///   `cp.async.bulk.tensor ... .multicast::cluster`); the CPU device runs the blocks of a cluster
///   together as fibers of one scheduler ([Note] CPU fibers), each with its own shared memory.
/// * Return ends the thread's kernel early (a kernel returns no value), or ends a device
///   function call, with the function's value when it returns one.
/// * Device functions. `func @f(%a: T, ...) -> R { ... }` defines a function that kernels and
///   other functions call as `@f(args)` (an Invoke), passing arguments by value (pointers are
///   values: the callee reads and writes the caller's memory through them). Calls evaluate their
///   arguments left to right, then run the body; a function of a non-void type ends in a
///   `return e` on every path (the verifier checks), a void one is called as a statement
///   (Evaluate). A call sees the caller's thread: special registers, barrier, warp operations and
///   print act as if written at the call site. Recursion cannot be expressed: a function is built
///   from its finished body, so it can only call functions that existed before it (the parser
///   and the front end reject a call of the function being defined). Shared arrays are declared
///   in kernels (a function gets the pointer as an argument). Whether a call is inlined is up to
///   the compiler.
/// * Print writes its items separated by `sep` and followed by `end`, as one line of this
///   thread's output (lines of different threads do not mix; their order is unspecified). Integers
///   print in decimal, bool as True or False, floats as C's printf `%g` (6 significant digits).
///   On NVIDIA GPUs the output appears at the next synchronisation (CUDA's printf buffer).
/// * Shared memory. `shared %s: T[N]` defines %s, a `ptr<shared T>` to N elements that every
///   thread of a block sees (one array per block, per kernel launch, whatever the statement's
///   position); its contents are undefined when the block starts. At most 48 KiB per kernel.
///   `shared %d: T[]` is the dynamic shared memory, sized by the launch (`shared_mem_bytes`);
///   every dynamic array of a kernel starts at the same address (they alias, as CUDA's
///   `extern __shared__`). Accesses past the launch's size are undefined.
/// * Constant memory. `constant %c: T[N] @name` defines %c, a `ptr<constant const T>` to the N
///   elements of the module global `name` (CUDA's `__constant__`), optionally followed by its
///   initial value `= [v0, v1, ...]` (N immediates of T; zeros otherwise). Threads only read it;
///   the host writes it between launches (the runtime's get_global / constant_memory), and a
///   launch sees what was written before it on its stream. Declared in kernels only (a function
///   gets the pointer as an argument); names are C identifiers, unique in the kernel, not the
///   kernel's or a called function's name, not starting with `__`. All of a kernel's constant
///   arrays together take at most 64 KiB. NVIDIA reads it through the constant cache (`ld.const`),
///   which serves threads of a warp reading one address fastest.
/// * Local memory. `local %a: T[N]` defines %a, a `ptr<local T>` to N elements private to the
///   thread (uninitialised), alive until the thread ends.
/// * Fences order this thread's memory accesses as seen by other threads: `fence block` for the
///   threads of its block, `fence device` for the whole device, `fence system` also for the host
///   and other devices (CUDA's __threadfence_block / __threadfence / __threadfence_system).
/// * Asynchronous copies. `async_copy.N(%dst[i], %src[j])` starts copying the N elements
///   %src[j .. j+N) of global memory to %dst[i .. i+N) of shared memory (one element type; N
///   elements of 4, 8 or 16 bytes in all; both addresses aligned to that size), and
///   `async_copy.N(%dst[i], %src[j], %ok)` copies only where the bool %ok holds and writes zeros
///   (reading nothing) where it does not. `async_commit` closes the group of this thread's copies
///   started since the last commit; `async_wait(n)` waits until at most n of this thread's
///   committed groups are still in flight (`async_wait(0)`: all of them). A copy's destination is
///   undefined until the thread has waited for its group, and other threads see it only after a
///   barrier that follows that wait. Source memory must not be written while a copy from it is
///   in flight. NVIDIA sm_80 and later: `cp.async` (`.cg` for 16 bytes, `.ca` for 4 and 8) with
///   commit and wait groups; elsewhere (older GPUs, AMD, the CPU device) the copy completes when
///   it is issued and commit and wait do nothing, which the rules above allow.
/// * Nesting. Every node has a depth: 1 without children, else 1 + its deepest child's, so a
///   kernel's depth counts its nested statements (a block and the if, for or while holding it
///   are two levels) and the expressions inside them. It is at most max_nesting_depth (1000);
///   the parser and the DSL reject deeper input with an error naming the place and the limit.
///   Within it, every stage (verify, print, parse, hash, code generation) runs on 1 MiB of stack.
/// * Barrier waits for every thread of the block, and makes the shared and global memory writes
///   of each thread before it visible to the block's threads after it (CUDA's __syncthreads).
///   Every thread of the block must reach the same barrier; a thread that has returned counts as
///   having arrived (on the CPU device; on GPUs such a kernel is undefined).
#ifndef EMBER_COMPILER_IR_H
#define EMBER_COMPILER_IR_H

#include "ember/Error.h"
#include "ember/compiler/Type.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ember::ir {

/// Every node kind, generated from IRNodes.def.
enum class NodeKind : uint8_t {
#define EMBER_IR_EXPR(Name) Name,
#define EMBER_IR_STMT(Name) Name,
#include "ember/compiler/IRNodes.def"
};

std::string_view to_string(NodeKind k);

// ---------------------------------------------------------------------------------------------
// Reference counting.

/// Intrusive, atomic reference count shared by all IR objects.
class RefCounted {
public:
    RefCounted() = default;
    RefCounted(const RefCounted &) = delete;
    RefCounted &operator=(const RefCounted &) = delete;
    virtual ~RefCounted() = default;

    void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() const noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
    }

private:
    /// Deletes `p`. The nodes whose last reference that deletion drops are deleted one after the
    /// other by the outermost call on this thread, not inside it: freeing a chain of any length
    /// takes a constant amount of stack.
    static void destroy(const RefCounted *p) noexcept;

    mutable std::atomic<uint32_t> refs_{0};
    /// The next object waiting for `destroy` (once the count is 0).
    mutable const RefCounted *next_pending_ = nullptr;
};

/// Owning pointer over a `RefCounted` object.
template <class T> class Ref {
public:
    Ref() = default;
    Ref(const T *p) : p_(p) { // NOLINT: implicit from raw node pointers, as Halide's handles
        if (p_) p_->retain();
    }
    Ref(const Ref &o) : p_(o.p_) {
        if (p_) p_->retain();
    }
    Ref(Ref &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    template <class U> Ref(const Ref<U> &o) : Ref(o.get()) {}
    ~Ref() {
        if (p_) p_->release();
    }
    Ref &operator=(Ref o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }

    const T *get() const { return p_; }
    const T *operator->() const { return p_; }
    const T &operator*() const { return *p_; }
    explicit operator bool() const { return p_ != nullptr; }
    bool same_as(const Ref &o) const { return p_ == o.p_; }
    friend bool operator==(const Ref &a, const Ref &b) { return a.p_ == b.p_; }

private:
    const T *p_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Variables.

enum class VarKind : uint8_t {
    Param,     ///< a kernel parameter (immutable)
    Let,       ///< bound once by a Let statement (immutable)
    Mutable,   ///< declared by Declare, changed by Assign
    LoopIndex, ///< the index of a For loop (immutable in the body)
};

/// A named value. Identity matters, the name does not: the printer makes names unique.
/// An empty name prints as a number (`%0`, `%1`, ... in order of definition).
struct Variable final : RefCounted {
    std::string name;
    Type type;
    VarKind kind;
    /// A pointer parameter the user asserts does not alias (C's `restrict`; [Note] IR semantics).
    bool noalias = false;

    static Ref<Variable> make(std::string name, Type type, VarKind kind, bool noalias = false);

private:
    Variable(std::string n, Type t, VarKind k, bool na) : name(std::move(n)), type(t), kind(k), noalias(na) {}
};
using VariableRef = Ref<Variable>;

// ---------------------------------------------------------------------------------------------
// Node bases and handles.

/// The deepest nesting of IR nodes: the depth of a node (see IRNode::depth) is at most this. The
/// parser and the DSL reject deeper user input with a CompileError or DslError naming the place
/// and this limit; `make` asserts it. Every walk over the IR recurses at most this deep, so a
/// kernel within the limit compiles on a thread with 1 MiB of stack ([Note] IR semantics: Nesting).
inline constexpr uint32_t max_nesting_depth = 1000;

struct IRNode : RefCounted {
    explicit IRNode(NodeKind k) : kind(k) {}
    const NodeKind kind;
    /// 1 for a node without children, else 1 + the depth of its deepest child (expressions and
    /// statements alike; an Invoke counts its arguments, not the callee's body). Set by `make`.
    uint32_t depth = 1;
};

struct ExprNode : IRNode {
    ExprNode(NodeKind k, Type t) : IRNode(k), type(t) {}
    const Type type;
};

struct StmtNode : IRNode {
    using IRNode::IRNode;
};

/// Handle to an immutable expression. Null only when default-constructed.
class Expr : public Ref<ExprNode> {
public:
    using Ref<ExprNode>::Ref;
    Expr(Ref<ExprNode> r) : Ref<ExprNode>(std::move(r)) {} // NOLINT
    Type type() const { return get()->type; }
    NodeKind kind() const { return get()->kind; }
    uint32_t depth() const { return get()->depth; }
    /// The node as `T`, or null when it is another kind.
    template <class T> const T *as() const {
        return get() && get()->kind == T::static_kind ? static_cast<const T *>(get()) : nullptr;
    }
};

/// Handle to an immutable statement.
class Stmt : public Ref<StmtNode> {
public:
    using Ref<StmtNode>::Ref;
    Stmt(Ref<StmtNode> r) : Ref<StmtNode>(std::move(r)) {} // NOLINT
    NodeKind kind() const { return get()->kind; }
    uint32_t depth() const { return get()->depth; }
    template <class T> const T *as() const {
        return get() && get()->kind == T::static_kind ? static_cast<const T *>(get()) : nullptr;
    }
};

/// A device function (see [Note] IR semantics: Device functions): typed parameters
/// (VarKind::Param), a return type (void for none) and a body (a Block). Immutable and shared by
/// reference: every Invoke of it points to this object, so a kernel with its callees is one
/// self-contained graph.
struct Function final : RefCounted {
    std::string name;
    std::vector<VariableRef> params;
    Type ret;
    Stmt body;
    static Ref<Function> make(std::string name, std::vector<VariableRef> params, Type ret, Stmt body);

private:
    Function(std::string n, std::vector<VariableRef> p, Type r, Stmt b)
        : name(std::move(n)), params(std::move(p)), ret(r), body(std::move(b)) {}
};
using FunctionRef = Ref<Function>;

// ---------------------------------------------------------------------------------------------
// Expressions. Each `make` checks its invariants with EMBER_ASSERT (a violation is a bug in the
// producer: the parser and the DSL check user input before they call `make`).

/// An integer constant. `value` holds the bits, sign-extended for signed types and zero-extended
/// for unsigned ones; `make` wraps the value to the type's width.
struct IntImm final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::IntImm;
    int64_t value;
    static Expr make(Type t, int64_t value);
    /// The value as unsigned bits (for u64 constants above INT64_MAX).
    uint64_t bits() const { return static_cast<uint64_t>(value); }

private:
    IntImm(Type t, int64_t v) : ExprNode(static_kind, t), value(v) {}
};

/// A floating-point constant; `make` rounds `value` to the type (f16, bf16, f32 or f64).
struct FloatImm final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::FloatImm;
    double value;
    static Expr make(Type t, double value);

private:
    FloatImm(Type t, double v) : ExprNode(static_kind, t), value(v) {}
};

struct BoolImm final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::BoolImm;
    bool value;
    static Expr make(bool value);

private:
    explicit BoolImm(bool v) : ExprNode(static_kind, Type(ScalarType::Bool)), value(v) {}
};

/// Reads a variable (a param, a let, a loop index, or the current value of a mutable var).
struct VarRef final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::VarRef;
    VariableRef var;
    static Expr make(VariableRef var);

private:
    explicit VarRef(VariableRef v) : ExprNode(static_kind, v->type), var(std::move(v)) {}
};

enum class SpecialRegKind : uint8_t { ThreadIdx, BlockIdx, BlockDim, GridDim, ClusterDim };
std::string_view to_string(SpecialRegKind k); // "thread_idx", ..., "cluster_dim"

/// thread_idx / block_idx / block_dim / grid_dim / cluster_dim in dimension 0 (x), 1 (y) or 2
/// (z); type i64. cluster_dim is the number of blocks per cluster in that dimension: 1 in a
/// launch without clusters, and on targets that have none ([Note] IR semantics: Clusters).
struct SpecialReg final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::SpecialReg;
    SpecialRegKind reg;
    uint8_t dim;
    static Expr make(SpecialRegKind reg, unsigned dim);

private:
    SpecialReg(SpecialRegKind r, uint8_t d)
        : ExprNode(static_kind, Type(ScalarType::I64)), reg(r), dim(d) {}
};

enum class UnaryOp : uint8_t {
    Neg,    ///< -x, numbers
    Not,    ///< !x, bool
    BitNot, ///< ~x, integers
};
std::string_view to_string(UnaryOp op); // "-", "!", "~"

struct Unary final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Unary;
    UnaryOp op;
    Expr a;
    static Expr make(UnaryOp op, Expr a);

private:
    Unary(UnaryOp o, Expr x) : ExprNode(static_kind, x.type()), op(o), a(std::move(x)) {}
};

enum class BinaryOp : uint8_t {
    Add, Sub, Mul, Div, Mod, ///< numbers
    Min, Max,                ///< numbers
    And, Or, Xor,            ///< integers (bitwise) or bool (logical, no short circuit)
    Shl, Shr,                ///< integers
};
/// "+", "-", "*", "/", "%", "min", "max", "&", "|", "^", "<<", ">>"
std::string_view to_string(BinaryOp op);

/// `a op b`; both operands have the same type, which is the result type.
struct Binary final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Binary;
    BinaryOp op;
    Expr a, b;
    static Expr make(BinaryOp op, Expr a, Expr b);

private:
    Binary(BinaryOp o, Expr x, Expr y)
        : ExprNode(static_kind, x.type()), op(o), a(std::move(x)), b(std::move(y)) {}
};

enum class CompareOp : uint8_t { EQ, NE, LT, LE, GT, GE };
std::string_view to_string(CompareOp op); // "==", "!=", "<", "<=", ">", ">="

/// `a op b` on two operands of one scalar or vector type; the result is bool, or boolxN for
/// vectors (lane by lane).
struct Compare final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Compare;
    CompareOp op;
    Expr a, b;
    static Expr make(CompareOp op, Expr a, Expr b);

private:
    Compare(CompareOp o, Expr x, Expr y)
        : ExprNode(static_kind, Type::vector(ScalarType::Bool, x.type().lanes())), op(o), a(std::move(x)),
          b(std::move(y)) {}
};

/// Converts a scalar to another scalar type, or a vector lane by lane to a vector of as many
/// lanes (see [Note] IR semantics for the rules).
struct Cast final : ExprNode {
    /// What is wrong with casting a `from` to a `to` of as many lanes ("" when nothing): an
    /// 8-bit float converts to and from f16, bf16, f32 and 8-bit floats only.
    static std::string problem(Type from, Type to);
    static constexpr NodeKind static_kind = NodeKind::Cast;
    Expr a;
    static Expr make(Type to, Expr a);

private:
    Cast(Type t, Expr x) : ExprNode(static_kind, t), a(std::move(x)) {}
};

/// `cond ? a : b` with a bool condition, or a boolxN condition choosing lane by lane between two
/// vectors of N lanes; both arms are evaluated.
struct Select final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Select;
    Expr cond, a, b;
    static Expr make(Expr cond, Expr a, Expr b);

private:
    Select(Expr c, Expr x, Expr y)
        : ExprNode(static_kind, x.type()), cond(std::move(c)), a(std::move(x)), b(std::move(y)) {}
};

/// The operand types an operator takes, for `make` and for every producer that checks user input:
/// empty when operands of type `t` are accepted, else what they must be ("numbers", "integers",
/// "integers or bool", "bool", "scalars or vectors"). A vector is accepted where its lane type is.
std::string_view operand_requirement(UnaryOp op, Type t);
std::string_view operand_requirement(BinaryOp op, Type t);
std::string_view operand_requirement(CompareOp op, Type t);

/// Reads `ptr[index]`; the type is the pointee type. With `lanes` > 1 (`load<N>(p[i])`), reads the
/// `lanes` elements from `index` on as one vector (see [Note] IR semantics: Vector memory).
struct Load final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Load;
    Expr ptr, index;
    static Expr make(Expr ptr, Expr index, unsigned lanes = 1);
    unsigned lanes() const { return type.lanes(); }

private:
    Load(Expr p, Expr i, unsigned lanes)
        : ExprNode(static_kind, p.type().element_type().with_lanes(lanes)), ptr(std::move(p)),
          index(std::move(i)) {}
};

/// The bytes a vector access of type `t` must be aligned to: min(t.bytes(), 16).
unsigned vector_alignment(Type t);

/// Built-in functions (see [Note] IR semantics). Their textual names are `to_string(Intrinsic)`.
enum class Intrinsic : uint8_t {
    Abs, Popcount, Clz, Ctz,                 ///< abs: numbers; the others: integers
    Sqrt, Floor, Ceil, Trunc, Round, Fma, Copysign, ///< floats
    IsNan, IsInf, IsFinite,                  ///< floats -> bool
    Fmin, Fmax,                              ///< floats, exact (IEEE minNum/maxNum)
    // The math library (floats; see [Note] Math library in compiler/lib/math/MathLib.h).
    Rsqrt, Cbrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Pow,
    Sin, Cos, Tan, Asin, Acos, Atan, Atan2, Sinh, Cosh, Tanh, Erf,
    // Opt-in approximations where the hardware has them; elsewhere the accurate function.
    FastExp, FastExp2, FastLog, FastLog2, FastSin, FastCos, FastTanh, FastRsqrt, FastSqrt,
};
std::string_view to_string(Intrinsic op); // "abs", "popcount", ...
std::optional<Intrinsic> parse_intrinsic(std::string_view name);
/// How many arguments `op` takes (all of one type).
unsigned arity(Intrinsic op);
/// Empty when arguments of type `t` (a scalar, or a vector of such scalars) are accepted, else
/// what they must be.
std::string_view operand_requirement(Intrinsic op, Type t);
/// The result type for arguments of type `t` (boolxN for the predicates of vectors).
Type result_type(Intrinsic op, Type t);
/// Whether `op` is a math library function (rsqrt ... erf) or a fast_ variant.
inline bool is_math_library(Intrinsic op) { return op >= Intrinsic::Rsqrt; }
inline bool is_fast_math(Intrinsic op) { return op >= Intrinsic::FastExp; }
/// The accurate function a fast_ variant approximates (exp for fast_exp); `op` itself otherwise.
Intrinsic accurate_version(Intrinsic op);

/// `op(args...)`: a built-in function of arguments of one type (lane by lane for vectors).
struct Call final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Call;
    Intrinsic op;
    std::vector<Expr> args;
    static Expr make(Intrinsic op, std::vector<Expr> args);

private:
    Call(Intrinsic o, Type t, std::vector<Expr> a) : ExprNode(static_kind, t), op(o), args(std::move(a)) {}
};

/// The threads a fence or an atomic is ordered or indivisible for: the block, the device, or the
/// system (the host and other devices too).
enum class FenceScope : uint8_t { Block, Device, System };
std::string_view to_string(FenceScope s); // "block", "device", "system"
std::optional<FenceScope> parse_fence_scope(std::string_view s);

enum class AtomicOp : uint8_t { Add, Sub, Min, Max, Exchange, Cas, And, Or, Xor };
/// "add", "sub", "min", "max", "exchange", "cas", "and", "or", "xor" (printed as atomic_<name>)
std::string_view to_string(AtomicOp op);
std::optional<AtomicOp> parse_atomic_op(std::string_view name);
/// Empty when `op` works on elements of type `t`, else what they must be: add works on 32- and
/// 64-bit integers and f32/f64, the others on 32- and 64-bit integers.
std::string_view operand_requirement(AtomicOp op, Type t);

/// `atomic_<op>(ptr[index], value)` or `atomic_cas(ptr[index], compare, value)`: returns the old
/// element. It writes memory, so the front end binds it to a `let` where the user wrote it.
/// `scope` is the set of threads it is indivisible for (printed `atomic_add.block(...)`; device,
/// the default, is not printed).
struct Atomic final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Atomic;
    AtomicOp op;
    Expr ptr, index, value;
    Expr compare; ///< Cas only
    FenceScope scope;
    static Expr make(AtomicOp op, Expr ptr, Expr index, Expr value, Expr compare = Expr(),
                     FenceScope scope = FenceScope::Device);

private:
    Atomic(AtomicOp o, Expr p, Expr i, Expr v, Expr c, FenceScope s)
        : ExprNode(static_kind, p.type().element_type()), op(o), ptr(std::move(p)),
          index(std::move(i)), value(std::move(v)), compare(std::move(c)), scope(s) {}
};

enum class WarpOp : uint8_t { ShuffleIdx, ShuffleUp, ShuffleDown, ShuffleXor, Ballot, Any, All, WaveBallot };
/// "shuffle_idx", "shuffle_up", "shuffle_down", "shuffle_xor", "ballot", "warp_any", "warp_all",
/// "wave_ballot"
std::string_view to_string(WarpOp op);
std::optional<WarpOp> parse_warp_op(std::string_view name);
inline bool is_shuffle(WarpOp op) { return op <= WarpOp::ShuffleXor; }

/// A warp-collective operation (see [Note] IR semantics): shuffles take a value (32- or 64-bit
/// integer or float) and an i32 lane, delta or mask; ballot, warp_any, warp_all and wave_ballot
/// take a bool.
struct Warp final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Warp;
    WarpOp op;
    Expr value;
    Expr lane; ///< shuffles only
    static Expr make(WarpOp op, Expr value, Expr lane = Expr());

private:
    Warp(WarpOp o, Type t, Expr v, Expr l) : ExprNode(static_kind, t), op(o), value(std::move(v)), lane(std::move(l)) {}
};

/// The element type of a matrix multiply-accumulate's A and B fragments ([Note] IR semantics:
/// Matrix multiply-accumulate): f16, bf16, tf32 (f32 values of which the multiply takes 19
/// bits), or the 8-bit floats e4m3 and e5m2.
enum class MmaInput : uint8_t { F16, BF16, TF32, E4M3, E5M2 };
std::string_view to_string(MmaInput t); // "f16", "bf16", "tf32", "e4m3", "e5m2"
std::optional<MmaInput> parse_mma_input(std::string_view s);

/// D (m x n) = A (m x k) * B (k x n) + C: printed `m16n8k16`.
struct MmaShape {
    uint8_t m = 16, n = 8, k = 16;
    bool operator==(const MmaShape &) const = default;
    std::string to_string() const;
    static std::optional<MmaShape> parse(std::string_view s);
};

/// The types of one lane's fragments of an mma.
struct MmaFragments {
    Type a, b, c;
};

/// `mma.<shape>.<input>(a, b, c)`: a warp's matrix multiply-accumulate, D = A * B + C, each
/// matrix a fragment per lane ([Note] IR semantics: Matrix multiply-accumulate). Its type is c's.
struct Mma final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Mma;
    MmaShape shape;
    MmaInput input;
    Expr a, b, c;
    static Expr make(MmaShape shape, MmaInput input, Expr a, Expr b, Expr c);
    /// The fragment types of a shape and input (c with f32 elements), or nullopt where there is
    /// no such mma.
    static std::optional<MmaFragments> fragments(MmaShape shape, MmaInput input);
    /// What is wrong with an mma of these operand types ("" when nothing).
    static std::string problem(MmaShape shape, MmaInput input, Type a, Type b, Type c);
    /// Where a lane's fragments hold A[r][j] and B[j][col] ([Note] IR semantics: Matrix
    /// multiply-accumulate): the lane (0-31) and the element of its vector.
    struct Place {
        unsigned lane, element;
    };
    static Place a_place(MmaShape shape, MmaInput input, unsigned r, unsigned j);
    static Place b_place(MmaShape shape, MmaInput input, unsigned j, unsigned col);

private:
    Mma(MmaShape s, MmaInput in, Expr a_, Expr b_, Expr c_)
        : ExprNode(static_kind, c_.type()), shape(s), input(in), a(std::move(a_)), b(std::move(b_)),
          c(std::move(c_)) {}
};

/// `ldmatrix.xN(ptr[index])` or `ldmatrix.xN.trans(ptr[index])`: the warp loads N 8 x 8 matrices
/// of 16-bit elements from shared memory, each lane giving one row's address and receiving 2N
/// elements ([Note] IR semantics: Matrix loads).
struct MatrixLoad final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::MatrixLoad;
    Expr ptr, index; ///< a ptr<shared T> (T 16 bits wide) and an integer
    uint8_t count;   ///< 1, 2 or 4 matrices
    bool trans;
    static Expr make(Expr ptr, Expr index, unsigned count, bool trans);
    /// What is wrong with loading `count` matrices through a pointer of type `ptr` ("" when
    /// nothing).
    static std::string problem(Type ptr, unsigned count);

private:
    MatrixLoad(Type t, Expr p, Expr i, unsigned n, bool tr)
        : ExprNode(static_kind, t), ptr(std::move(p)), index(std::move(i)),
          count(static_cast<uint8_t>(n)), trans(tr) {}
};

/// `@f(args...)`: a call of a device function; the type is the function's return type. It may
/// write memory, so the front end binds it to a `let` (or, for a void function, an Evaluate)
/// where the user wrote it.
struct Invoke final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Invoke;
    FunctionRef callee;
    std::vector<Expr> args;
    static Expr make(FunctionRef callee, std::vector<Expr> args);

private:
    Invoke(FunctionRef f, std::vector<Expr> a)
        : ExprNode(static_kind, f->ret), callee(std::move(f)), args(std::move(a)) {}
};

/// `TxN(a)` (a broadcast: the scalar `a` in every lane) or `TxN(a0, ..., aN-1)` (a_i in lane i):
/// a vector of type `type` from scalars of its lane type.
struct MakeVector final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::MakeVector;
    std::vector<Expr> args; ///< one (a broadcast) or one per lane
    static Expr make(Type type, std::vector<Expr> args);
    /// `TxN(scalar)`, with N = `lanes`.
    static Expr broadcast(Expr scalar, unsigned lanes);
    bool is_broadcast() const { return args.size() == 1; }

private:
    MakeVector(Type t, std::vector<Expr> a) : ExprNode(static_kind, t), args(std::move(a)) {}
};

/// `extract<lane>(vector)`: one lane of a vector, a scalar of its lane type.
struct Extract final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Extract;
    Expr vector;
    unsigned lane;
    static Expr make(Expr vector, unsigned lane);

private:
    Extract(Expr v, unsigned l) : ExprNode(static_kind, v.type().lane_type()), vector(std::move(v)), lane(l) {}
};

enum class ReduceOp : uint8_t { Add, Mul, Min, Max, And, Or, Xor };
/// "add", "mul", "min", "max", "and", "or", "xor" (printed as reduce_<name>)
std::string_view to_string(ReduceOp op);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);
/// Empty when `op` folds vectors of type `t`, else what they must be ("vectors of numbers",
/// "vectors of integers or bool").
std::string_view operand_requirement(ReduceOp op, Type t);

/// `reduce_<op>(vector)`: the lanes folded into one scalar of the lane type (see [Note] IR
/// semantics: Vectors, for the order of float folds).
struct Reduce final : ExprNode {
    static constexpr NodeKind static_kind = NodeKind::Reduce;
    ReduceOp op;
    Expr value;
    static Expr make(ReduceOp op, Expr value);

private:
    Reduce(ReduceOp o, Expr v) : ExprNode(static_kind, v.type().lane_type()), op(o), value(std::move(v)) {}
};

// ---------------------------------------------------------------------------------------------
// Statements.

/// A sequence of statements and the scope of the variables they define.
struct Block final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Block;
    std::vector<Stmt> stmts;
    static Stmt make(std::vector<Stmt> stmts);

private:
    explicit Block(std::vector<Stmt> s) : StmtNode(static_kind), stmts(std::move(s)) {}
};

/// Binds an immutable variable (kind Let) to a value for the rest of the enclosing block.
struct Let final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Let;
    VariableRef var;
    Expr value;
    static Stmt make(VariableRef var, Expr value);

private:
    Let(VariableRef v, Expr e) : StmtNode(static_kind), var(std::move(v)), value(std::move(e)) {}
};

/// Declares a mutable variable (kind Mutable) with an initial value.
struct Declare final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Declare;
    VariableRef var;
    Expr init;
    static Stmt make(VariableRef var, Expr init);

private:
    Declare(VariableRef v, Expr e) : StmtNode(static_kind), var(std::move(v)), init(std::move(e)) {}
};

/// The most static shared memory a kernel may declare.
inline constexpr uint64_t max_static_shared_bytes = 48 * 1024;

/// Defines `var` (kind Let, type ptr<shared T>) as a static shared array of `count` elements,
/// or, when `count` is 0, as the dynamic shared memory.
struct SharedArray final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::SharedArray;
    VariableRef var;
    uint64_t count;
    static Stmt make(VariableRef var, uint64_t count);

private:
    SharedArray(VariableRef v, uint64_t n) : StmtNode(static_kind), var(std::move(v)), count(n) {}
};

/// Defines `var` (kind Let, type ptr<local T>) as a per-thread array of `count` elements.
struct LocalArray final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::LocalArray;
    VariableRef var;
    uint64_t count;
    static Stmt make(VariableRef var, uint64_t count);

private:
    LocalArray(VariableRef v, uint64_t n) : StmtNode(static_kind), var(std::move(v)), count(n) {}
};

/// The most local memory one thread's arrays may take (CUDA's limit).
inline constexpr uint64_t max_local_bytes = 512 * 1024;

/// The most constant memory a kernel's constant arrays may take together (the 64 KiB that
/// NVIDIA GPUs give a module's `__constant__` variables).
inline constexpr uint64_t max_constant_bytes = 64 * 1024;

/// Defines `var` (kind Let, type ptr<constant const T>) as the module global `name` in constant
/// memory: `count` elements of T that every thread of every launch reads, written by the host
/// between launches (CUDA's `__constant__ T name[count]`). `init` is empty (the array starts as
/// zeros) or `count` immediates of type T (its value when the kernel is loaded).
/// [Note] IR semantics: Constant memory.
struct ConstantArray final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::ConstantArray;
    VariableRef var;
    std::string name;
    uint64_t count;
    std::vector<Expr> init;
    static Stmt make(VariableRef var, std::string name, uint64_t count, std::vector<Expr> init = {});

private:
    ConstantArray(VariableRef v, std::string n, uint64_t c, std::vector<Expr> i)
        : StmtNode(static_kind), var(std::move(v)), name(std::move(n)), count(c), init(std::move(i)) {}
};

/// Assigns a new value to a mutable variable.
struct Assign final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Assign;
    VariableRef var;
    Expr value;
    static Stmt make(VariableRef var, Expr value);

private:
    Assign(VariableRef v, Expr e) : StmtNode(static_kind), var(std::move(v)), value(std::move(e)) {}
};

/// Writes `ptr[index] = value`; a vector value of N lanes writes the N elements from `index` on
/// (see [Note] IR semantics: Vector memory).
struct Store final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Store;
    Expr ptr, index, value;
    static Stmt make(Expr ptr, Expr index, Expr value);

private:
    Store(Expr p, Expr i, Expr v)
        : StmtNode(static_kind), ptr(std::move(p)), index(std::move(i)), value(std::move(v)) {}
};

/// `if cond { then_body } else { else_body }`; else_body may be null.
struct If final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::If;
    Expr cond;
    Stmt then_body, else_body;
    static Stmt make(Expr cond, Stmt then_body, Stmt else_body = Stmt());

private:
    If(Expr c, Stmt t, Stmt e)
        : StmtNode(static_kind), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
};

/// What a `for` asks of loop unrolling: a hint to the optimiser, which never changes what the
/// loop computes ([Note] IR semantics: Unroll hints). `Default` (printed as nothing) leaves the
/// choice to LLVM; `Disable` (`unroll(none)`) keeps the loop rolled; `Full` (`unroll(full)`)
/// unrolls it completely where its trip count is known when compiling; `Count` (`unroll(N)`)
/// unrolls by N, 2 to kMaxCount, with a remainder loop where N does not divide the trip count.
struct Unroll {
    enum class Kind : uint8_t { Default, Disable, Full, Count };
    static constexpr uint32_t kMaxCount = 1024;
    Kind kind = Kind::Default;
    uint32_t count = 0; ///< Count only
    static Unroll none() { return {Kind::Disable, 0}; }
    static Unroll full() { return {Kind::Full, 0}; }
    static Unroll by(uint32_t n) { return {Kind::Count, n}; }
    bool operator==(const Unroll &) const = default;
    /// "" (Default), "unroll(none)", "unroll(full)", "unroll(4)".
    std::string to_string() const;
};

/// `for var = begin to end step step [unroll(...)] { body }`: var is a LoopIndex of the integer
/// type shared by begin, end and step.
struct For final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::For;
    VariableRef var;
    Expr begin, end, step;
    Stmt body;
    Unroll unroll;
    static Stmt make(VariableRef var, Expr begin, Expr end, Expr step, Stmt body,
                     Unroll unroll = {});

private:
    For(VariableRef v, Expr b, Expr e, Expr s, Stmt body_, Unroll u)
        : StmtNode(static_kind), var(std::move(v)), begin(std::move(b)), end(std::move(e)),
          step(std::move(s)), body(std::move(body_)), unroll(u) {}
};

/// `while cond { body }`, cond re-evaluated before every iteration.
struct While final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::While;
    Expr cond;
    Stmt body;
    static Stmt make(Expr cond, Stmt body);

private:
    While(Expr c, Stmt b) : StmtNode(static_kind), cond(std::move(c)), body(std::move(b)) {}
};

struct Break final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Break;
    static Stmt make();

private:
    Break() : StmtNode(static_kind) {}
};

struct Continue final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Continue;
    static Stmt make();

private:
    Continue() : StmtNode(static_kind) {}
};

/// Which threads a Barrier waits for: the block's, or every thread of every block of the
/// cluster ([Note] IR semantics: Clusters).
enum class BarrierScope : uint8_t { Block, Cluster };

/// Waits for all threads of the block (`barrier`), or of the cluster (`cluster_barrier`).
struct Barrier final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Barrier;
    BarrierScope scope;
    static Stmt make(BarrierScope scope = BarrierScope::Block);

private:
    explicit Barrier(BarrierScope s) : StmtNode(static_kind), scope(s) {}
};

/// One item of a Print: a scalar value, or literal text when `value` is null.
struct PrintItem {
    Expr value;
    std::string text;
    bool is_text() const { return !value; }
};

/// `print(items...; sep, end)`, as Mojo's print.
struct Print final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Print;
    std::vector<PrintItem> items;
    std::string sep, end;
    static Stmt make(std::vector<PrintItem> items, std::string sep = " ", std::string end = "\n");

private:
    Print(std::vector<PrintItem> i, std::string s, std::string e)
        : StmtNode(static_kind), items(std::move(i)), sep(std::move(s)), end(std::move(e)) {}
};


/// A memory fence of one scope (see [Note] IR semantics).
struct Fence final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Fence;
    FenceScope scope;
    static Stmt make(FenceScope scope);

private:
    explicit Fence(FenceScope s) : StmtNode(static_kind), scope(s) {}
};

/// `async_copy.N(dst[dst_index], src[src_index])` or, with `valid`, `async_copy.N(dst[dst_index],
/// src[src_index], valid)`: starts copying N elements from global to shared memory (see
/// [Note] IR semantics: Asynchronous copies).
struct AsyncCopy final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::AsyncCopy;
    Expr dst, dst_index; ///< a ptr<shared T> and an integer
    Expr src, src_index; ///< a ptr<global T> (or const T) and an integer
    Expr valid;          ///< bool, or null for always
    uint32_t count;      ///< elements: count * sizeof(T) is 4, 8 or 16
    static Stmt make(Expr dst, Expr dst_index, Expr src, Expr src_index, uint32_t count,
                     Expr valid = Expr());
    /// count * sizeof(T).
    uint32_t bytes() const;
    /// What is wrong with copying `count` elements of type `element` ("" when nothing).
    static std::string problem(Type element, uint32_t count);

private:
    AsyncCopy(Expr d, Expr di, Expr s, Expr si, uint32_t n, Expr v)
        : StmtNode(static_kind), dst(std::move(d)), dst_index(std::move(di)), src(std::move(s)),
          src_index(std::move(si)), valid(std::move(v)), count(n) {}
};

/// `async_commit` (wait < 0) or `async_wait(n)`: closes this thread's group of asynchronous copies,
/// or waits until at most n groups are in flight (see [Note] IR semantics: Asynchronous copies).
struct AsyncGroup final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::AsyncGroup;
    static constexpr int32_t kMaxPending = 7; ///< the largest n of async_wait(n)
    int32_t wait;                             ///< -1: commit; 0 to kMaxPending: wait
    bool is_commit() const { return wait < 0; }
    static Stmt commit();
    static Stmt wait_for(int32_t pending);

private:
    explicit AsyncGroup(int32_t w) : StmtNode(static_kind), wait(w) {}
};

/// `wgmma.m64n<N>k16.<input>(a[i], b[j]; acc...)`: a warpgroup's (four warps', 128 threads')
/// asynchronous matrix multiply-accumulate, D (64 x N, f32) += A (64 x 16) * B (16 x N), with A
/// and B read from shared memory in the 128-byte swizzled K-major layout (or B MN-major, `b[j]
/// mn S`: rows of 64 of its N columns, groups of 64 columns S bytes apart) and D held in the
/// warpgroup's registers as N / 8 f32x4 variables per thread `acc`, each an m16n8 accumulator
/// fragment ([Note] IR semantics: Warpgroup matrix multiply-accumulate). NVIDIA sm_90a.
struct Wgmma final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Wgmma;
    MmaInput input;               ///< f16 or bf16
    uint16_t n;                   ///< 8 to 256, a multiple of 8
    Expr a, a_index, b, b_index;  ///< ptr<shared T> (T f16 or bf16) and integers
    std::vector<VariableRef> acc; ///< n / 8 mutable f32x4 variables
    /// 0: B is K-major; else B is MN-major and this is the bytes between its groups of 64
    /// columns (a multiple of 1024).
    uint32_t b_mn_stride = 0;
    static Stmt make(MmaInput input, unsigned n, Expr a, Expr a_index, Expr b, Expr b_index,
                     std::vector<VariableRef> acc, uint32_t b_mn_stride = 0);
    /// What is wrong with a wgmma of these operands ("" when nothing).
    static std::string problem(MmaInput input, unsigned n, Type a, Type b,
                               const std::vector<VariableRef> &acc);

private:
    Wgmma(MmaInput in, unsigned n_, Expr a_, Expr ai, Expr b_, Expr bi,
          std::vector<VariableRef> acc_, uint32_t mn)
        : StmtNode(static_kind), input(in), n(static_cast<uint16_t>(n_)), a(std::move(a_)),
          a_index(std::move(ai)), b(std::move(b_)), b_index(std::move(bi)), acc(std::move(acc_)),
          b_mn_stride(mn) {}
};

/// The orderings of the asynchronous tensor-core operations ([Note] IR semantics: Warpgroup
/// matrix multiply-accumulate):
/// * `wgmma.fence(acc...)`: before the first wgmma, and between writing the accumulators (or the
///   shared memory a wgmma reads) by other means and a wgmma;
/// * `wgmma.commit`: closes the warpgroup's group of wgmmas issued since the last commit;
/// * `wgmma.wait(n; acc...)`: waits until at most n groups are in flight; the accumulators listed
///   are the ones the code reads or writes after it;
/// * `fence.proxy.async`: orders this thread's shared-memory writes before later asynchronous
///   reads of it (wgmma, tma) and asynchronous writes before its later reads.
enum class TensorSyncKind : uint8_t { WgmmaFence, WgmmaCommit, WgmmaWait, ProxyFence };
struct TensorSync final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::TensorSync;
    static constexpr int32_t kMaxPending = 7; ///< the largest n of wgmma.wait(n)
    TensorSyncKind sync;
    int32_t pending;              ///< WgmmaWait: the groups left in flight
    std::vector<VariableRef> acc; ///< WgmmaFence, WgmmaWait: the accumulators ordered
    static Stmt make(TensorSyncKind sync, int32_t pending = 0, std::vector<VariableRef> acc = {});

private:
    TensorSync(TensorSyncKind k, int32_t p, std::vector<VariableRef> a)
        : StmtNode(static_kind), sync(k), pending(p), acc(std::move(a)) {}
};

/// A memory barrier object of shared memory (a u64): `mbarrier.init(bar[i], count)` (expects
/// `count` arrivals per phase), `mbarrier.arrive(bar[i])`, `mbarrier.expect_tx(bar[i], bytes)`
/// (arrives, and the phase also waits for `bytes` of asynchronous copies), `mbarrier.wait(bar[i],
/// parity)` (waits until the phase of that parity has completed) ([Note] IR semantics: Memory
/// barriers and the tensor memory accelerator). NVIDIA sm_90; the CPU device.
/// ArriveCluster arrives on the mbarrier at the same shared-memory offset in block `value` (its
/// rank) of the cluster ([Note] IR semantics: Clusters).
enum class MBarrierOp : uint8_t { Init, Arrive, ExpectTx, Wait, ArriveCluster };
std::string_view to_string(MBarrierOp op); // "init", "arrive", ..., "arrive_cluster"
std::optional<MBarrierOp> parse_mbarrier_op(std::string_view s);
struct MBarrier final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::MBarrier;
    MBarrierOp op;
    Expr ptr, index; ///< ptr<shared u64> and an integer
    Expr value; ///< Init: count; ExpectTx: bytes; Wait: parity; ArriveCluster: rank (integers);
                ///< Arrive: null
    static Stmt make(MBarrierOp op, Expr ptr, Expr index, Expr value = Expr());

private:
    MBarrier(MBarrierOp o, Expr p, Expr i, Expr v)
        : StmtNode(static_kind), op(o), ptr(std::move(p)), index(std::move(i)),
          value(std::move(v)) {}
};

/// `tma_load(dst[i], map, x, y, bar[j])`: starts the tensor memory accelerator's copy of the box
/// of the 2-D tensor map `map` (a ptr<global const u64> to its 128 bytes) whose first element is
/// column x, row y, to shared memory at dst[i]; the copy's bytes complete on the memory barrier
/// bar[j] ([Note] IR semantics: Memory barriers and the tensor memory accelerator). With
/// `multicast` (`tma_load(..., bar[j], multicast mask)`), the box lands at the same offset in the
/// shared memory of every block of the cluster whose rank is a set bit of the mask, and its bytes
/// complete on each one's mbarrier at bar[j]'s offset ([Note] IR semantics: Clusters).
struct TmaLoad final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::TmaLoad;
    Expr dst, dst_index; ///< ptr<shared T> and an integer
    Expr map;            ///< ptr<global const u64>
    Expr x, y;           ///< integers: column and row of the box's first element
    Expr bar, bar_index; ///< ptr<shared u64> and an integer
    Expr multicast;      ///< null, or an integer: the mask of the cluster's blocks
    static Stmt make(Expr dst, Expr dst_index, Expr map, Expr x, Expr y, Expr bar, Expr bar_index,
                     Expr multicast = Expr());

private:
    TmaLoad(Expr d, Expr di, Expr m, Expr x_, Expr y_, Expr b, Expr bi, Expr mc)
        : StmtNode(static_kind), dst(std::move(d)), dst_index(std::move(di)), map(std::move(m)),
          x(std::move(x_)), y(std::move(y_)), bar(std::move(b)), bar_index(std::move(bi)),
          multicast(std::move(mc)) {}
};

/// Ends the kernel for this thread, or the device function call (with `value`, null for none).
struct Return final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Return;
    Expr value;
    static Stmt make(Expr value = Expr());

private:
    explicit Return(Expr v) : StmtNode(static_kind), value(std::move(v)) {}
};

/// Evaluates `value` for its effect and drops the result: the call of a void device function.
struct Evaluate final : StmtNode {
    static constexpr NodeKind static_kind = NodeKind::Evaluate;
    Expr value;
    static Stmt make(Expr value);

private:
    explicit Evaluate(Expr v) : StmtNode(static_kind), value(std::move(v)) {}
};

// ---------------------------------------------------------------------------------------------
// Kernels and modules.

/// A kernel: an entry point with typed parameters (VarKind::Param) and a body (a Block).
/// What a kernel promises about its launches and asks of register allocation, as CUDA's
/// `__launch_bounds__(max_threads, min_blocks)` and `__maxnreg__(max_registers)`
/// ([Note] IR semantics: Launch bounds). 0 is "not said".
struct LaunchBounds {
    static constexpr uint32_t kMaxThreads = 1024;
    static constexpr uint32_t kMaxBlocks = 32;
    static constexpr uint32_t kMinRegisters = 16, kMaxRegisters = 255;
    uint32_t max_threads = 0; ///< most threads per block of any launch, 1 to 1024
    uint32_t min_blocks = 0; ///< blocks per multiprocessor to allow for, 1 to 32; needs max_threads
    uint32_t max_registers = 0; ///< registers per thread at most, 16 to 255
    bool empty() const { return max_threads == 0 && min_blocks == 0 && max_registers == 0; }
    bool operator==(const LaunchBounds &) const = default;
    /// What is wrong with these bounds ("" when nothing): a value out of its range, or min_blocks
    /// without max_threads.
    std::string problem() const;
    /// " max_threads(256) min_blocks(2) max_registers(128)", each only when said; "" when empty.
    std::string to_string() const;
};

/// Whether a kernel's float multiplies and adds may fuse into fma ([Note] IR semantics:
/// Contraction).
enum class FpContract : uint8_t { Off, Fast };
std::string_view to_string(FpContract c); // "off", "fast"
std::optional<FpContract> parse_fp_contract(std::string_view s);

struct Kernel {
    std::string name;
    std::vector<VariableRef> params;
    Stmt body;
    LaunchBounds bounds;
    FpContract contract = FpContract::Off;
    Kernel() = default;
    Kernel(std::string n, std::vector<VariableRef> p, Stmt b, LaunchBounds lb = {},
           FpContract c = FpContract::Off)
        : name(std::move(n)), params(std::move(p)), body(std::move(b)), bounds(lb), contract(c) {}
};

/// What the parser returns and `ember-compile` consumes: device functions and kernels.
struct Module {
    std::vector<FunctionRef> functions;
    std::vector<Kernel> kernels;
};

/// The device functions `body` calls, directly or through other functions, each once, callees
/// before their callers (the order in which they print and are defined).
std::vector<FunctionRef> called_functions(const Stmt &body);
/// Whether `f` or a function it calls contains a barrier.
bool uses_barrier(const Function &f);

/// The static shared memory `k` declares: its arrays one after the other in statement order, each
/// at a 16-byte aligned offset (the layout every target uses).
uint64_t static_shared_bytes(const Kernel &k);
/// Whether `k` uses dynamic shared memory.
bool uses_dynamic_shared(const Kernel &k);

/// One constant array of a kernel, as the runtime sees it: the module global's name, its element
/// type, element count and size in bytes.
struct ConstantGlobal {
    std::string name;
    ScalarType element;
    uint64_t count;
    uint64_t bytes;
};
/// The constant arrays `k` declares, in statement order.
std::vector<ConstantGlobal> constant_globals(const Kernel &k);

// ---------------------------------------------------------------------------------------------
// Traversal.

/// Read-only visitor; the default for each node visits its children in evaluation order.
class IRVisitor {
public:
    virtual ~IRVisitor() = default;
    void visit(const Expr &e);
    void visit(const Stmt &s);
#define EMBER_IR_EXPR(Name) virtual void visit(const Name *op);
#define EMBER_IR_STMT(Name) virtual void visit(const Name *op);
#include "ember/compiler/IRNodes.def"
};

/// Rebuilding visitor: returns the original node when no child changed (so untouched subtrees are
/// shared), and a new node otherwise.
class IRMutator {
public:
    virtual ~IRMutator() = default;
    Expr mutate(const Expr &e);
    Stmt mutate(const Stmt &s);

protected:
#define EMBER_IR_EXPR(Name) virtual Expr visit(const Name *op);
#define EMBER_IR_STMT(Name) virtual Stmt visit(const Name *op);
#include "ember/compiler/IRNodes.def"
};

} // namespace ember::ir

#endif // EMBER_COMPILER_IR_H
