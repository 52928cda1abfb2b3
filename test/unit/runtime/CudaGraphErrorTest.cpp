/// \file
/// CUDA stream capture errors: the codes 900-908 and 910 (CUDA_ERROR_STREAM_CAPTURE_*,
/// CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) are LogicErrors carrying
/// their names (no GPU needed), and, on a machine with a CUDA device, the driver's own capture
/// errors reach the program as those LogicErrors.
#include "cuda/CudaDriver.h"

#include "ember/ember.h"

#include <gtest/gtest.h>

#include <string>

namespace ember::detail {
namespace {

TEST(CudaGraphErrorTest, CaptureErrorsAreLogicErrorsWithTheirNames) {
    const std::pair<int, const char *> codes[] = {
        {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"}, {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
        {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},       {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
        {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
        {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},    {907, "CUDA_ERROR_CAPTURED_EVENT"},
        {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"}, {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    };
    for (const auto &[code, name] : codes) {
        SCOPED_TRACE(name);
        EXPECT_EQ(cuda_error_class(code), CudaErrorClass::Logic);
        EXPECT_EQ(cuda_error_name(code), name);
        EXPECT_FALSE(cuda_error_is_sticky(code));
        try {
            throw_cuda_error(code, "cuStreamEndCapture failed", "; on device 0");
            FAIL() << "throw_cuda_error returned";
        } catch (const LogicError &e) {
            EXPECT_EQ(e.code(), code);
            EXPECT_EQ(e.code_name(), name);
            EXPECT_NE(std::string(e.what()).find(std::string("cuStreamEndCapture failed: ") + name),
                      std::string::npos)
                << e.what();
        }
    }
    // 909 is CUDA_ERROR_TIMEOUT (a wait that timed out), not a capture error.
    EXPECT_EQ(cuda_error_class(909), CudaErrorClass::Runtime);
}

/// The driver's own verdicts on a capture that ember's checks would have stopped earlier: a
/// raw CUstream that captures, synchronised through the driver directly.
TEST(CudaGraphErrorTest, TheDriversCaptureErrorsAreLogicErrors) {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine (libcuda.so.1 missing or no GPU)";
    DeviceContext ctx(0, "cuda"); // leaves the device's primary context current on this thread
    const CudaDriver &drv = CudaDriver::get();
    ASSERT_NE(drv.cuStreamBeginCapture, nullptr) << "the driver lacks cuStreamBeginCapture_v2";
    cu::CUstream s = nullptr;
    drv.check(drv.cuStreamCreate(&s, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    drv.check(drv.cuStreamBeginCapture(s, cu::CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    cu::CUresult rc = drv.cuStreamSynchronize(s);
    EXPECT_EQ(rc, cu::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) << cuda_error_name(rc);
    try {
        drv.check(rc, "cuStreamSynchronize");
        ADD_FAILURE() << "no exception";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"), std::string::npos) << e.what();
    }
    cu::CUgraph g = nullptr;
    rc = drv.cuStreamEndCapture(s, &g);
    EXPECT_EQ(rc, cu::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << cuda_error_name(rc);
    EXPECT_THROW(drv.check(rc, "cuStreamEndCapture"), LogicError);
    if (g) drv.cuGraphDestroy(g);
    drv.check(drv.cuStreamDestroy(s), "cuStreamDestroy");
    // ember's own context is unaffected.
    ctx.synchronize();
}

} // namespace
} // namespace ember::detail
