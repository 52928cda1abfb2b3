/// \file
/// The seed's scalar_add: add a scalar to every element of a vector, on the default device
/// (`EMBER_API=cuda|cpu` chooses; otherwise the first GPU, else the CPU device).
#include "ember/ember.h"

#include <cstdint>
#include <iostream>
#include <numeric>

using namespace ember;

constexpr int64_t num_elements = 20;

// Kernel function to add a scalar to all elements of a vector, in place. Each thread processes
// one element: idx = block_idx.x * block_dim.x + thread_idx.x.
static const auto scalar_add = kernel(
    "scalar_add", {"vector", "size", "scalar"}, [](Ptr<float> vector, Int size, Float32 scalar) {
        auto idx = block_idx.x * block_dim.x + thread_idx.x;
        // Bounds check: the grid may have more threads than the vector has elements.
        if_(idx < size, [&] { vector[idx] += scalar; });
    });

int main() try {
    // Initialize a context for device 0 of the default api.
    DeviceContext ctx;

    // A buffer in host memory for the input data; wait for its creation.
    auto host_buffer = ctx.enqueue_create_host_buffer<float>(num_elements);
    ctx.synchronize();

    // Fill it with 0, 1, 2, ..., size-1.
    std::iota(host_buffer.begin(), host_buffer.end(), 0.0f);
    std::cout << "Original host buffer: " << host_buffer << "\n";

    // A buffer in device memory, filled from the host buffer.
    auto device_buffer = ctx.enqueue_create_buffer<float>(num_elements);
    ctx.enqueue_copy(device_buffer, host_buffer);

    // Compile the kernel for this device, then launch one block of num_elements threads.
    auto scalar_add_kernel = ctx.compile_function(scalar_add);
    ctx.enqueue_function(scalar_add_kernel, device_buffer, num_elements, 20.0f, grid_dim(1),
                         block_dim(num_elements));

    // Copy the results back and wait for everything to finish.
    ctx.enqueue_copy(host_buffer, device_buffer);
    ctx.synchronize();

    std::cout << "Modified host buffer: " << host_buffer << "\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "scalar_add: " << e.what() << "\n";
    return 1;
}
