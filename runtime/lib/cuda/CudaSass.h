/// \file
/// The CUDA toolkit's disassemblers, for EMBER_DUMP=sass (CudaSass.cpp).
#ifndef EMBER_RUNTIME_CUDA_CUDASASS_H
#define EMBER_RUNTIME_CUDA_CUDASASS_H

#include <optional>
#include <string>

namespace ember::detail {

/// The path of the CUDA toolkit's program `name` (e.g. "cuobjdump"): the first executable found
/// on the PATH, then in $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin.
std::optional<std::string> find_cuda_tool(const std::string &name);

/// The SASS of `cubin`, from `cuobjdump -sass` or else `nvdisasm -c`; nullopt with `why` set when
/// neither is installed or the tool fails (its exit status and stderr).
std::optional<std::string> disassemble_cubin(const std::string &cubin, std::string &why);

} // namespace ember::detail

#endif // EMBER_RUNTIME_CUDA_CUDASASS_H
