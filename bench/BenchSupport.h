/// \file
/// What several benchmarks share: the median of timings, and the CUDA toolkit's nvcc for the
/// twins some of them compile when they run (the library itself never uses nvcc).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace ember::bench {

/// The median (the mean of the middle two for an even count; 0 for none).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/// nvcc in PATH, else /usr/local/cuda/bin/nvcc; "" when neither exists.
inline std::string find_nvcc() {
    if (const char *path = std::getenv("PATH")) {
        std::stringstream dirs(path);
        for (std::string d; std::getline(dirs, d, ':');)
            if (!d.empty() && std::filesystem::exists(d + "/nvcc")) return d + "/nvcc";
    }
    return std::filesystem::exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "";
}

} // namespace ember::bench
