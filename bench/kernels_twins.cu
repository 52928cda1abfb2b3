// The CUDA C++ twins of bench/kernels.cpp's ember kernels: the same algorithm, launch shape and
// arithmetic, written as a CUDA programmer would. bench/kernels carries this file as text; where
// it runs it compiles it with nvcc (-O3, the defaults otherwise) into a shared library, which it
// loads, and it compiles each section marked "// twin: NAME" alone (after the "// shared"
// section) with NVRTC to time the compile. The section after "// host" is for nvcc only: launchers
// that take device addresses (ember's buffers: one primary context serves both), CUB, cuBLAS and
// NVRTC.

// twin: stream
template <class T, class V>
__global__ void stream_copy(const V *__restrict__ a, V *__restrict__ c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
template <class T, class V> __device__ V scaled(V v, T s);
template <> __device__ float4 scaled(float4 v, float s) {
    return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}
template <> __device__ double2 scaled(double2 v, double s) {
    return make_double2(v.x * s, v.y * s);
}
__device__ float4 plus(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__device__ double2 plus(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }
template <class T, class V>
__global__ void stream_scale(const V *__restrict__ a, V *__restrict__ c, T s, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = scaled(a[i], s);
}
template <class T, class V>
__global__ void stream_add(const V *__restrict__ a, const V *__restrict__ b, V *__restrict__ c,
                           long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = plus(a[i], b[i]);
}
template <class T, class V>
__global__ void stream_triad(const V *__restrict__ b, const V *__restrict__ c, V *__restrict__ a,
                             T s, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = plus(b[i], scaled(c[i], s));
}
template __global__ void stream_copy<float, float4>(const float4 *, float4 *, long long);
template __global__ void stream_scale<float, float4>(const float4 *, float4 *, float, long long);
template __global__ void stream_add<float, float4>(const float4 *, const float4 *, float4 *,
                                                   long long);
template __global__ void stream_triad<float, float4>(const float4 *, const float4 *, float4 *,
                                                     float, long long);
template __global__ void stream_copy<double, double2>(const double2 *, double2 *, long long);
template __global__ void stream_scale<double, double2>(const double2 *, double2 *, double,
                                                       long long);
template __global__ void stream_add<double, double2>(const double2 *, const double2 *, double2 *,
                                                     long long);
template __global__ void stream_triad<double, double2>(const double2 *, const double2 *, double2 *,
                                                       double, long long);

// twin: reduce_partial
// Each block sums a grid-stride slice (float4 loads), warps with shuffles, then the warps' sums.
extern "C" __global__ void reduce_partial(const float *__restrict__ in, float *__restrict__ partial,
                                          long long n) {
    __shared__ float warp_sums[256 / 32];
    float acc = 0.0f;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4; i < n;
         i += (long long)gridDim.x * blockDim.x * 4) {
        float4 v = *reinterpret_cast<const float4 *>(in + i);
        acc += (v.x + v.y) + (v.z + v.w);
    }
    for (int d = 16; d > 0; d /= 2) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        float x = threadIdx.x < 256 / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int d = 16; d > 0; d /= 2) x += __shfl_down_sync(0xffffffffu, x, d);
        if (threadIdx.x == 0) partial[blockIdx.x] = x;
    }
}

// twin: transpose
extern "C" __global__ void transpose(const float *__restrict__ in, float *__restrict__ out,
                                     long long rows, long long cols) {
    __shared__ float tile[32 * 33];
    long long x = (long long)blockIdx.x * 32 + threadIdx.x,
              y0 = (long long)blockIdx.y * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8)
        tile[(threadIdx.y + k) * 33 + threadIdx.x] = in[(y0 + k) * cols + x];
    __syncthreads();
    long long ox = (long long)blockIdx.y * 32 + threadIdx.x,
              oy0 = (long long)blockIdx.x * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8)
        out[(oy0 + k) * rows + ox] = tile[threadIdx.x * 33 + threadIdx.y + k];
}

// twin: stencil5
extern "C" __global__ void stencil5(const float *__restrict__ in, float *__restrict__ out,
                                    long long rows, long long cols) {
    long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x,
              y = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < cols - 1 && y > 0 && y < rows - 1) {
        long long i = y * cols + x;
        out[i] = 0.2f * ((((in[i] + in[i - 1]) + in[i + 1]) + in[i - cols]) + in[i + cols]);
    }
}

// shared
// The block reductions of softmax and layernorm (256 threads: 8 warps), given to NVRTC with
// every twin.
__device__ float block_max(float *scratch, float v) {
    for (int d = 16; d > 0; d /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
    for (int k = 1; k < 8; ++k) r = fmaxf(r, scratch[k]);
    __syncthreads();
    return r;
}
__device__ float block_sum(float *scratch, float v) {
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
    for (int k = 1; k < 8; ++k) r += scratch[k];
    __syncthreads();
    return r;
}

// twin: softmax
// One row of 4096 per block of 256 threads, each holding 16 values (four float4) in registers.
extern "C" __global__ void softmax(const float *__restrict__ in, float *__restrict__ out) {
    __shared__ float scratch[8];
    const float *row = in + (long long)blockIdx.x * 4096;
    float4 v[4];
    float m = __int_as_float(0xff800000); // -infinity
    for (int k = 0; k < 4; ++k) {
        v[k] = *reinterpret_cast<const float4 *>(row + (k * 256 + threadIdx.x) * 4);
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = block_max(scratch, m);
    float s = 0.0f;
    for (int k = 0; k < 4; ++k) {
        v[k] = make_float4(expf(v[k].x - m), expf(v[k].y - m), expf(v[k].z - m), expf(v[k].w - m));
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    float inv = 1.0f / block_sum(scratch, s);
    float *o = out + (long long)blockIdx.x * 4096;
    for (int k = 0; k < 4; ++k)
        *reinterpret_cast<float4 *>(o + (k * 256 + threadIdx.x) * 4) = make_float4(
            v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
}

// twin: layernorm
extern "C" __global__ void layernorm(const float *__restrict__ in, const float *__restrict__ gamma,
                                     const float *__restrict__ beta, float *__restrict__ out) {
    __shared__ float scratch[8];
    const float *row = in + (long long)blockIdx.x * 4096;
    float4 v[4];
    float s = 0.0f, q = 0.0f;
    for (int k = 0; k < 4; ++k) {
        v[k] = *reinterpret_cast<const float4 *>(row + (k * 256 + threadIdx.x) * 4);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        q += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
    s = block_sum(scratch, s);
    q = block_sum(scratch, q);
    const float mean = s * (1.0f / 4096), rstd = rsqrtf(q * (1.0f / 4096) - mean * mean + 1e-5f);
    float *o = out + (long long)blockIdx.x * 4096;
    for (int k = 0; k < 4; ++k) {
        const int c = (k * 256 + threadIdx.x) * 4;
        float4 g = *reinterpret_cast<const float4 *>(gamma + c),
               b = *reinterpret_cast<const float4 *>(beta + c);
        *reinterpret_cast<float4 *>(o + c) = make_float4(
            (v[k].x - mean) * rstd * g.x + b.x, (v[k].y - mean) * rstd * g.y + b.y,
            (v[k].z - mean) * rstd * g.z + b.z, (v[k].w - mean) * rstd * g.w + b.w);
    }
}

// twin: sgemm
// C = A B, n x n row-major, n a multiple of 128: a 128 x 128 tile per block of 256 threads, 8 x 8
// per thread, K in steps of 8 through shared memory (A's tile stored transposed).
extern "C" __global__ void __launch_bounds__(256)
    sgemm(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
          long long n) {
    __shared__ float as[8 * 128], bs[8 * 128];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const long long row0 = (long long)blockIdx.y * 128, col0 = (long long)blockIdx.x * 128;
    const int ar = tid / 2, ak = (tid % 2) * 4, bk = tid / 32, bc = (tid % 32) * 4;
    float acc[8][8] = {};
    for (long long k0 = 0; k0 < n; k0 += 8) {
        float4 va = *reinterpret_cast<const float4 *>(a + (row0 + ar) * n + k0 + ak);
        as[(ak + 0) * 128 + ar] = va.x;
        as[(ak + 1) * 128 + ar] = va.y;
        as[(ak + 2) * 128 + ar] = va.z;
        as[(ak + 3) * 128 + ar] = va.w;
        *reinterpret_cast<float4 *>(bs + bk * 128 + bc) = *reinterpret_cast<const float4 *>(
            b + (k0 + bk) * n + col0 + bc);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            float4 a0 = *reinterpret_cast<float4 *>(as + kk * 128 + ty * 8),
                   a1 = *reinterpret_cast<float4 *>(as + kk * 128 + ty * 8 + 4);
            float4 b0 = *reinterpret_cast<float4 *>(bs + kk * 128 + tx * 8),
                   b1 = *reinterpret_cast<float4 *>(bs + kk * 128 + tx * 8 + 4);
            const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) c[(row0 + ty * 8 + i) * n + col0 + tx * 8 + j] = acc[i][j];
}

// twin: sgemm_async
// examples/sgemm.h in CUDA C++: C = A B, n x n row-major, n a multiple of 128; a 128 x 128 tile
// per block of 256 threads, 8 x 8 per thread in four 4 x 4 quarters 64 apart; slices of BK columns
// of A (row-major in shared memory, rows padded to BK + 4) and BK rows of B, brought in by
// cp.async through STAGES buffers, one barrier per slice.
__device__ __forceinline__ void cp_async16(float *dst, const float *src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
template <int BK, int STAGES>
__device__ __forceinline__ void sgemm_async_body(const float *__restrict__ a,
                                                 const float *__restrict__ b, float *__restrict__ c,
                                                 long long n, float *smem) {
    constexpr int AS = BK + 4, A_STAGE = 128 * AS, B_STAGE = BK * 128, COPIES = 128 * BK / 4 / 256;
    float *as = smem, *bs = smem + STAGES * A_STAGE;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const long long row0 = (long long)blockIdx.y * 128, col0 = (long long)blockIdx.x * 128;
    auto fetch = [&](long long k0, int stage) {
#pragma unroll
        for (int q = 0; q < COPIES; ++q) {
            const int p = tid + q * 256;
            const int ar = p / (BK / 4), ak = (p % (BK / 4)) * 4;
            cp_async16(as + stage * A_STAGE + ar * AS + ak, a + (row0 + ar) * n + k0 + ak);
            const int br = p / 32, bc = (p % 32) * 4;
            cp_async16(bs + stage * B_STAGE + br * 128 + bc, b + (k0 + br) * n + col0 + bc);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };
    float acc[8][8] = {};
    const long long steps = n / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) fetch((long long)s * BK, s);
    for (long long t = 0; t < steps; ++t) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
        __syncthreads();
        const long long ahead = t + STAGES - 1;
        if (ahead < steps)
            fetch(ahead * BK, (int)(ahead % STAGES));
        else
            asm volatile("cp.async.commit_group;\n" ::);
        const int stage = (int)(t % STAGES);
        const float *a0 = as + stage * A_STAGE + 4 * ty * AS;
        const float *b0 = bs + stage * B_STAGE + 4 * tx;
#pragma unroll
        for (int kq = 0; kq < BK; kq += 4) {
            float4 ra[8];
#pragma unroll
            for (int i = 0; i < 8; ++i)
                ra[i] = *reinterpret_cast<const float4 *>(a0 + (i < 4 ? i : 64 + i - 4) * AS + kq);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const float4 lo = *reinterpret_cast<const float4 *>(b0 + (kq + kk) * 128);
                const float4 hi = *reinterpret_cast<const float4 *>(b0 + (kq + kk) * 128 + 64);
                const float rb[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const float x = kk == 0   ? ra[i].x
                                    : kk == 1 ? ra[i].y
                                    : kk == 2 ? ra[i].z
                                              : ra[i].w;
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(x, rb[j], acc[i][j]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const long long row = row0 + 4 * ty + (i < 4 ? i : 64 + i - 4);
        *reinterpret_cast<float4 *>(c + row * n + col0 + 4 * tx) = make_float4(
            acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(c + row * n + col0 + 4 * tx +
                                    64) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
#define SGEMM_ASYNC(BK, STAGES)                                                                    \
    extern "C" __global__ void __launch_bounds__(256, 2)                                           \
        sgemm_async_##BK##_##STAGES(const float *__restrict__ a, const float *__restrict__ b,      \
                                    float *__restrict__ c, long long n) {                          \
        __shared__ __align__(16) float smem[STAGES * (128 * (BK + 4) + BK * 128)];                 \
        sgemm_async_body<BK, STAGES>(a, b, c, n, smem);                                            \
    }
SGEMM_ASYNC(8, 3) // the other variants are in the host section

// twin: sgemm_warptile
// examples/sgemm.h's warp-tiled kernel in CUDA C++: a 256 x 128 tile per block of 256 threads
// (8 warps, 4 x 2, of 64 x 64; lanes 4 x 8, 16 x 8 values each), slices of 8 through two shared
// buffers, A transposed through registers two slices ahead, the loop unrolled by 2, C written one
// float at a time.
struct WarptileSlice {
    float4 a[2], b;
};
extern "C" __global__ void __launch_bounds__(256, 1)
    sgemm_warptile(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                   long long n) {
    constexpr int AS = 260, A_STAGE = 8 * AS, B_STAGE = 8 * 128;
    __shared__ __align__(16) float as[2 * A_STAGE], bs[2 * B_STAGE];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const long long row0 = (long long)blockIdx.y * 256, col0 = (long long)blockIdx.x * 128;
    const int my_row = (warp % 4) * 64 + (lane / 8) * 4, my_col = (warp / 4) * 64 + (lane % 8) * 4;
    auto load = [&](long long k0) {
        WarptileSlice v;
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int p = tid + q * 256;
            v.a[q] = *reinterpret_cast<const float4 *>(a + (row0 + p / 2) * n + k0 + (p % 2) * 4);
        }
        v.b = *reinterpret_cast<const float4 *>(b + (k0 + tid / 32) * n + col0 + (tid % 32) * 4);
        return v;
    };
    auto store = [&](const WarptileSlice &v, int stage) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int p = tid + q * 256;
            float *d = as + stage * A_STAGE + ((p % 2) * 4) * AS + p / 2;
            d[0] = v.a[q].x;
            d[AS] = v.a[q].y;
            d[2 * AS] = v.a[q].z;
            d[3 * AS] = v.a[q].w;
        }
        *reinterpret_cast<float4 *>(bs + stage * B_STAGE + (tid / 32) * 128 + (tid % 32) * 4) = v.b;
    };
    float acc[16][8] = {};
    const long long steps = n / 8;
    store(load(0), 0);
    WarptileSlice ahead = load((1 < steps ? 1 : steps - 1) * 8);
    __syncthreads();
#pragma unroll 2
    for (long long t = 0; t < steps; ++t) {
        const WarptileSlice next = load((t + 2 < steps ? t + 2 : steps - 1) * 8);
        const int stage = (int)(t % 2);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float ra[16], rb[8];
#pragma unroll
            for (int g = 0; g < 4; ++g) {
                const float4 v = *reinterpret_cast<const float4 *>(as + stage * A_STAGE + k * AS +
                                                                   my_row + g * 16);
                ra[4 * g] = v.x, ra[4 * g + 1] = v.y, ra[4 * g + 2] = v.z, ra[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float4 v = *reinterpret_cast<const float4 *>(bs + stage * B_STAGE + k * 128 +
                                                                   my_col + h * 32);
                rb[4 * h] = v.x, rb[4 * h + 1] = v.y, rb[4 * h + 2] = v.z, rb[4 * h + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < 16; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        store(ahead, 1 - stage);
        ahead = next;
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        const long long row = row0 + my_row + (i / 4) * 16 + i % 4;
#pragma unroll
        for (int j = 0; j < 8; ++j) c[row * n + col0 + my_col + (j / 4) * 32 + j % 4] = acc[i][j];
    }
}

// host
#include <cub/device/device_reduce.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#define TWIN extern "C" __attribute__((visibility("default")))

TWIN int twin_sync() { return (int)cudaDeviceSynchronize(); }
TWIN const char *twin_error() { return cudaGetErrorString(cudaGetLastError()); }

// The peers' clock: two events on the legacy default stream (where the twins' launches, CUB and
// cuBLAS run), created once. twin_clock_end_ms returns -1 on an error (twin_error says which).
static cudaEvent_t clock_start, clock_stop;
TWIN int twin_clock_begin() {
    if (!clock_start && (cudaEventCreate(&clock_start) != cudaSuccess ||
                         cudaEventCreate(&clock_stop) != cudaSuccess))
        return 1;
    return (int)cudaEventRecord(clock_start, 0);
}
TWIN float twin_clock_end_ms() {
    float ms = 0;
    if (cudaEventRecord(clock_stop, 0) != cudaSuccess ||
        cudaEventSynchronize(clock_stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, clock_start, clock_stop) != cudaSuccess)
        return -1;
    return ms;
}

template <class T, class V>
void launch_stream(int which, int grid, const void *x, const void *y, void *z, T s, long long n) {
    auto X = (const V *)x, Y = (const V *)y;
    auto Z = (V *)z;
    if (which == 0) stream_copy<T, V><<<grid, 256>>>(X, Z, n);
    if (which == 1) stream_scale<T, V><<<grid, 256>>>(X, Z, s, n);
    if (which == 2) stream_add<T, V><<<grid, 256>>>(X, Y, Z, n);
    if (which == 3) stream_triad<T, V><<<grid, 256>>>(X, Y, Z, s, n);
}
TWIN void twin_stream_f32(int which, int grid, const void *x, const void *y, void *z, float s,
                          long long n4) {
    launch_stream<float, float4>(which, grid, x, y, z, s, n4);
}
TWIN void twin_stream_f64(int which, int grid, const void *x, const void *y, void *z, double s,
                          long long n2) {
    launch_stream<double, double2>(which, grid, x, y, z, s, n2);
}
TWIN void twin_reduce(const float *in, float *partial, float *out, long long n, int blocks) {
    reduce_partial<<<blocks, 256>>>(in, partial, n);
    reduce_partial<<<1, 256>>>(partial, out, blocks);
}
TWIN void twin_transpose(const float *in, float *out, long long rows, long long cols) {
    transpose<<<dim3(cols / 32, rows / 32), dim3(32, 8)>>>(in, out, rows, cols);
}
TWIN void twin_stencil(const float *in, float *out, long long rows, long long cols) {
    stencil5<<<dim3((cols + 31) / 32, (rows + 7) / 8), dim3(32, 8)>>>(in, out, rows, cols);
}
TWIN void twin_softmax(const float *in, float *out, int rows) { softmax<<<rows, 256>>>(in, out); }
TWIN void twin_layernorm(const float *in, const float *g, const float *b, float *out, int rows) {
    layernorm<<<rows, 256>>>(in, g, b, out);
}
TWIN void twin_sgemm(const float *a, const float *b, float *c, long long n) {
    sgemm<<<dim3(n / 128, n / 128), 256>>>(a, b, c, n);
}
TWIN void twin_sgemm_warptile(const float *a, const float *b, float *c, long long n) {
    sgemm_warptile<<<dim3(n / 128, n / 256), 256>>>(a, b, c, n);
}
SGEMM_ASYNC(8, 2)
SGEMM_ASYNC(8, 4)
SGEMM_ASYNC(16, 2)
// The pipelined SGEMM with BK columns per slice and STAGES buffers (8/2, 8/3, 8/4, 16/2).
TWIN int twin_sgemm_async(const float *a, const float *b, float *c, long long n, int bk,
                          int stages) {
    const dim3 grid(n / 128, n / 128);
    if (bk == 8 && stages == 2)
        sgemm_async_8_2<<<grid, 256>>>(a, b, c, n);
    else if (bk == 8 && stages == 3)
        sgemm_async_8_3<<<grid, 256>>>(a, b, c, n);
    else if (bk == 8 && stages == 4)
        sgemm_async_8_4<<<grid, 256>>>(a, b, c, n);
    else if (bk == 16 && stages == 2)
        sgemm_async_16_2<<<grid, 256>>>(a, b, c, n);
    else
        return 1;
    return 0;
}

// CUB's sum, its temporary storage allocated on the first call.
TWIN int twin_cub_sum(const float *in, float *out, long long n) {
    static void *temp = nullptr;
    static size_t temp_bytes = 0;
    if (!temp) {
        cub::DeviceReduce::Sum(nullptr, temp_bytes, in, out, n);
        if (cudaMalloc(&temp, temp_bytes) != cudaSuccess) return 1;
    }
    return (int)cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n);
}

// cuBLAS SGEMM in FP32 (CUBLAS_DEFAULT_MATH: no TF32), row-major C = A B as column-major C^T = B^T
// A^T.
TWIN int twin_cublas_sgemm(const float *a, const float *b, float *c, int n) {
    static cublasHandle_t handle = nullptr;
    if (!handle) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
        if (cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) return 2;
    }
    const float one = 1.0f, zero = 0.0f;
    return (int)cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c,
                            n);
}

// cuBLAS's bf16 GEMM (cublasGemmEx): bf16 A, B and C, f32 sums (CUBLAS_COMPUTE_32F), the default
// math mode, one handle for both layouts below; row-major C = A op(B) as column-major
// C^T = op(B)^T A^T. `b_transposed`: B is given n x k (each row a column of the product), its
// k x n column-major view transposed ("TN" in cuBLAS's terms); else B is k x n.
static int cublas_gemm_bf16(const void *a, const void *b, void *c, int m, int n, int k,
                            bool b_transposed) {
    static cublasHandle_t handle = nullptr;
    if (!handle) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
        if (cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) return 2;
    }
    const float one = 1.0f, zero = 0.0f;
    return (int)cublasGemmEx(handle, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
                             &one, b, CUDA_R_16BF, b_transposed ? k : n, a, CUDA_R_16BF, k, &zero,
                             c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

TWIN int twin_cublas_gemm_bf16(const void *a, const void *b, void *c, int m, int n, int k) {
    return cublas_gemm_bf16(a, b, c, m, n, k, false);
}

TWIN int twin_cublas_gemm_bf16_tn(const void *a, const void *b, void *c, int m, int n, int k) {
    return cublas_gemm_bf16(a, b, c, m, n, k, true);
}

// Registers per thread of a twin kernel, or -1.
TWIN int twin_registers(const char *name) {
    const void *f = nullptr;
    if (!std::strcmp(name, "reduce_partial")) f = (const void *)reduce_partial;
    if (!std::strcmp(name, "transpose")) f = (const void *)transpose;
    if (!std::strcmp(name, "stencil5")) f = (const void *)stencil5;
    if (!std::strcmp(name, "softmax")) f = (const void *)softmax;
    if (!std::strcmp(name, "layernorm")) f = (const void *)layernorm;
    if (!std::strcmp(name, "sgemm")) f = (const void *)sgemm;
    if (!std::strcmp(name, "sgemm_async")) f = (const void *)sgemm_async_8_3;
    if (!std::strcmp(name, "sgemm_warptile")) f = (const void *)sgemm_warptile;
    if (!std::strcmp(name, "stream_copy_f32")) f = (const void *)stream_copy<float, float4>;
    if (!std::strcmp(name, "stream_scale_f32")) f = (const void *)stream_scale<float, float4>;
    if (!std::strcmp(name, "stream_add_f32")) f = (const void *)stream_add<float, float4>;
    if (!std::strcmp(name, "stream_triad_f32")) f = (const void *)stream_triad<float, float4>;
    if (!std::strcmp(name, "stream_copy_f64")) f = (const void *)stream_copy<double, double2>;
    if (!std::strcmp(name, "stream_scale_f64")) f = (const void *)stream_scale<double, double2>;
    if (!std::strcmp(name, "stream_add_f64")) f = (const void *)stream_add<double, double2>;
    if (!std::strcmp(name, "stream_triad_f64")) f = (const void *)stream_triad<double, double2>;
    cudaFuncAttributes attr;
    if (!f || cudaFuncGetAttributes(&attr, f) != cudaSuccess) return -1;
    return attr.numRegs;
}

// Milliseconds NVRTC takes to compile `source` to PTX for `arch` ("compute_90"); -1 on an error
// (its log in `log`).
TWIN double twin_nvrtc_ms(const char *source, const char *arch, char *log, int log_size) {
    const auto t0 = std::chrono::steady_clock::now();
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, source, "twin.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        return -1;
    const std::string option = std::string("--gpu-architecture=") + arch;
    const char *options[] = {option.c_str(), "-default-device"};
    const nvrtcResult rc = nvrtcCompileProgram(prog, 2, options);
    size_t ptx_size = 0;
    if (rc == NVRTC_SUCCESS) {
        nvrtcGetPTXSize(prog, &ptx_size);
        std::string ptx(ptx_size, '\0');
        nvrtcGetPTX(prog, ptx.data());
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc != NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        std::string text(n, '\0');
        nvrtcGetProgramLog(prog, text.data());
        std::snprintf(log, log_size, "%s", text.c_str());
    }
    nvrtcDestroyProgram(&prog);
    return rc == NVRTC_SUCCESS ? ms : -1;
}
