// Device batch statistics for the calibration observers (observer_kernels.h): a grid reduction
// of min / max / counts into per-block partials, then a histogram kernel that derives the
// batch's range from those partials on the device and bins into shared-memory sub-histograms.
#include <cuda_runtime.h>

#include "kernels/cuda/observer_kernels.h"

namespace qcc::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBlocks = 1024;
// Elements per thread before another block is worth starting.
constexpr int64_t kPerThread = 16;
// Copies of the shared histogram (warp w adds into copy w % kCopies), so runs of one value
// (ReLU zeros) spread their atomics over several addresses; 4 * 2048 * 4 bytes = 32 KiB.
constexpr int kCopies = 4;

/// One block's share of the reduction.
struct Partial {
  float lo;  // finite min (+inf when none)
  float hi;  // finite max (-inf when none)
  unsigned long long nan, posinf, neginf;
};

__device__ __forceinline__ bool IsInf(float v) {
  return (__float_as_uint(v) & 0x7fffffffu) == 0x7f800000u;
}

/// Reduces `p` over the block; the result is valid in thread 0. Uses `sh` (kWarps entries).
__device__ Partial BlockReduce(Partial p, Partial* sh) {
  for (int off = 16; off > 0; off >>= 1) {
    const float lo = __shfl_down_sync(0xffffffffu, p.lo, off);
    const float hi = __shfl_down_sync(0xffffffffu, p.hi, off);
    p.lo = lo < p.lo ? lo : p.lo;
    p.hi = hi > p.hi ? hi : p.hi;
    p.nan += __shfl_down_sync(0xffffffffu, p.nan, off);
    p.posinf += __shfl_down_sync(0xffffffffu, p.posinf, off);
    p.neginf += __shfl_down_sync(0xffffffffu, p.neginf, off);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = p;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) {
      p.lo = sh[w].lo < p.lo ? sh[w].lo : p.lo;
      p.hi = sh[w].hi > p.hi ? sh[w].hi : p.hi;
      p.nan += sh[w].nan;
      p.posinf += sh[w].posinf;
      p.neginf += sh[w].neginf;
    }
  }
  return p;
}

__device__ __forceinline__ Partial EmptyPartial() {
  Partial p;
  p.lo = __uint_as_float(0x7f800000u);
  p.hi = __uint_as_float(0xff800000u);
  p.nan = p.posinf = p.neginf = 0;
  return p;
}

/// (a): partials[blockIdx.x] = this block's grid-stride share; also zeroes out->bins.
__global__ void __launch_bounds__(kThreads)
    StatsReduceKernel(const float* __restrict__ x, int64_t n, Partial* partials, BatchStats* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (int64_t b = first; b < kStatsBins; b += stride) out->bins[b] = 0;
  Partial p = EmptyPartial();
  for (int64_t i = first; i < n; i += stride) {
    const float v = x[i];
    if (v != v) {
      ++p.nan;
    } else if (IsInf(v)) {
      ++(v > 0.0f ? p.posinf : p.neginf);
    } else {
      p.lo = v < p.lo ? v : p.lo;
      p.hi = v > p.hi ? v : p.hi;
    }
  }
  __shared__ Partial sh[kWarps];
  p = BlockReduce(p, sh);
  if (threadIdx.x == 0) partials[blockIdx.x] = p;
}

/// (b): every block reduces the partials to the batch's range, bins its grid-stride share of x
/// into shared sub-histograms and adds them to out->bins; block 0 writes the scalars.
__global__ void __launch_bounds__(kThreads)
    StatsHistogramKernel(const float* __restrict__ x, int64_t n, const Partial* partials,
                         int num_partials, BatchStats* out) {
  __shared__ Partial sh[kWarps];
  __shared__ int range_log2;
  __shared__ unsigned int hist[kCopies * kStatsBins];
  Partial p = EmptyPartial();
  for (int k = threadIdx.x; k < num_partials; k += kThreads) {
    const Partial q = partials[k];
    p.lo = q.lo < p.lo ? q.lo : p.lo;
    p.hi = q.hi > p.hi ? q.hi : p.hi;
    p.nan += q.nan;
    p.posinf += q.posinf;
    p.neginf += q.neginf;
  }
  p = BlockReduce(p, sh);
  if (threadIdx.x == 0) {
    const unsigned long long count = static_cast<unsigned long long>(n);
    const bool any_finite = count != p.nan + p.posinf + p.neginf;
    int e = kStatsNoRange;
    if (any_finite) {
      const float alo = fabsf(p.lo), ahi = fabsf(p.hi);
      e = StatsRangeLog2(alo > ahi ? alo : ahi);
    }
    range_log2 = e;
    if (blockIdx.x == 0) {
      // -0.0 + 0.0 == +0.0, as TensorStats normalises its extremes.
      out->min = any_finite ? p.lo + 0.0f : p.lo;
      out->max = any_finite ? p.hi + 0.0f : p.hi;
      out->range_log2 = e;
      out->reserved = 0;
      out->count = count;
      out->nan = p.nan;
      out->posinf = p.posinf;
      out->neginf = p.neginf;
    }
  }
  __syncthreads();
  const int e = range_log2;
  if (e == kStatsNoRange) return;  // block-uniform
  for (int b = threadIdx.x; b < kCopies * kStatsBins; b += kThreads) hist[b] = 0;
  __syncthreads();
  // A block never counts 2^32 values: with kMaxBlocks blocks that would take n > 2^42.
  unsigned int* copy = hist + ((threadIdx.x / 32) % kCopies) * kStatsBins;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    if (v != v || IsInf(v)) continue;
    atomicAdd(copy + HistogramBin(v, e), 1u);
  }
  __syncthreads();
  auto* bins = reinterpret_cast<unsigned long long*>(out->bins);
  for (int b = threadIdx.x; b < kStatsBins; b += kThreads) {
    unsigned long long c = 0;
    for (int k = 0; k < kCopies; ++k) c += hist[k * kStatsBins + b];
    if (c != 0) atomicAdd(bins + b, c);
  }
}

int BlocksFor(int64_t n) {
  const int64_t want = (n + kThreads * kPerThread - 1) / (kThreads * kPerThread);
  return static_cast<int>(want < 1 ? 1 : (want > kMaxBlocks ? kMaxBlocks : want));
}

}  // namespace

static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "BatchStats bins are 64-bit");

size_t BatchStatsScratchBytes() { return sizeof(Partial) * kMaxBlocks; }

cudaError_t EnqueueBatchStats(const float* x, int64_t n, BatchStats* out_device, void* scratch,
                              size_t scratch_bytes, cudaStream_t stream) {
  if (n < 0 || out_device == nullptr || scratch == nullptr ||
      scratch_bytes < BatchStatsScratchBytes() || (n > 0 && x == nullptr)) {
    return cudaErrorInvalidValue;
  }
  const int blocks = BlocksFor(n);
  auto* partials = static_cast<Partial*>(scratch);
  StatsReduceKernel<<<blocks, kThreads, 0, stream>>>(x, n, partials, out_device);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  StatsHistogramKernel<<<blocks, kThreads, 0, stream>>>(x, n, partials, blocks, out_device);
  return cudaGetLastError();
}

}  // namespace qcc::cuda
