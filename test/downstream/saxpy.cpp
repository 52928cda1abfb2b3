/// \file
/// A program of a project that uses ember, built by test/downstream/run.sh three ways (an
/// installed ember through find_package and through pkg-config, and ember as a FetchContent
/// subproject): y = alpha * x + y on the device DeviceContext() picks (EMBER_API=cpu in the
/// tests), checked element by element against the host. Exit code 1 on any mismatch or error.
#include "ember/ember.h"

#include "ember/compiler/CacheSupport.h"

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

// The consumer projects set no C++ standard and g++ defaults to C++17: ember::ember (or ember.pc's
// Cflags) must bring C++20.
static_assert(__cplusplus >= 202002L, "ember::ember must bring C++20");

using namespace ember;

// A buffer read, one read and written, and a scalar: the argument kinds a consumer passes.
static const auto saxpy = kernel("downstream_saxpy", {"alpha", "x", "y", "n"},
                                 [](Float32 alpha, Ptr<float> x, Ptr<float> y, Int n) {
                                     auto i = global_idx.x;
                                     if_(i < n, [&] { y[i] = alpha * x[i] + y[i]; });
                                 });

int main() try {
    // The headers this program was compiled with and the libraries it loaded are one version.
    if (ember_version() != version_string) {
        std::cerr << "downstream: headers of ember " << version_string << ", libraries of ember "
                  << ember_version() << "\n";
        return 1;
    }
    DeviceContext ctx;
    // Not a multiple of the block: the last block's threads past n must not write. alpha is a
    // power of two and the values quarters below 2^17, so every result is exact, fused or not.
    const int64_t n = 100003;
    const float alpha = 2.0f;
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i) {
        x[i] = float(i) * 0.25f;
        y[i] = float(n - i) - 0.5f;
    }
    auto dx = ctx.enqueue_create_buffer<float>(n);
    auto dy = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(dx, x.data());
    ctx.enqueue_copy(dy, y.data());
    ctx.enqueue_function(saxpy, alpha, dx, dy, n, grid_dim((n + 255) / 256), block_dim(256));
    std::vector<float> out(n, -1.0f);
    ctx.enqueue_copy(out.data(), dy);
    ctx.synchronize();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float expected = alpha * x[i] + y[i];
        if (out[i] != expected) {
            if (wrong < 5)
                std::cerr << "downstream: y[" << i << "] = " << out[i] << ", expected " << expected
                          << "\n";
            ++wrong;
        }
    }
    if (wrong != 0) {
        std::cerr << "downstream: " << wrong << " of " << n << " elements wrong\n";
        return 1;
    }
    std::cout << "downstream: ember " << version_string << ", " << n << " elements on "
              << ctx.name() << " (" << ctx.api() << "): OK\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "downstream: " << e.what() << "\n";
    return 1;
}
