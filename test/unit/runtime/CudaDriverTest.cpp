/// \file
/// The CUDA back end: CUresult -> exception mapping (no GPU needed), and, on a machine with a
/// CUDA device, memory, copies, PTX loading and a launch through the Backend interface.
#include "cuda/CudaDriver.h"
#include "hip/HipRuntime.h"

#include "ember/Error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ember::detail {
namespace {

/// Passes when `text` contains `part`; prints both otherwise. (gmock's HasSubstr would need
/// libgmock, which the unit tests do not link.)
::testing::AssertionResult contains(const std::string &text, const std::string &part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

template <class Exception> void expect_throws_as(int code, const char *name) {
    try {
        throw_cuda_error(code, "cuSomething failed", "; context", name, "the description");
        FAIL() << "throw_cuda_error(" << code << ") returned";
    } catch (const Exception &e) {
        EXPECT_EQ(e.code(), code);
        EXPECT_EQ(e.code_name(), name);
        EXPECT_TRUE(contains(e.what(), std::string("cuSomething failed: ") + name +
                                           " (the description); context"));
    } catch (const std::exception &e) {
        FAIL() << name << " threw the wrong class: " << e.what();
    }
}

TEST(CudaDriverTest, OutOfMemoryIsMemoryError) {
    EXPECT_EQ(cuda_error_class(2), CudaErrorClass::Memory);
    expect_throws_as<MemoryError>(2, "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(CudaDriverTest, KernelFaultsAreLaunchErrors) {
    for (int code : {700, 701, 702, 703, 710, 714, 715, 716, 717, 718, 719, 720, 721}) {
        SCOPED_TRACE(cuda_error_name(code));
        EXPECT_EQ(cuda_error_class(code), CudaErrorClass::Launch);
        expect_throws_as<LaunchError>(code, cuda_error_name(code).c_str());
    }
}

TEST(CudaDriverTest, ProgrammerMistakesAreLogicErrors) {
    for (int code : {1, 3, 101, 200, 201, 209, 218, 222, 400, 401, 500, 709, 801}) {
        SCOPED_TRACE(cuda_error_name(code));
        EXPECT_EQ(cuda_error_class(code), CudaErrorClass::Logic);
        expect_throws_as<LogicError>(code, cuda_error_name(code).c_str());
    }
}

TEST(CudaDriverTest, EverythingElseIsRuntimeError) {
    for (int code : {4, 34, 35, 100, 214, 221, 226, 304, 600, 803, 999, 123456}) {
        SCOPED_TRACE(cuda_error_name(code));
        EXPECT_EQ(cuda_error_class(code), CudaErrorClass::Runtime);
        expect_throws_as<RuntimeError>(code, cuda_error_name(code).c_str());
    }
}

TEST(CudaDriverTest, NamesComeFromTheBuiltInTable) {
    EXPECT_EQ(cuda_error_name(0), "CUDA_SUCCESS");
    EXPECT_EQ(cuda_error_name(1), "CUDA_ERROR_INVALID_VALUE");
    EXPECT_EQ(cuda_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_EQ(cuda_error_name(218), "CUDA_ERROR_INVALID_PTX");
    EXPECT_EQ(cuda_error_name(700), "CUDA_ERROR_ILLEGAL_ADDRESS");
    EXPECT_EQ(cuda_error_name(999), "CUDA_ERROR_UNKNOWN");
    EXPECT_EQ(cuda_error_name(123456), "CUresult(123456)");
}

TEST(CudaDriverTest, DefaultNameAndNoDescription) {
    try {
        throw_cuda_error(1, "cuMemAlloc failed", "");
        FAIL() << "throw_cuda_error returned";
    } catch (const LogicError &e) {
        EXPECT_STREQ(e.what(), "cuMemAlloc failed: CUDA_ERROR_INVALID_VALUE");
        EXPECT_EQ(e.code_name(), "CUDA_ERROR_INVALID_VALUE");
    }
}

TEST(CudaDriverTest, StickyErrorsSayTheContextIsLost) {
    EXPECT_TRUE(cuda_error_is_sticky(700));
    EXPECT_TRUE(cuda_error_is_sticky(710));
    EXPECT_FALSE(cuda_error_is_sticky(701));
    EXPECT_FALSE(cuda_error_is_sticky(2));
    try {
        throw_cuda_error(700, "cuStreamSynchronize failed", "");
        FAIL() << "throw_cuda_error returned";
    } catch (const LaunchError &e) {
        EXPECT_TRUE(contains(e.what(), "no longer usable"));
    }
    try {
        throw_cuda_error(701, "cuLaunchKernel failed", "");
        FAIL() << "throw_cuda_error returned";
    } catch (const LaunchError &e) {
        EXPECT_FALSE(contains(e.what(), "no longer usable"));
    }
}

TEST(CudaDriverTest, DeviceCountNeverThrows) {
    EXPECT_GE(cuda_device_count(), 0);
    EXPECT_GE(hip_device_count(), 0);
}

TEST(CudaDriverTest, NoDriverOrDeviceIsRuntimeError) {
    if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
    try {
        make_cuda_backend(0);
        FAIL() << "make_cuda_backend(0) returned without a device";
    } catch (const RuntimeError &e) {
        // The driver is missing, or cuInit failed (CUDA_ERROR_NO_DEVICE).
        std::string why;
        if (!CudaDriver::try_get(&why)) {
            EXPECT_EQ(e.what(), why);
        }
    } catch (const LogicError &e) {
        // A driver that loads and initialises but counts no device.
        EXPECT_TRUE(contains(e.what(), "no CUDA device with id 0: this machine has 0"));
    }
}

// --- Tests that need a CUDA device -------------------------------------------------------------

/// Stores 42 to the u32 its parameter points to. sm_75 and PTX ISA 6.3 (CUDA 10.0): JIT-compiled
/// for any newer GPU, and still accepted by CUDA 13, which dropped the older targets.
std::string store42_ptx(const std::string &sm) {
    return ".version 6.3\n"
           ".target " + sm + "\n"
           ".address_size 64\n"
           "\n"
           ".visible .entry store42(\n"
           "    .param .u64 store42_param_0\n"
           ")\n"
           "{\n"
           "    .reg .b32 %r<2>;\n"
           "    .reg .b64 %rd<3>;\n"
           "\n"
           "    ld.param.u64 %rd1, [store42_param_0];\n"
           "    cvta.to.global.u64 %rd2, %rd1;\n"
           "    mov.u32 %r1, 42;\n"
           "    st.global.u32 [%rd2], %r1;\n"
           "    ret;\n"
           "}\n";
}

class CudaBackendTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (cuda_device_count() == 0) {
            std::string why = "the driver reports no device";
            CudaDriver::try_get(&why);
            GTEST_SKIP() << "no CUDA device: " << why;
        }
        backend_ = make_cuda_backend(0);
    }

    /// sm_75 on a device of compute capability 7.5 or newer, sm_52 before.
    std::string portable_sm() const {
        const std::string &cpu = backend_->target().cpu; // "sm_90"
        int cc = std::atoi(cpu.c_str() + (cpu.rfind("sm_", 0) == 0 ? 3 : 0));
        return cc >= 75 ? "sm_75" : "sm_52";
    }

    CompiledKernel ptx_kernel(const std::string &name, std::string ptx) const {
        CompiledKernel k;
        k.kernel_name = name;
        k.entry_symbol = name;
        k.target = backend_->target();
        k.binary = std::move(ptx);
        return k;
    }

    std::shared_ptr<Backend> backend_;
};

TEST_F(CudaBackendTest, DescribesTheDevice) {
    EXPECT_EQ(backend_->api(), "cuda");
    EXPECT_FALSE(backend_->name().empty());
    EXPECT_EQ(backend_->device_id(), 0);
    EXPECT_EQ(backend_->target().arch, Arch::NVPTX);
    EXPECT_GE(backend_->limits().max_threads_per_block, 512);
    EXPECT_EQ(backend_->limits().warp_size, 32);
    EXPECT_GE(backend_->limits().max_shared_memory_per_block, 48 * 1024);
}

TEST_F(CudaBackendTest, DeviceIdOutOfRangeIsLogicError) {
    int count = cuda_device_count();
    try {
        make_cuda_backend(count);
        FAIL() << "make_cuda_backend(" << count << ") returned";
    } catch (const LogicError &e) {
        EXPECT_TRUE(contains(e.what(), "no CUDA device with id " + std::to_string(count) +
                                        ": this machine has " + std::to_string(count)));
    }
    EXPECT_THROW(make_cuda_backend(-1), LogicError);
}

TEST_F(CudaBackendTest, CopiesRoundTrip) {
    constexpr size_t bytes = 1 << 20;
    std::vector<uint8_t> in(bytes), out(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) in[i] = uint8_t(i * 7 + 3);
    DeviceAddress a = backend_->allocate(bytes), b = backend_->allocate(bytes);
    auto *pinned = static_cast<uint8_t *>(backend_->allocate_host(bytes));
    ASSERT_NE(pinned, nullptr);
    backend_->default_stream()->copy_to_device(a, in.data(), bytes);
    backend_->default_stream()->copy_device_to_device(b, a, bytes);
    backend_->default_stream()->copy_from_device(out.data(), b, bytes);
    backend_->default_stream()->copy_from_device(pinned, a, bytes);
    backend_->default_stream()->synchronize();
    EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0);
    EXPECT_EQ(std::memcmp(in.data(), pinned, bytes), 0);
    backend_->deallocate_host(pinned);
    backend_->deallocate(b);
    backend_->deallocate(a);
    backend_->default_stream()->synchronize();
}

TEST_F(CudaBackendTest, HugeAllocationIsMemoryError) {
    constexpr size_t one_pib = size_t(1) << 50;
    try {
        DeviceAddress p = backend_->allocate(one_pib);
        backend_->deallocate(p);
        FAIL() << "allocated 1 PiB";
    } catch (const MemoryError &e) {
        EXPECT_EQ(e.code(), 2);
        EXPECT_EQ(e.code_name(), "CUDA_ERROR_OUT_OF_MEMORY");
        EXPECT_TRUE(contains(e.what(), "requested 1125899906842624 bytes"));
        EXPECT_TRUE(contains(e.what(), "free of"));
    }
    // The back end is still usable.
    DeviceAddress p = backend_->allocate(256);
    backend_->deallocate(p);
    backend_->default_stream()->synchronize();
}

TEST_F(CudaBackendTest, BadPtxIsCompileErrorWithLog) {
    std::string ptx = ".version 6.3\n.target " + portable_sm() +
                      "\n.address_size 64\n.visible .entry broken()\n{\n"
                      "    this_is_not_an_instruction %r1;\n    ret;\n}\n";
    try {
        backend_->load(ptx_kernel("broken", ptx));
        FAIL() << "loaded bad PTX";
    } catch (const CompileError &e) {
        EXPECT_TRUE(
            contains(e.summary(), "kernel 'broken': the CUDA driver rejected the PTX for "));
        EXPECT_TRUE(contains(e.summary(), "CUDA_ERROR_"));
        EXPECT_FALSE(e.log().empty());
    }
}

TEST_F(CudaBackendTest, LoadsAndLaunchesHandWrittenPtx) {
    std::unique_ptr<LoadedFunction> fn =
        backend_->load(ptx_kernel("store42", store42_ptx(portable_sm())));
    ASSERT_NE(fn, nullptr);
    EXPECT_GT(fn->load_seconds, 0.0);

    DeviceAddress out = backend_->allocate(sizeof(uint32_t));
    uint32_t zero = 0, result = 0;
    backend_->default_stream()->copy_to_device(out, &zero, sizeof zero);
    void *args[] = {&out};
    LaunchDims dims; // one thread
    backend_->default_stream()->launch(*fn, "store42", dims, args, 1);
    backend_->default_stream()->copy_from_device(&result, out, sizeof result);
    backend_->default_stream()->synchronize();
    EXPECT_EQ(result, 42u);
    backend_->deallocate(out);
    backend_->default_stream()->synchronize();
}

TEST_F(CudaBackendTest, LaunchOverLimitsIsReported) {
    std::unique_ptr<LoadedFunction> fn =
        backend_->load(ptx_kernel("store42", store42_ptx(portable_sm())));
    DeviceAddress out = backend_->allocate(sizeof(uint32_t));
    void *args[] = {&out};
    LaunchDims dims;
    dims.block = {4096, 1, 1}; // over every device's 1024 threads per block
    try {
        backend_->default_stream()->launch(*fn, "store42", dims, args, 1);
        FAIL() << "launched 4096 threads per block";
    } catch (const DriverErrorBase &e) {
        EXPECT_TRUE(contains(e.what(), "launch of kernel 'store42' failed: CUDA_ERROR_"));
        EXPECT_TRUE(contains(e.what(), "block (4096, 1, 1)"));
    }
    backend_->default_stream()->synchronize();
    backend_->deallocate(out);
}

} // namespace
} // namespace ember::detail
