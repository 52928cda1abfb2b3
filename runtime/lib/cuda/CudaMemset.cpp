/// \file
/// The plan of a CUDA memset: see [Note] Memset widths in CudaMemset.h.
#include "cuda/CudaMemset.h"

#include <algorithm>

namespace ember::detail {

std::vector<MemsetStep> plan_memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) {
    std::vector<MemsetStep> steps;
    if (count == 0) return steps;
    if (width < 8) pattern &= (uint64_t(1) << (width * 8)) - 1;
    while (width > 1) {
        const unsigned half = width / 2;
        const uint64_t mask = (uint64_t(1) << (half * 8)) - 1;
        if ((pattern & mask) != ((pattern >> (half * 8)) & mask)) break;
        pattern &= mask;
        width = half;
        count *= 2;
    }
    if (width == 1) {
        steps.push_back({MemsetStep::D8, dst, pattern, count});
        return steps;
    }
    if (width == 2 && dst % 2 == 0) {
        steps.push_back({MemsetStep::D16, dst, pattern, count});
        return steps;
    }
    if (width == 4 && dst % 4 == 0) {
        steps.push_back({MemsetStep::D32, dst, pattern, count});
        return steps;
    }
    for (unsigned b = 0; b < width; ++b) steps.push_back({MemsetStep::D8, dst + b, (pattern >> (8 * b)) & 0xff, 1});
    const size_t total = count * width;
    for (size_t done = width; done < total;) {
        const size_t n = std::min(done, total - done);
        steps.push_back({MemsetStep::DtoD, dst + done, dst, n});
        done += n;
    }
    return steps;
}

} // namespace ember::detail
