/// \file
/// The operations of a CPU device graph, replayed.
#include "cpu/CpuGraph.h"

#include <cstring>
#include <iterator>

namespace ember::detail {

void CpuGraphOp::set_arguments(void **args, const uint32_t *arg_sizes, size_t n) {
    offsets.resize(n);
    sizes.resize(n);
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
        offsets[i] = at;
        sizes[i] = arg_sizes[i];
        at += (arg_sizes[i] + 15) / 16 * 16;
    }
    storage.assign(at / 16, Chunk{});
    for (size_t i = 0; i < n; ++i)
        std::memcpy(reinterpret_cast<unsigned char *>(storage.data()) + offsets[i], args[i], sizes[i]);
}
void CpuGraphOp::run() {
    switch (kind) {
    case Kind::Copy:
        std::memmove(dst, src, bytes);
        return;
    case Kind::Memset:
        cpu_memset(dst, pattern, width, bytes);
        return;
    case Kind::Wait:
        event->synchronize();
        return;
    case Kind::Launch: {
        // The pointers go to this op's own storage (a copy of the op has its own).
        void *small[33];
        std::vector<void *> large;
        void **args = small;
        if (offsets.size() + 1 > std::size(small)) {
            large.resize(offsets.size() + 1);
            args = large.data();
        }
        for (size_t i = 0; i < offsets.size(); ++i)
            args[i] = reinterpret_cast<unsigned char *>(storage.data()) + offsets[i];
        args[offsets.size()] = nullptr;
        run_cpu_kernel(*function, kernel_name, dims, args);
        return;
    }
    }
}

} // namespace ember::detail
