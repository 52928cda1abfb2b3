/// \file
/// c = a + b over a million floats on the default device, checked against the host.
#include "ember/ember.h"

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ember;

static const auto vector_add = kernel("vector_add", {"a", "b", "c", "n"},
                                      [](Ptr<float> a, Ptr<float> b, Ptr<float> c, Int n) {
                                          auto i = global_idx.x;
                                          if_(i < n, [&] { c[i] = a[i] + b[i]; });
                                      });

int main() try {
    DeviceContext ctx;
    const int64_t n = 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    for (int64_t i = 0; i < n; ++i) {
        a[i] = float(i) * 0.5f;
        b[i] = float(n - i);
    }
    auto da = ctx.enqueue_create_buffer<float>(n);
    auto db = ctx.enqueue_create_buffer<float>(n);
    auto dc = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    ctx.enqueue_function(vector_add, da, db, dc, n, grid_dim((n + 255) / 256), block_dim(256));
    ctx.enqueue_copy(c.data(), dc);
    ctx.synchronize();
    for (int64_t i = 0; i < n; ++i) {
        if (c[i] != a[i] + b[i]) {
            std::cerr << "vector_add: c[" << i << "] = " << c[i] << ", expected " << a[i] + b[i] << "\n";
            return 1;
        }
    }
    std::cout << "vector_add: " << n << " elements on " << ctx.name() << " (" << ctx.api() << "): OK\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "vector_add: " << e.what() << "\n";
    return 1;
}
