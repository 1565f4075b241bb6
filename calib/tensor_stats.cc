#include "calib/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

#include "kernels/cpu/cpu_features.h"

namespace qcc::calib {
namespace {

constexpr int64_t kBlock = 4096;
// Below this many values per Add, bins are counted directly; above, into kLanes interleaved
// 32-bit sub-histograms, so runs of equal values (ReLU zeros) do not serialize on one counter.
constexpr int64_t kSubHistogramMin = 8192;
constexpr int kLanes = 4;

constexpr float kMaxM = TensorStats::kHalfBins - 1;  // |x| < range, so only a safety net

// floor(|v| * scale) mirrored around the centre: see the TensorStats class comment.
inline int32_t BinIndex(float v, float scale) {
  int32_t m = static_cast<int32_t>(std::min(std::fabs(v) * scale, kMaxM));
  return TensorStats::kHalfBins + (v < 0.0f ? ~m : m);  // ~m == -1 - m
}

// Histogram index of every value of a NaN/inf-free block into `idx`.
void ComputeBinIndices(const float* x, int64_t n, float scale, int32_t* idx) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vscale = _mm_set1_ps(scale);
  const __m128 vcap = _mm_set1_ps(kMaxM);
  const __m128 sign = _mm_set1_ps(-0.0f);
  const __m128i half = _mm_set1_epi32(TensorStats::kHalfBins);
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(x + i);
    __m128 a = _mm_min_ps(_mm_mul_ps(_mm_andnot_ps(sign, v), vscale), vcap);
    __m128i m = _mm_cvttps_epi32(a);
    __m128i neg = _mm_castps_si128(_mm_cmplt_ps(v, _mm_setzero_ps()));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + i),
                     _mm_add_epi32(half, _mm_xor_si128(m, neg)));
  }
#endif
  for (; i < n; ++i) idx[i] = BinIndex(x[i], scale);
}

// Min and max ignoring NaN, and the NaN count, of a block.
void ScanBlock(const float* x, int64_t n, float* lo_out, float* hi_out, int64_t* nan_out) {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  int64_t nans = 0;
  int64_t i = 0;
#if defined(__SSE2__)
  __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  __m128i vnan = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(x + i);
    vlo = _mm_min_ps(v, vlo);  // returns vlo when v is NaN
    vhi = _mm_max_ps(v, vhi);
    vnan = _mm_sub_epi32(vnan, _mm_castps_si128(_mm_cmpunord_ps(v, v)));
  }
  alignas(16) float l[4], h[4];
  alignas(16) int32_t c[4];
  _mm_store_ps(l, vlo);
  _mm_store_ps(h, vhi);
  _mm_store_si128(reinterpret_cast<__m128i*>(c), vnan);
  for (int k = 0; k < 4; ++k) {
    lo = std::min(lo, l[k]);
    hi = std::max(hi, h[k]);
    nans += c[k];
  }
#endif
  for (; i < n; ++i) {
    float v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nans += (v != v);
  }
  *lo_out = lo;
  *hi_out = hi;
  *nan_out = nans;
}

#if defined(__x86_64__)
#define QCC_STATS_AVX512 __attribute__((target("avx512f")))

// ScanBlock with 16 lanes and two independent accumulators (the SSE loop waits on minps's
// latency). vminps/vmaxps return their second operand when the first is NaN, as above.
QCC_STATS_AVX512 void ScanBlockAvx512(const float* x, int64_t n, float* lo_out, float* hi_out,
                                      int64_t* nan_out) {
  const float inf = std::numeric_limits<float>::infinity();
  __m512 lo0 = _mm512_set1_ps(inf), lo1 = lo0, hi0 = _mm512_set1_ps(-inf), hi1 = hi0;
  int64_t nans = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    lo0 = _mm512_min_ps(a, lo0);
    lo1 = _mm512_min_ps(b, lo1);
    hi0 = _mm512_max_ps(a, hi0);
    hi1 = _mm512_max_ps(b, hi1);
    nans += __builtin_popcount(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)) +
            __builtin_popcount(_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q));
  }
  float lo = _mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1));
  float hi = _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1));
  for (; i < n; ++i) {
    const float v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nans += (v != v);
  }
  *lo_out = lo;
  *hi_out = hi;
  *nan_out = nans;
}

// ComputeBinIndices for 16 lanes at a time, leaving out the centre bin [0, w) (a ReLU output's
// zeros): the other indices are packed into `idx` and their number returned, the centre's count
// added to `*centre`. The same indices as BinIndex. `idx` must hold n entries: each step
// compresses in a register and stores all 16 lanes at idx + k (k <= i, so within the first
// i + 16 <= n), as vpcompressd to memory is microcoded on AMD Zen 4 (2.7 against 0.7 ns a value
// for the whole Add there).
QCC_STATS_AVX512 int64_t BinIndicesOffCentreAvx512(const float* x, int64_t n, float scale,
                                                   int32_t* idx, int64_t* centre) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 vcap = _mm512_set1_ps(kMaxM);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const __m512i half = _mm512_set1_epi32(TensorStats::kHalfBins);
  const __m512i ones = _mm512_set1_epi32(-1);
  int64_t k = 0, in_centre = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), magnitude));
    const __m512i m = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_mul_ps(a, vscale), vcap));
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512i b = _mm512_add_epi32(half, _mm512_mask_xor_epi32(m, neg, m, ones));
    const __mmask16 off = _mm512_cmpneq_epi32_mask(b, half);
    _mm512_storeu_si512(idx + k, _mm512_maskz_compress_epi32(off, b));
    const int stored = __builtin_popcount(off);
    k += stored;
    in_centre += 16 - stored;
  }
  for (; i < n; ++i) {
    const int32_t b = BinIndex(x[i], scale);
    if (b == TensorStats::kHalfBins) {
      ++in_centre;
    } else {
      idx[k++] = b;
    }
  }
  *centre += in_centre;
  return k;
}
#endif

// Min and max ignoring NaN, and the NaN count, of a block: the widest loop this CPU runs.
void ScanBlockBest(const float* x, int64_t n, float* lo, float* hi, int64_t* nans) {
#if defined(__x86_64__)
  if (cpu::Cpu().avx512f) return ScanBlockAvx512(x, n, lo, hi, nans);
#endif
  ScanBlock(x, n, lo, hi, nans);
}

// The histogram indices of a NaN/inf-free block, packed into `idx` without the centre bin's
// (counted into `*centre`) where the CPU has AVX-512; all of them otherwise. Returns how many
// indices `idx` holds.
int64_t BinIndicesBest(const float* x, int64_t n, float scale, int32_t* idx, int64_t* centre) {
#if defined(__x86_64__)
  if (cpu::Cpu().avx512f) return BinIndicesOffCentreAvx512(x, n, scale, idx, centre);
#endif
  ComputeBinIndices(x, n, scale, idx);
  return n;
}

// Adds `src` (at range 2^from) into `dst` (at range 2^to, to >= from), merging bins.
void RebinInto(const std::vector<int64_t>& src, int from, int to, std::vector<int64_t>* dst) {
  const int shift = std::min(to - from, 30);
  const int h = TensorStats::kHalfBins;
  for (int m = 0; m < h; ++m) {
    (*dst)[h + (m >> shift)] += src[h + m];
    (*dst)[h - 1 - (m >> shift)] += src[h - 1 - m];
  }
}

}  // namespace

// kLanes interleaved 32-bit histograms, flushed into the 64-bit bins.
struct TensorStats::SubHistograms {
  uint32_t counts[kLanes * kBins];
  int64_t pending = 0;

  void Clear() {
    std::memset(counts, 0, sizeof(counts));
    pending = 0;
  }
  void FlushInto(std::vector<int64_t>* bins) {
    if (pending == 0) return;
    for (int b = 0; b < kBins; ++b) {
      (*bins)[b] += static_cast<int64_t>(counts[b]) + counts[kBins + b] + counts[2 * kBins + b] +
                    counts[3 * kBins + b];
    }
    Clear();
  }
};

int RangeLog2For(float abs_value) {
  if (!(abs_value > 0.0f)) return TensorStats::kMinRangeLog2;
  int k = 0;
  std::frexp(abs_value, &k);  // abs_value = f * 2^k, f in [0.5, 1): 2^(k-1) <= v < 2^k
  return std::clamp(k, TensorStats::kMinRangeLog2, TensorStats::kMaxRangeLog2);
}

float TensorStats::abs_max() const {
  return has_finite() ? std::max(std::fabs(min_), std::fabs(max_)) : 0.0f;
}

double TensorStats::range() const {
  return range_log2_ == kNoRange ? 0.0 : std::ldexp(1.0, range_log2_);
}

double TensorStats::bin_width() const {
  return range_log2_ == kNoRange ? 0.0 : std::ldexp(1.0, range_log2_ - TensorStats::kHalfBinsLog2);
}

std::vector<int64_t> TensorStats::AbsHistogram() const {
  std::vector<int64_t> h(kHalfBins);
  for (int m = 0; m < kHalfBins; ++m) h[m] = bins_[kHalfBins + m] + bins_[kHalfBins - 1 - m];
  return h;
}

void TensorStats::GrowRange(int e) {
  if (range_log2_ == kNoRange) {
    range_log2_ = e;
    return;
  }
  if (e <= range_log2_) return;
  std::vector<int64_t> grown(kBins, 0);
  RebinInto(bins_, range_log2_, e, &grown);
  bins_.swap(grown);
  range_log2_ = e;
}

void TensorStats::Add(const float* x, int64_t n) {
  thread_local SubHistograms sub_storage;
  SubHistograms* sub = n >= kSubHistogramMin ? &sub_storage : nullptr;
  if (sub != nullptr) sub->Clear();
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    float lo, hi;
    int64_t nans;
    ScanBlockBest(x + start, len, &lo, &hi, &nans);
    if (nans == 0 && std::isfinite(lo) && std::isfinite(hi)) {
      AddFiniteBlock(x + start, len, lo, hi, sub);
    } else {
      AddMixedBlock(x + start, len, sub);
    }
    // Each lane counter gains at most kBlock / kLanes per block: flush long before 2^32.
    if (sub != nullptr && sub->pending >= (int64_t{1} << 30)) sub->FlushInto(&bins_);
  }
  if (sub != nullptr) sub->FlushInto(&bins_);
  count_ += n;
}

void TensorStats::AddMixedBlock(const float* x, int64_t n, SubHistograms* sub) {
  float finite[kBlock];
  int64_t k = 0;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) {
      ++nan_;
    } else if (std::isinf(v)) {
      ++(v > 0 ? posinf_ : neginf_);
    } else {
      finite[k++] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (k > 0) AddFiniteBlock(finite, k, lo, hi, sub);
}

void TensorStats::AddFiniteBlock(const float* x, int64_t n, float lo, float hi,
                                 SubHistograms* sub) {
  // -0.0 + 0.0 == +0.0: min/max must not depend on which zero came first.
  min_ = std::min(min_, lo + 0.0f);
  max_ = std::max(max_, hi + 0.0f);
  const int e = RangeLog2For(std::max(std::fabs(lo), std::fabs(hi)));
  if (range_log2_ == kNoRange || e > range_log2_) {
    if (sub != nullptr) sub->FlushInto(&bins_);  // its counts are at the old range
    GrowRange(e);
  }
  // scale = kHalfBins / range = 2^(kHalfBinsLog2 - e): a power of two, so |x| * scale is exact.
  const float scale = std::ldexp(1.0f, kHalfBinsLog2 - range_log2_);
  int32_t idx[kBlock];
  int64_t centre = 0;
  const int64_t k = BinIndicesBest(x, n, scale, idx, &centre);
  if (sub == nullptr) {
    bins_[kHalfBins] += centre;
    for (int64_t i = 0; i < k; ++i) ++bins_[idx[i]];
    return;
  }
  uint32_t* c = sub->counts;
  c[kHalfBins] += static_cast<uint32_t>(centre);
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    ++c[idx[i]];
    ++c[kBins + idx[i + 1]];
    ++c[2 * kBins + idx[i + 2]];
    ++c[3 * kBins + idx[i + 3]];
  }
  for (; i < k; ++i) ++c[idx[i]];
  sub->pending += n;
}

void TensorStats::Merge(const TensorStats& other) {
  count_ += other.count_;
  nan_ += other.nan_;
  posinf_ += other.posinf_;
  neginf_ += other.neginf_;
  if (other.range_log2_ == kNoRange) return;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  const int e = std::max(range_log2_, other.range_log2_);
  GrowRange(e);
  RebinInto(other.bins_, other.range_log2_, e, &bins_);
}

bool TensorStats::operator==(const TensorStats& o) const {
  return count_ == o.count_ && nan_ == o.nan_ && posinf_ == o.posinf_ && neginf_ == o.neginf_ &&
         range_log2_ == o.range_log2_ && bins_ == o.bins_ &&
         (!has_finite() || (min_ == o.min_ && max_ == o.max_));
}

absl::StatusOr<TensorStats> TensorStats::FromParts(float min, float max, int64_t count, int64_t nan,
                                                   int64_t posinf, int64_t neginf, double range,
                                                   std::vector<int64_t> bins) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  constexpr int64_t kMaxCount = int64_t{1} << 60;  // keeps every sum below overflow
  const std::pair<const char*, int64_t> counts[] = {
      {"count", count}, {"nan", nan}, {"posinf", posinf}, {"neginf", neginf}};
  for (const auto& [name, v] : counts) {
    if (v < 0 || v > kMaxCount) return bad("\"", name, "\" is ", v, ": expected 0 to 2^60");
  }
  if (nan + posinf + neginf > count) {
    return bad("nan + posinf + neginf = ", nan + posinf + neginf, " exceeds \"count\" ", count);
  }
  if (bins.size() != static_cast<size_t>(kBins)) {
    return bad("histogram has ", bins.size(), " bins, expected ", kBins);
  }
  int64_t total = 0;
  for (int b = 0; b < kBins; ++b) {
    if (bins[b] < 0 || bins[b] > kMaxCount) return bad("histogram bin ", b, " count ", bins[b]);
    total += bins[b];
    if (total > kMaxCount) return bad("histogram counts sum past 2^60");
  }
  TensorStats s;
  s.count_ = count;
  s.nan_ = nan;
  s.posinf_ = posinf;
  s.neginf_ = neginf;
  const int64_t finite = s.finite_count();
  if (total != finite) {
    return bad("histogram counts sum to ", total, " but count - nan - posinf - neginf = ", finite);
  }
  if (finite == 0) {
    if (range != 0.0) return bad("\"range\" is ", range, " but no finite value was counted");
    s.bins_ = std::move(bins);
    return s;
  }
  int k = 0;
  if (!(range > 0.0) || !std::isfinite(range) || std::frexp(range, &k) != 0.5) {
    return bad("\"range\" ", range, " is not a positive power of two");
  }
  const int e = k - 1;
  if (!std::isfinite(min) || !std::isfinite(max) || min > max) {
    return bad("\"min\" ", min, " and \"max\" ", max, " are not finite with min <= max");
  }
  const float amax = std::max(std::fabs(min), std::fabs(max));
  if (e != RangeLog2For(amax)) {
    return bad("\"range\" ", range, " is not the smallest power of two above max |x| = ", amax,
               " (expected ", std::ldexp(1.0, RangeLog2For(amax)), ")");
  }
  const float scale = std::ldexp(1.0f, kHalfBinsLog2 - e);
  const int first = BinIndex(min, scale), last = BinIndex(max, scale);
  if (bins[first] == 0 || bins[last] == 0) {
    return bad("the histogram bins of \"min\" (", first, ") and \"max\" (", last,
               ") must not be empty");
  }
  for (int b = 0; b < kBins; ++b) {
    if ((b < first || b > last) && bins[b] != 0) {
      return bad("histogram bin ", b, " holds ", bins[b], " values outside [min, max]");
    }
  }
  s.range_log2_ = e;
  s.min_ = min + 0.0f;
  s.max_ = max + 0.0f;
  s.bins_ = std::move(bins);
  return s;
}

}  // namespace qcc::calib
