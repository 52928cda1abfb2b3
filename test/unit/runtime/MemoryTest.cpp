/// \file
/// Memory on every api: create_buffer_sync, memset of every element width (8-byte patterns
/// whose halves differ included) and PyCUDA's memset_d8/d16/d32, sub-buffers (bounds,
/// alignment, lifetime, passed to kernels), map_to_host write-back, malloc_host/free_host,
/// managed and mapped host memory read and written by kernels, registered host memory, Mojo's
/// copy names and their _sync variants, and the errors of misuse. CUDA cases skip with a message
/// where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"
#include "ExpectError.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ember;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

using ember::testing::expect_logic_error;

const auto add_f32 = kernel("mem_add_f32", {"v", "n", "x"}, [](Ptr<float> v, Int n, Float32 x) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += x; });
});

const auto iota_i32 = kernel("mem_iota_i32", {"v", "n", "base"}, [](Ptr<int32_t> v, Int n, Int32 base) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] = base + cast<int32_t>(i); });
});

const auto copy_f32 = kernel("mem_copy_f32", {"dst", "src", "n"}, [](Ptr<float> dst, Ptr<const float> src, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { dst[i] = src[i] * 2.0f; });
});

struct Rgba {
    uint8_t r, g, b, a;
};
static_assert(sizeof(Rgba) == 4 && alignof(Rgba) == 1);
struct Pair {
    float x, y;
};

class MemoryTest : public ember::testing::DeviceTest {
protected:
    template <class T> std::vector<T> read(const DeviceBuffer<T> &b) {
        std::vector<T> out(b.size());
        ctx().enqueue_copy(out.data(), b);
        ctx().synchronize();
        return out;
    }
    template <class T> std::vector<uint8_t> bytes_of(const DeviceBuffer<T> &b) {
        std::vector<T> v = read(b);
        std::vector<uint8_t> out(b.bytes());
        std::memcpy(out.data(), v.data(), out.size());
        return out;
    }
    /// Sets every element of a fresh buffer of n elements to `value` and checks each byte.
    template <class T> void check_memset(size_t n, const T &value) {
        auto b = ctx().enqueue_create_buffer<T>(n);
        ctx().enqueue_memset(b, value);
        std::vector<uint8_t> got = bytes_of(b);
        unsigned char want[sizeof(T)];
        std::memcpy(want, &value, sizeof(T));
        for (size_t i = 0; i < got.size(); ++i)
            if (got[i] != want[i % sizeof(T)]) {
                ADD_FAILURE() << sizeof(T) << "-byte memset of " << n << " elements: byte " << i << " is "
                              << int(got[i]) << ", want " << int(want[i % sizeof(T)]);
                return;
            }
    }
};

TEST_P(MemoryTest, CreateBufferSync) {
    auto b = ctx().create_buffer_sync<float>(1000);
    EXPECT_EQ(b.size(), 1000u);
    std::vector<float> in(1000);
    std::iota(in.begin(), in.end(), 0.0f);
    ctx().copy_to_device_sync(b, in.data());
    EXPECT_EQ(read(b), in);
}

TEST_P(MemoryTest, MemsetEveryWidth) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{4097}}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        check_memset<uint8_t>(n, 0xab);
        check_memset<int8_t>(n, -3);
        check_memset<int16_t>(n, int16_t(-2));
        check_memset<uint16_t>(n, 0x1234);
        check_memset<half>(n, half(1.5f));
        check_memset<uint32_t>(n, 0xdeadbeefu);
        check_memset<float>(n, -1.25f);
        check_memset<Rgba>(n, Rgba{1, 2, 3, 4});
        check_memset<double>(n, 3.0e-7);
        // Halves differ: no driver call sets this pattern.
        check_memset<int64_t>(n, int64_t{0x0123456789abcdef});
        check_memset<uint64_t>(n, 0x1234567812345678ull); // halves equal
        check_memset<uint64_t>(n, 0xababababababababull); // every byte equal
        check_memset<Pair>(n, Pair{1.0f, -2.0f});
        check_memset<std::array<int16_t, 4>>(n, {1, 2, 3, 4});
    }
}

TEST_P(MemoryTest, MemsetValuesReadByAKernel) {
    auto b = ctx().enqueue_create_buffer<float>(300);
    ctx().enqueue_memset(b, 2.5f);
    ctx().enqueue_function(add_f32, b, int64_t{300}, 1.0f, grid_dim(2), block_dim(256));
    for (float v : read(b)) ASSERT_EQ(v, 3.5f);
}

TEST_P(MemoryTest, MemsetSyncAliasAndStream) {
    auto b = ctx().enqueue_create_buffer<int32_t>(100);
    ctx().memset_sync(b, 7);
    for (int32_t v : read(b)) ASSERT_EQ(v, 7);
    ctx().memset(b, -9);
    for (int32_t v : read(b)) ASSERT_EQ(v, -9);
    DeviceStream s = ctx().create_stream();
    auto d = ctx().enqueue_create_buffer<int64_t>(100);
    s.enqueue_memset(d, int64_t{-0x0102030405060708});
    s.synchronize();
    for (int64_t v : read(d)) ASSERT_EQ(v, int64_t{-0x0102030405060708});
}

TEST_P(MemoryTest, MemsetOfAnUnalignedSubBufferLeavesItsNeighbours) {
    // A byte buffer viewed as 4- and 8-byte elements at odd addresses: the generic path.
    auto bytes = ctx().enqueue_create_buffer<uint8_t>(64);
    ctx().enqueue_memset(bytes, uint8_t{0xee});
    auto rgba = bytes.create_sub_buffer<Rgba>(1, 5);
    EXPECT_EQ(rgba.address(), bytes.address() + 1);
    ctx().enqueue_memset(rgba, Rgba{1, 2, 3, 4});
    struct alignas(1) Eight {
        uint8_t b[8];
    };
    auto eight = bytes.create_sub_buffer<Eight>(23, 4);
    ctx().enqueue_memset(eight, Eight{{9, 8, 7, 6, 5, 4, 3, 2}});
    std::vector<uint8_t> got = read(bytes);
    for (size_t i = 0; i < got.size(); ++i) {
        uint8_t want = 0xee;
        if (i >= 1 && i < 21) want = uint8_t(1 + (i - 1) % 4);
        if (i >= 23 && i < 55) want = uint8_t(9 - (i - 23) % 8);
        ASSERT_EQ(got[i], want) << "byte " << i;
    }
}

TEST_P(MemoryTest, EnqueueFillOnBuffers) {
    auto d = ctx().enqueue_create_buffer<int64_t>(33);
    d.enqueue_fill(int64_t{0x0102030405060708}).create_sub_buffer(1, 2).enqueue_fill(-1);
    std::vector<int64_t> got = read(d);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (i == 1 || i == 2) ? -1 : 0x0102030405060708) << i;
    auto h = ctx().enqueue_create_host_buffer<float>(5);
    h.enqueue_fill(0.5f);
    EXPECT_EQ(h.to_string(), "HostBuffer([0.5, 0.5, 0.5, 0.5, 0.5])");
    DeviceBuffer<float> empty;
    expect_logic_error([&] { empty.enqueue_fill(1.0f); }, {"enqueue_fill", "empty"});
}

TEST_P(MemoryTest, PyCudaMemsetUnits) {
    auto b = ctx().enqueue_create_buffer<uint32_t>(16); // 64 bytes
    ctx().memset_d32(b, 0x11111111u, 16);
    ctx().memset_d8(b, 0xff, 4, 8);          // bytes 8..11: element 2
    ctx().memset_d16(b, 0xabcd, 2, 8);       // bytes 16..19: element 4
    ctx().memset_d32(b, 0x12345678u, 3, 10); // elements 10..12
    std::vector<uint32_t> want(16, 0x11111111u);
    want[2] = 0xffffffffu;
    want[4] = 0xabcdabcdu;
    want[10] = want[11] = want[12] = 0x12345678u;
    EXPECT_EQ(read(b), want);

    DeviceStream s = ctx().create_stream();
    ctx().memset_d8_async(b, 0, 64, s);
    ctx().memset_d16_async(b, 0x0102, 1, s, 31);
    s.synchronize();
    ctx().memset_d32_async(b, 5u, 1);
    ctx().synchronize();
    std::vector<uint32_t> want2(16, 0);
    want2[0] = 5;
    want2[15] = 0x01020000u;
    EXPECT_EQ(read(b), want2);
}

TEST_P(MemoryTest, PyCudaMemsetRangeAndAlignmentErrors) {
    auto b = ctx().enqueue_create_buffer<uint32_t>(16);
    expect_logic_error([&] { ctx().memset_d32(b, 1u, 17); }, {"memset_d32", "count 17", "64 bytes", "16 units"});
    expect_logic_error([&] { ctx().memset_d16(b, 1, 2, 31); }, {"memset_d16", "offset 31", "count 2"});
    expect_logic_error([&] { ctx().memset_d8(b, 1, 1, 65); }, {"memset_d8", "offset 65"});
    auto odd = ctx().enqueue_create_buffer<uint8_t>(16).create_sub_buffer<uint8_t>(1, 8);
    expect_logic_error([&] { ctx().memset_d32(odd, 1u, 1); }, {"memset_d32", "not aligned to 4 bytes"});
    expect_logic_error([&] { ctx().memset_d16(odd, 1, 1); }, {"memset_d16", "not aligned to 2 bytes"});
    DeviceBuffer<float> empty;
    expect_logic_error([&] { ctx().enqueue_memset(empty, 1.0f); }, {"enqueue_memset", "empty"});
    DeviceContext other(0, GetParam());
    auto foreign = other.enqueue_create_buffer<float>(4);
    expect_logic_error([&] { ctx().enqueue_memset(foreign, 1.0f); }, {"enqueue_memset", "belongs to"});
    DeviceStream foreign_stream = other.create_stream();
    expect_logic_error([&] { ctx().memset_d8_async(b, 0, 1, foreign_stream); }, {"memset_d8_async", "stream"});
}

TEST_P(MemoryTest, SubBufferIsAViewPassedToKernels) {
    auto parent = ctx().enqueue_create_buffer<float>(100);
    ctx().enqueue_memset(parent, 1.0f);
    auto view = parent.create_sub_buffer(10, 20);
    EXPECT_EQ(view.size(), 20u);
    EXPECT_EQ(view.address(), parent.address() + 40);
    EXPECT_EQ(view.byte_offset(), 40u);
    ctx().enqueue_function(add_f32, view, int64_t{20}, 5.0f, grid_dim(1), block_dim(32));
    std::vector<float> got = read(parent);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (i >= 10 && i < 30) ? 6.0f : 1.0f) << i;
    // A view of a view: offsets add up; reads through Ptr<const T> too.
    auto inner = view.create_sub_buffer(5, 5);
    EXPECT_EQ(inner.address(), parent.address() + 60);
    auto out = ctx().enqueue_create_buffer<float>(5);
    ctx().enqueue_function(copy_f32, out, inner, int64_t{5}, grid_dim(1), block_dim(32));
    for (float v : read(out)) ASSERT_EQ(v, 12.0f);
    // Copies to and from views.
    std::vector<float> three = {7, 8, 9};
    ctx().enqueue_copy(parent.create_sub_buffer(97, 3), three.data());
    EXPECT_EQ(read(parent.create_sub_buffer(97, 3)), three);
}

TEST_P(MemoryTest, SubBufferOfAnotherTypeAndLifetime) {
    DeviceBuffer<int32_t> view;
    {
        auto parent = ctx().enqueue_create_buffer<float>(8);
        ctx().enqueue_memset(parent, 1.0f);
        view = parent.create_sub_buffer<int32_t>(4, 4);
    } // the parent handle is gone; the view keeps the memory
    for (int32_t v : read(view)) ASSERT_EQ(v, 0x3f800000); // the bits of 1.0f
    ctx().enqueue_function(iota_i32, view, int64_t{4}, int32_t{100}, grid_dim(1), block_dim(4));
    EXPECT_EQ(read(view), (std::vector<int32_t>{100, 101, 102, 103}));
    auto bytes = view.create_sub_buffer<uint8_t>(1, 4);
    EXPECT_EQ(bytes.size(), 4u);
    EXPECT_EQ(read(bytes), (std::vector<uint8_t>{101, 0, 0, 0}));
}

TEST_P(MemoryTest, SubBufferBoundsAndAlignmentErrors) {
    auto parent = ctx().enqueue_create_buffer<float>(12);
    expect_logic_error([&] { (void)parent.create_sub_buffer(5, 10); },
                       {"create_sub_buffer(offset 5, count 10)", "10 elements", "12 elements", "size 12"});
    expect_logic_error([&] { (void)parent.create_sub_buffer(13, 0); }, {"offset 13", "past the end", "12 elements"});
    expect_logic_error([&] { (void)parent.create_sub_buffer<double>(0, 7); }, {"count 7", "8 bytes"});
    EXPECT_EQ(parent.create_sub_buffer(12, 0).size(), 0u);
    EXPECT_EQ(parent.create_sub_buffer<double>(2, 5).size(), 5u);
    expect_logic_error([&] { (void)parent.create_sub_buffer<double>(1, 2); }, {"4 bytes", "8-byte alignment"});
    auto bytes = ctx().enqueue_create_buffer<uint8_t>(16);
    expect_logic_error([&] { (void)bytes.create_sub_buffer<float>(2, 1); }, {"2 bytes", "4-byte alignment"});
    expect_logic_error([&] { (void)bytes.create_sub_buffer<uint8_t>(1, size_t(-1)); }, {"do not fit"});
    DeviceBuffer<float> empty;
    expect_logic_error([&] { (void)empty.create_sub_buffer(0, 0); }, {"create_sub_buffer", "empty"});
}

TEST_P(MemoryTest, HostBufferSubBuffer) {
    auto h = ctx().enqueue_create_host_buffer<int32_t>(10);
    std::iota(h.begin(), h.end(), 0);
    auto v = h.create_sub_buffer(3, 4);
    EXPECT_EQ(v.data(), h.data() + 3);
    EXPECT_EQ(std::vector<int32_t>(v.begin(), v.end()), (std::vector<int32_t>{3, 4, 5, 6}));
    auto d = ctx().enqueue_create_buffer<int32_t>(4);
    ctx().enqueue_copy(d, v);
    EXPECT_EQ(read(d), (std::vector<int32_t>{3, 4, 5, 6}));
    expect_logic_error([&] { (void)h.create_sub_buffer(8, 3); }, {"HostBuffer", "size 10"});
}

TEST_P(MemoryTest, MapToHostCopiesInAndWritesBack) {
    auto b = ctx().enqueue_create_buffer<float>(64);
    ctx().enqueue_memset(b, 3.0f);
    {
        auto h = b.map_to_host();
        EXPECT_TRUE(h.is_mapped());
        ASSERT_EQ(h.size(), 64u);
        for (float v : h) ASSERT_EQ(v, 3.0f); // copied in
        for (size_t i = 0; i < h.size(); ++i) h[i] = float(i);
    } // written back
    std::vector<float> want(64);
    std::iota(want.begin(), want.end(), 0.0f);
    EXPECT_EQ(read(b), want);
    // Two mappings at once, as in Mojo's `with ctx.map_to_host(a) as x, ctx.map_to_host(b) as y:`.
    auto out = ctx().enqueue_create_buffer<float>(64);
    {
        auto in_host = ctx().map_to_host(b);
        auto out_host = ctx().map_to_host(out);
        for (size_t i = 0; i < 64; ++i) {
            in_host[i] += 1.0f;
            out_host[i] = 255.0f;
        }
    }
    ctx().enqueue_function(copy_f32, out, b, int64_t{64}, grid_dim(1), block_dim(64));
    std::vector<float> got = read(out);
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], 2.0f * (float(i) + 1.0f));
    {
        auto h = b.create_sub_buffer(0, 3).map_to_host();
        EXPECT_EQ(h.to_string(), "HostBuffer([1.0, 2.0, 3.0])");
        EXPECT_EQ(h.host_buffer().data(), h.data());
    }
    // unmap() writes back early; later writes to the view stay on the host.
    {
        auto h = b.map_to_host();
        h[0] = -1.0f;
        h.unmap();
        EXPECT_FALSE(h.is_mapped());
        h[0] = -2.0f;
    }
    EXPECT_EQ(read(b)[0], -1.0f);
    // A mapping of a sub-buffer writes back only its elements.
    {
        auto h = b.create_sub_buffer(1, 2).map_to_host();
        h[0] = h[1] = 0.5f;
    }
    got = read(b);
    EXPECT_EQ(got[0], -1.0f);
    EXPECT_EQ(got[1], 0.5f);
    EXPECT_EQ(got[2], 0.5f);
    EXPECT_EQ(got[3], 4.0f);
}

TEST_P(MemoryTest, MapToHostWritesBackWhenAnExceptionLeavesTheScope) {
    auto b = ctx().enqueue_create_buffer<int32_t>(8);
    ctx().memset_sync(b, 0);
    try {
        auto h = ctx().map_to_host(b);
        h[7] = 77;
        throw std::runtime_error("leaving the scope");
    } catch (const std::runtime_error &) {
    }
    EXPECT_EQ(read(b)[7], 77);
    // A moved view writes back once, from its new owner.
    {
        auto h = b.map_to_host();
        h[0] = 1;
        MappedHostView<int32_t> owner = std::move(h);
        EXPECT_FALSE(h.is_mapped()); // NOLINT(bugprone-use-after-move): what the test checks
        EXPECT_TRUE(owner.is_mapped());
        owner[1] = 2;
    }
    std::vector<int32_t> got = read(b);
    EXPECT_EQ(got[0], 1);
    EXPECT_EQ(got[1], 2);
}

TEST_P(MemoryTest, MapToHostErrors) {
    DeviceBuffer<float> empty;
    expect_logic_error([&] { (void)empty.map_to_host(); }, {"map_to_host", "empty"});
    DeviceContext other(0, GetParam());
    auto foreign = other.enqueue_create_buffer<float>(4);
    expect_logic_error([&] { (void)ctx().map_to_host(foreign); }, {"belongs to"});
}

TEST_P(MemoryTest, MallocHostAndFreeHost) {
    constexpr size_t n = 1000;
    float *p = ctx().malloc_host<float>(n);
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < n; ++i) p[i] = float(i);
    auto d = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy_to_device(d, p);
    ctx().enqueue_function(add_f32, d, int64_t{n}, 0.5f, grid_dim(4), block_dim(256));
    ctx().copy_from_device_sync(p, d);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], float(i) + 0.5f);
    ctx().free_host(p);
    ctx().free_host(nullptr);
    expect_logic_error([&] { ctx().free_host(p); }, {"free_host", "not returned by malloc_host"});
    int local = 0;
    expect_logic_error([&] { ctx().free_host(&local); }, {"free_host"});
    DeviceContext other(0, GetParam());
    int32_t *q = other.malloc_host<int32_t>(4);
    expect_logic_error([&] { ctx().free_host(q); }, {"free_host", "allocated by"});
    other.free_host(q);
    // The allocating context is gone: the pointer stays unfreeable, with a message saying why.
    int32_t *orphan = nullptr;
    {
        DeviceContext gone(0, GetParam());
        orphan = gone.malloc_host<int32_t>(1);
    }
    expect_logic_error([&] { ctx().free_host(orphan); }, {"free_host", "now destroyed"});
}

TEST_P(MemoryTest, ManagedBufferOnHostAndInKernels) {
    constexpr size_t n = 777;
    ManagedBuffer<float> m = ctx().create_managed_buffer<float>(n);
    ASSERT_EQ(m.size(), n);
    EXPECT_EQ(reinterpret_cast<uint64_t>(m.data()), m.address());
    for (size_t i = 0; i < n; ++i) m[i] = float(i);
    ctx().enqueue_function(add_f32, m, int64_t{n}, 2.0f, grid_dim(4), block_dim(256));
    ctx().synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(m[i], float(i) + 2.0f);
    // The same memory as a DeviceBuffer: memset, copies, views.
    ctx().memset_sync(m.device_buffer(), 4.0f);
    for (float v : m) ASSERT_EQ(v, 4.0f);
    auto d = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_function(copy_f32, d, m, int64_t{n}, grid_dim(4), block_dim(256));
    for (float v : read(d)) ASSERT_EQ(v, 8.0f);
    ctx().copy_sync(m.device_buffer().create_sub_buffer(0, 3), std::vector<float>{1, 2, 3}.data());
    EXPECT_EQ(m[2], 3.0f);
}

TEST_P(MemoryTest, ManagedBufferAttachedToTheHostOrOneStream) {
    constexpr size_t n = 256;
    ManagedBuffer<float> m = ctx().create_managed_buffer<float>(n, MemAttach::host);
    for (size_t i = 0; i < n; ++i) m[i] = float(i);
    DeviceStream s = ctx().create_stream();
    m.attach(MemAttach::single, s); // the host's and s's only
    s.enqueue_function(add_f32, m, int64_t{n}, 1.0f, grid_dim(1), block_dim(256));
    s.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(m[i], float(i) + 1.0f);
    m.attach(MemAttach::global);
    ctx().enqueue_function(add_f32, m, int64_t{n}, 1.0f, grid_dim(1), block_dim(256));
    ctx().synchronize();
    EXPECT_EQ(m[255], 257.0f);
    expect_logic_error([&] { (void)ctx().create_managed_buffer<float>(4, MemAttach::single); },
                       {"create_managed_buffer", "MemAttach::single"});
    ManagedBuffer<float> empty;
    expect_logic_error([&] { empty.attach(MemAttach::global); }, {"attach", "empty"});
    DeviceContext other(0, GetParam());
    expect_logic_error([&] { m.attach(MemAttach::single, other.create_stream()); }, {"attach", "stream"});
}

TEST_P(MemoryTest, ManagedOutOfMemoryIsAMemoryError) {
    constexpr size_t one_pib = size_t(1) << 50;
    try {
        auto m = ctx().create_managed_buffer<char>(one_pib);
        FAIL() << "allocated 1 PiB of managed memory";
    } catch (const MemoryError &e) {
        EXPECT_TRUE(contains(e.what(), "1125899906842624 bytes")) << e.what();
        EXPECT_TRUE(contains(e.what(), "free")) << e.what();
    }
    // The context is still usable.
    auto m = ctx().create_managed_buffer<int32_t>(4);
    ctx().enqueue_function(iota_i32, m, int64_t{4}, int32_t{1}, grid_dim(1), block_dim(4));
    ctx().synchronize();
    EXPECT_EQ(m[3], 4);
    expect_logic_error([&] { (void)ctx().create_managed_buffer<double>(size_t(1) << 62); }, {"overflow"});
}

TEST_P(MemoryTest, HostMappedBufferIsWrittenByKernelsInPlace) {
    constexpr size_t n = 500;
    HostMappedBuffer<int32_t> h = ctx().create_host_mapped_buffer<int32_t>(n);
    ASSERT_EQ(h.size(), n);
    EXPECT_NE(h.device_address(), 0u);
    std::fill(h.begin(), h.end(), -1);
    ctx().enqueue_function(iota_i32, h, int64_t{n}, int32_t{10}, grid_dim(2), block_dim(256));
    ctx().synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], int32_t(10 + i));
    auto d = ctx().enqueue_create_buffer<int32_t>(n);
    ctx().copy_sync(d, h.host_buffer());
    EXPECT_EQ(read(d)[499], 509);
}

TEST_P(MemoryTest, EmptyOrForeignManagedAndMappedArgumentsAreLogicErrors) {
    ManagedBuffer<int32_t> m = ctx().create_managed_buffer<int32_t>(4);
    ManagedBuffer<int32_t> moved = std::move(m);
    expect_logic_error([&] { ctx().enqueue_function(iota_i32, m, int64_t{4}, 0, grid_dim(1), block_dim(4)); },
                       {"mem_iota_i32", "argument 0 ('v')", "empty"});
    HostMappedBuffer<int32_t> empty;
    expect_logic_error([&] { ctx().enqueue_function(iota_i32, empty, int64_t{4}, 0, grid_dim(1), block_dim(4)); },
                       {"argument 0 ('v')", "empty HostMappedBuffer"});
    DeviceContext other(0, GetParam());
    ManagedBuffer<int32_t> foreign = other.create_managed_buffer<int32_t>(4);
    expect_logic_error([&] { ctx().enqueue_function(iota_i32, foreign, int64_t{4}, 0, grid_dim(1), block_dim(4)); },
                       {"argument 0 ('v')", "is a DeviceBuffer of", "but the kernel runs on"});
    if (detail::cuda_device_count() > 0) {
        // Mapped memory of the CPU device is not addressable by a GPU kernel, and the reverse.
        DeviceContext cpu(0, "cpu"), cuda(0, "cuda");
        auto h = cpu.create_host_mapped_buffer<int32_t>(4);
        expect_logic_error([&] { cuda.enqueue_function(iota_i32, h, int64_t{4}, 0, grid_dim(1), block_dim(4)); },
                           {"HostMappedBuffer of cpu:0", "cuda:0"});
    }
}

TEST_P(MemoryTest, RegisteredHostMemory) {
    std::vector<float> storage(8192, 1.5f);
    float *data = storage.data() + 1024; // 4096 floats with room on both sides
    constexpr size_t n = 4096;
    {
        RegisteredHostMemory reg = ctx().register_host_memory(data, n * sizeof(float));
        EXPECT_TRUE(reg);
        EXPECT_EQ(reg.data(), data);
        EXPECT_EQ(reg.bytes(), n * sizeof(float));
        EXPECT_NE(reg.device_address(), 0u);
        auto d = ctx().enqueue_create_buffer<float>(n);
        ctx().enqueue_copy(d, data);
        ctx().enqueue_function(add_f32, d, int64_t{n}, 1.0f, grid_dim(16), block_dim(256));
        ctx().enqueue_copy(data, d);
        ctx().synchronize();
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], 2.5f);
        // Overlapping ranges are refused while registered: inside, across the start, across the end.
        expect_logic_error([&] { (void)ctx().register_host_memory(data + 100, 64); },
                           {"register_host_memory", "overlaps"});
        expect_logic_error([&] { (void)ctx().register_host_memory(data - 16, 128); }, {"overlaps"});
        expect_logic_error([&] { (void)ctx().register_host_memory(data + n - 1, 64); }, {"overlaps"});
        RegisteredHostMemory moved = std::move(reg);
        EXPECT_FALSE(reg); // NOLINT(bugprone-use-after-move): what the test checks
        EXPECT_TRUE(moved);
        moved.unregister();
        EXPECT_FALSE(moved);
        moved.unregister(); // nothing left to do
    }
    // Unregistered: the range may be registered again; the destructor unregisters.
    {
        RegisteredHostMemory again = ctx().register_host_memory(data, n * sizeof(float));
        EXPECT_TRUE(again);
    }
    RegisteredHostMemory third = ctx().register_host_memory(data, n * sizeof(float));
    EXPECT_TRUE(third);
    expect_logic_error([&] { (void)ctx().register_host_memory(nullptr, 16); }, {"null pointer"});
    expect_logic_error([&] { (void)ctx().register_host_memory(storage.data(), 0); }, {"0 bytes"});
}

TEST_P(MemoryTest, MojoCopyNamesAndSyncVariants) {
    std::vector<int32_t> in(100), out(100, 0);
    std::iota(in.begin(), in.end(), 1);
    auto a = ctx().enqueue_create_buffer<int32_t>(100);
    auto b = ctx().enqueue_create_buffer<int32_t>(100);
    ctx().enqueue_copy_to_device(a, in.data());
    ctx().enqueue_copy_device_to_device(b, a);
    ctx().enqueue_copy_from_device(out.data(), b);
    ctx().synchronize();
    EXPECT_EQ(out, in);
    // The destination's size decides; the source may be longer.
    auto small = ctx().enqueue_create_buffer<int32_t>(10);
    ctx().copy_device_to_device_sync(small, a);
    EXPECT_EQ(read(small), std::vector<int32_t>(in.begin(), in.begin() + 10));
    expect_logic_error([&] { ctx().enqueue_copy_device_to_device(a, small); },
                       {"enqueue_copy_device_to_device", "10 elements", "100"});
    ctx().memset_sync(a, 0);
    ctx().copy_to_device_sync(a, in.data());
    std::vector<int32_t> back(100);
    ctx().copy_from_device_sync(back.data(), a);
    EXPECT_EQ(back, in);
    auto host = ctx().enqueue_create_host_buffer<int32_t>(100);
    ctx().copy_sync(host, a);
    EXPECT_EQ(std::vector<int32_t>(host.begin(), host.end()), in);
}

INSTANTIATE_TEST_SUITE_P(Apis, MemoryTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
