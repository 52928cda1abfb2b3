/// \file
/// The replaced global operator new and delete of ember-runtime-tests (AllocationCounter.h). In a
/// file of their own, with no new or delete expression, so that no caller inlines them.
#include "AllocationCounter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
} // namespace

void *operator new(std::size_t bytes) {
    if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(bytes ? bytes : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace ember::testing {

void start_counting_allocations() {
    allocations.store(0);
    counting.store(true);
}

long stop_counting_allocations() {
    counting.store(false);
    return allocations.load();
}

} // namespace ember::testing
