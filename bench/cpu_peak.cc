// This CPU's arithmetic peak for the instructions qcc's kernels use, measured: register-only
// loops of independent fused multiply-adds (fp32: vfmadd231ps on zmm and on ymm) and of int8 dot
// products (vpdpbusd on zmm: 64 multiply-adds each; without VNNI, qcc's exact AVX2 form,
// vpmaddwd + vpaddd on int16: 16 each), on 1..T threads at once. The roofline lines of
// bench/compare-ort divide a plan's multiply-adds per second by these. One line each:
//   cpu_peak: isa=avx512-fma threads=1 gflops=...      (2 operations per multiply-add)
//   cpu_peak: isa=avx512-vnni threads=1 gops=...
// amx-int8 is tdpbssd on four independent 16 x 16 int32 tiles (16 * 16 * 64 multiply-adds each),
// where the CPU has AMX-INT8 and Linux grants the tile state (qcc's int8 convolutions of >= 32
// channels per group run on it; the others on avx512-vnni).
// avx2-u8s8 is not a qcc kernel's: it is ONNX Runtime's AVX2 u8s8 step (vpmaddubsw, whose int16
// pair sums saturate, + vpmaddwd by ones + vpaddd: 32 multiply-adds), for comparison.
// An ISA this CPU lacks prints nothing. Each figure is the best of three tries of about
// --seconds each.
//
//   build/bench/cpu_peak [--threads T] [--seconds S]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_features.h"  // Cpu().amx_int8: CPUID and the OS grant

namespace {

// 12 independent chains hide the 4-cycle latency of two issue ports.
constexpr int kChains = 12;

/// Runs `iters` rounds of kChains vfmadd231ps zmm; returns a value that depends on every one.
__attribute__((target("avx512f"), noinline)) float FmaZmm(long iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  float t = 0;
  for (float v : lanes) t += v;
  return t;
}

__attribute__((target("avx2,fma"), noinline)) float FmaYmm(long iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float t = 0;
  for (float v : lanes) t += v;
  return t;
}

__attribute__((target("avx512f,avx512vnni"), noinline)) float DpbusdZmm(long iters) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  int32_t lanes[16];
  _mm512_storeu_si512(lanes, s);
  int64_t t = 0;
  for (int32_t v : lanes) t += v;
  return static_cast<float>(t);
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

/// Rounds of 4 tdpbssd (C tiles 0-3 from A tiles 4, 5 and B tiles 6, 7, all 16 x 64 bytes).
__attribute__((target("amx-tile,amx-int8"), noinline)) float TdpbssdTiles(long iters) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  alignas(64) int8_t ones[16 * 64];
  for (int8_t& v : ones) v = 1;
  alignas(64) int32_t out[16 * 16];
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  for (long n = 0; n < iters; ++n) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  int64_t t = 0;
  _tile_stored(0, out, 64);
  for (int32_t v : out) t += v;
  _tile_stored(3, out, 64);
  for (int32_t v : out) t += v;
  _tile_release();
  return static_cast<float>(t);
}

// The int16 and u8s8 loops feed each chain's own value back into the multiply, so that no
// product is loop-invariant; kIntChains named accumulators (an array of them was spilled to the
// stack by GCC, halving the rate) cover the multiply-and-add latency.
constexpr int kIntChains = 10;
#define QCC_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)

/// qcc's exact AVX2 int8 step (16 multiply-adds): vpmaddwd + vpaddd.
struct MaddwdStep {
  __attribute__((target("avx2"))) __m256i operator()(__m256i c) const {
    return _mm256_add_epi32(c, _mm256_madd_epi16(c, _mm256_set1_epi16(3)));
  }
};

/// ONNX Runtime's AVX2 u8s8 step (32 multiply-adds, the int16 pair sums saturating):
/// vpmaddubsw + vpmaddwd by ones + vpaddd.
struct MaddubswStep {
  __attribute__((target("avx2"))) __m256i operator()(__m256i c) const {
    const __m256i prod = _mm256_maddubs_epi16(c, _mm256_set1_epi8(-2));
    return _mm256_add_epi32(c, _mm256_madd_epi16(prod, _mm256_set1_epi16(1)));
  }
};

/// Rounds of kIntChains `Step`s; returns a value that depends on every one.
template <typename Step>
__attribute__((target("avx2"), noinline)) float IntChains(long iters) {
  const Step step;
#define QCC_INIT(i) __m256i c##i = _mm256_set1_epi32(i + 1);
#define QCC_STEP(i) c##i = step(c##i);
#define QCC_SUM(i) s = _mm256_add_epi32(s, c##i);
  QCC_CHAINS(QCC_INIT)
  for (long n = 0; n < iters; ++n) {
    QCC_CHAINS(QCC_STEP)
  }
  __m256i s = _mm256_setzero_si256();
  QCC_CHAINS(QCC_SUM)
#undef QCC_INIT
#undef QCC_STEP
#undef QCC_SUM
  int32_t lanes[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), s);
  int64_t t = 0;
  for (int32_t v : lanes) t += v;
  return static_cast<float>(t);
}

#undef QCC_CHAINS

/// Operations per second of `fn` (ops_per_iter per round) on `threads` threads at once, each
/// running for about `seconds`.
double Measure(float (*fn)(long), double ops_per_iter, int threads, double seconds) {
  // Calibrate the round count on one thread.
  long iters = 1 << 16;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile float sink = fn(iters);
    (void)sink;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.05) {
      iters = static_cast<long>(iters * seconds / s);
      break;
    }
    iters *= 4;
  }
  // The best of three: a peak is what the core can do, and this VM's other tenants only slow
  // a try down.
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::thread> pool;
    std::vector<float> sinks(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sinks[t] = fn(iters); });
    for (std::thread& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, ops_per_iter * static_cast<double>(iters) * threads / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int max_threads = 2;
  double seconds = 0.3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) {
      max_threads = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--seconds") == 0) {
      seconds = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "cpu_peak: unknown flag '%s' (--threads T, --seconds S)\n", argv[i]);
      return 2;
    }
  }
  if (max_threads < 1 || seconds <= 0) {
    std::fprintf(stderr, "cpu_peak: --threads must be >= 1 and --seconds > 0\n");
    return 2;
  }
  __builtin_cpu_init();
  struct Isa {
    const char* name;
    const char* unit;
    bool present;
    float (*fn)(long);
    double ops_per_iter;  // 2 operations per multiply-add
  };
  const Isa isas[] = {
      {"avx512-fma", "gflops", __builtin_cpu_supports("avx512f") != 0, FmaZmm, kChains * 16 * 2.0},
      {"avx2-fma", "gflops",
       __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0, FmaYmm,
       kChains * 8 * 2.0},
      {"avx512-vnni", "gops", __builtin_cpu_supports("avx512vnni") != 0, DpbusdZmm,
       kChains * 64 * 2.0},
      {"amx-int8", "gops", qcc::cpu::Cpu().amx_int8, TdpbssdTiles, 4 * 16 * 16 * 64 * 2.0},
      {"avx2-int16", "gops", __builtin_cpu_supports("avx2") != 0, IntChains<MaddwdStep>,
       kIntChains * 16 * 2.0},
      {"avx2-u8s8", "gops", __builtin_cpu_supports("avx2") != 0, IntChains<MaddubswStep>,
       kIntChains * 32 * 2.0},
  };
  for (const Isa& isa : isas) {
    if (!isa.present) continue;
    for (int t = 1; t <= max_threads; ++t) {
      const double ops = Measure(isa.fn, isa.ops_per_iter, t, seconds);
      std::printf("cpu_peak: isa=%s threads=%d %s=%.1f\n", isa.name, t, isa.unit, ops / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}
