/// \file
/// A program of a project that uses ember, built by test/downstream/run.sh three ways (an
/// installed ember through find_package and through pkg-config, and ember as a FetchContent
/// subproject): c = a + b on the device DeviceContext() picks (EMBER_API=cpu in the tests),
/// checked element by element against the host. Exit code 1 on any mismatch or error.
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

static const auto vector_add = kernel("downstream_vector_add", {"a", "b", "c", "n"},
                                      [](Ptr<float> a, Ptr<float> b, Ptr<float> c, Int n) {
                                          auto i = global_idx.x;
                                          if_(i < n, [&] { c[i] = a[i] + b[i]; });
                                      });

int main() try {
    // The headers this program was compiled with and the libraries it loaded are one version.
    if (ember_version() != version_string) {
        std::cerr << "downstream: headers of ember " << version_string << ", libraries of ember "
                  << ember_version() << "\n";
        return 1;
    }
    DeviceContext ctx;
    // Not a multiple of the block: the last block's threads past n must not write.
    const int64_t n = 100003;
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (int64_t i = 0; i < n; ++i) {
        a[i] = float(i) * 0.25f;
        b[i] = float(n - i) - 0.5f;
    }
    auto da = ctx.enqueue_create_buffer<float>(n);
    auto db = ctx.enqueue_create_buffer<float>(n);
    auto dc = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    ctx.enqueue_function(vector_add, da, db, dc, n, grid_dim((n + 255) / 256), block_dim(256));
    ctx.enqueue_copy(c.data(), dc);
    ctx.synchronize();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float expected = a[i] + b[i];
        if (c[i] != expected) {
            if (wrong < 5)
                std::cerr << "downstream: c[" << i << "] = " << c[i] << ", expected " << expected
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
