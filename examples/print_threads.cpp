/// \file
/// The seed's print_threads: every thread of a 2x2x1 grid of 4x4x2 blocks prints its block index,
/// thread index, global index and the global index computed from the others. Runs on the default
/// device (`EMBER_API=cuda|cpu`); the rows come in an order that depends on the device.
#include "ember/ember.h"

#include <iostream>

using namespace ember;

static const auto print_threads = kernel("print_threads", [] {
    print(block_idx.x, block_idx.y, block_idx.z, thread_idx.x, thread_idx.y, thread_idx.z,
          global_idx.x, global_idx.y, global_idx.z, block_dim.x * block_idx.x + thread_idx.x,
          block_dim.y * block_idx.y + thread_idx.y, block_dim.z * block_idx.z + thread_idx.z,
          sep("\t"));
});

int main() try {
    DeviceContext ctx;
    std::cout << "block_idx\t\tthread_idx\t\tglobal_idx\t\tcalculated global_idx\n";
    std::cout << "x\ty\tz\tx\ty\tz\tx\ty\tz\tx\ty\tz\n";
    const std::string dashes(20, '-');
    std::cout << dashes << '\t' << dashes << '\t' << dashes << '\t' << dashes << std::endl;
    ctx.enqueue_function(print_threads, grid_dim(2, 2, 1), block_dim(4, 4, 2));
    ctx.synchronize();
    std::cout << "Done\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "print_threads: " << e.what() << "\n";
    return 1;
}
