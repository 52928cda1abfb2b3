/// \file
/// CompileReport: what compiling one kernel for one target produced and cost.
///
/// [Note] Compile reports
/// ======================
/// `DeviceFunction::report()` answers, per kernel and target: the resources the loaded code uses
/// (registers, spill bytes, static shared / local / constant bytes, max threads per block) and
/// the wall time of each stage (trace, lower, optimise, codegen, load). `EMBER_LOG=compile` prints
/// `to_string(report)` after every compile. Where the numbers come from:
///  - CUDA: registers, shared, local, constant and max threads per block from cuFuncGetAttribute;
///    spill stores/loads and the stack frame from the JIT's verbose info log ("ptxas info : Used
///    N registers, ..." / "N bytes stack frame, N bytes spill stores, N bytes spill loads"),
///    parsed by `parse_ptxas_info`. A module loaded from a cached cubin has no JIT log: spills are
///    then unknown (-1).
///  - CPU: registers and spills are not meaningful (host code keeps values in the host's
///    registers and stack, chosen by LLVM's x86/AArch64 back end) and are reported as -1 ("n/a");
///    local bytes are CompiledKernel::local_bytes, shared bytes the static shared arrays, constant
///    bytes the sum of the kernel's constant arrays.
/// A stage that did not run (e.g. trace for a kernel of an external ember-IR module, or every
/// compile stage for a kernel loaded from a cache) reports 0 seconds.
#ifndef EMBER_RUNTIME_COMPILEREPORT_H
#define EMBER_RUNTIME_COMPILEREPORT_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

struct CompileReport {
    /// The kernel's name and the target it was compiled for ("nvptx:sm_90", "cpu:x86_64").
    std::string kernel;
    std::string target;
    /// Where the code came from: "compiled" (this process ran the compiler); the compile cache
    /// sets other levels (e.g. "memory", "disk") for hits.
    std::string cache_level = "compiled";

    /// Registers per thread; -1 when not known (the CPU device).
    int registers = -1;
    /// Bytes spilled to local memory per thread by ptxas (stores, loads) and its stack frame;
    /// -1 when not known (CPU device, or code loaded without a JIT log).
    int64_t spill_store_bytes = -1;
    int64_t spill_load_bytes = -1;
    int64_t stack_frame_bytes = -1;
    /// Static shared memory per block, local memory per thread, constant memory of the kernel.
    uint64_t shared_bytes = 0;
    uint64_t local_bytes = 0;
    uint64_t const_bytes = 0;
    /// Most threads a block of this kernel may have on this device.
    int max_threads_per_block = 0;
    /// What the PTX JIT said of lost speed, e.g. "Potential Performance Loss: wgmma.mma_async
    /// instructions are serialized due to the presence of Extern calls in the function 'k'";
    /// empty when it said nothing (and on other devices).
    std::vector<std::string> ptxas_warnings;

    /// Wall time of each stage, in seconds.
    double trace_seconds = 0;
    double lower_seconds = 0;
    double optimize_seconds = 0;
    double codegen_seconds = 0;
    /// Loading the code: the PTX JIT (cuModuleLoadDataEx) on CUDA, ORC linking on the CPU.
    double load_seconds = 0;

    /// The sum of the stage times.
    double total_seconds() const {
        return trace_seconds + lower_seconds + optimize_seconds + codegen_seconds + load_seconds;
    }
};

/// One line, e.g. "kernel 'saxpy' nvptx:sm_90 (compiled): 16 registers, spill stores 0 B, spill
/// loads 0 B, stack frame 0 B, shared 0 B, local 0 B, const 0 B, max 1024 threads/block; trace
/// 0.05 ms, lower 0.3 ms, optimise 1.2 ms, codegen 0.8 ms, load 58 ms, total 60.3 ms". Unknown
/// values print "n/a" (the stack frame is left out when unknown); the JIT's warnings follow
/// ("; ptxas: ...").
std::string to_string(const CompileReport &r);

/// What ptxas's verbose info log says of one kernel. Fields stay -1 when the log does not say.
struct PtxasInfo {
    int registers = -1;
    int64_t stack_frame_bytes = -1;
    int64_t spill_store_bytes = -1;
    int64_t spill_load_bytes = -1;
    /// The "Potential Performance Loss" lines about the kernel, without ptxas's prefix.
    std::vector<std::string> performance_warnings;
};
/// Parses the info log of the PTX JIT (CU_JIT_INFO_LOG_BUFFER with CU_JIT_LOG_VERBOSE) or of
/// ptxas -v for `kernel`: the "Compiling entry function 'kernel'" / "Function properties for
/// kernel" blocks. When `kernel` is empty, or the log names no function, the first figures found
/// are taken.
PtxasInfo parse_ptxas_info(std::string_view log, std::string_view kernel = {});

} // namespace ember

#endif // EMBER_RUNTIME_COMPILEREPORT_H
