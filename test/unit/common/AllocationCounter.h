/// \file
/// Counts calls of the global operator new, for tests of paths that must not allocate. The test
/// program that links AllocationCounter.cpp replaces operator new and delete (malloc and free
/// underneath); they count only while a window is open.
#ifndef EMBER_TEST_UNIT_COMMON_ALLOCATIONCOUNTER_H
#define EMBER_TEST_UNIT_COMMON_ALLOCATIONCOUNTER_H

namespace ember::testing {

void start_counting_allocations();
/// The allocations since start_counting_allocations (every thread's); stops counting.
long stop_counting_allocations();

/// The allocations `body` makes.
template <class F> long allocations_in(F &&body) {
    start_counting_allocations();
    body();
    return stop_counting_allocations();
}

} // namespace ember::testing

#endif // EMBER_TEST_UNIT_COMMON_ALLOCATIONCOUNTER_H
