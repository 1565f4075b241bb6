// Pieces shared by the int8 kernels (qconv.cc, qgemm.cc and their *_vnni.cc fast paths); not a
// public header.
//
// The VNNI files are compiled for any x86-64: their functions carry QCC_VNNI (a target
// attribute), and the dispatchers call them only when QInt8HasVnni(). A per-file -m flag is
// avoided on purpose: inline functions and templates from shared headers instantiated in such a
// file would be AVX-512 code that the linker may pick for every caller.
#ifndef QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_
#define QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/lane_masks.h"  // LowBits64
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"

#define QCC_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2")))

namespace qcc::cpu::internal {

/// int32 addition modulo 2^32 (the accumulators' arithmetic; no signed-overflow UB).
inline int32_t WrapAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

/// An int64 sum reduced modulo 2^32 to int32.
inline int32_t Wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

/// True when RequantizeX16 gives Requantize's bits for these multipliers and output zero
/// point: every multiplier finite (so float(acc) * m is never NaN) and zp_out an int8 value.
/// The dispatchers run the reference otherwise.
inline bool VnniRequantApplies(const float* multiplier, int64_t n, int32_t zp_out) {
  if (zp_out < -128 || zp_out > 127) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (!(multiplier[i] - multiplier[i] == 0.0f)) return false;  // NaN or infinite
  }
  return true;
}

/// Requantize of 16 lanes (RequantizeX16 below) left as int32 lanes: the int8 values before
/// they are packed to bytes.
QCC_VNNI inline __m512i RequantizeI32X16(__m512i acc, __m512 multiplier, __m512i zp, __m512 lo_f,
                                         __m512 hi_f) {
  constexpr __mmask16 kAll = 0xFFFF;
  __m512 x = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, acc), multiplier);
  x = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, x, lo_f), hi_f);
  const __m512i q =
      _mm512_maskz_cvt_roundps_epi32(kAll, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_add_epi32(q, zp);
}

/// Requantize (support/quantize.h) of 16 int32 lanes to 16 int8 under VnniRequantApplies;
/// `lo_f`, `hi_f` are float(lo - zp), float(hi - zp). Equal to the scalar function because:
/// the product is the same single fp32 multiply and is not NaN; rounding half to even is
/// monotone and fixes integers, so clamping to the integers [lo - zp, hi - zp] (within
/// Saturate's +-2^22) before rounding equals rounding, adding zp and clamping to [lo, hi]
/// after; and the conversion rounds half to even (explicitly, as Saturate's default-mode
/// rounding does).
QCC_VNNI inline __m128i RequantizeX16(__m512i acc, __m512 multiplier, __m512i zp, __m512 lo_f,
                                      __m512 hi_f) {
  // maskz forms with every lane set: GCC 12's plain forms read _mm512_undefined_*, which it
  // reports as uninitialized.
  return _mm512_maskz_cvtepi32_epi8(0xFFFF, RequantizeI32X16(acc, multiplier, zp, lo_f, hi_f));
}

/// True when RequantizePackX48 gives Requantize's bits (besides VnniRequantApplies): [lo, hi]
/// within int8 and every |multiplier| at most 0.5, so |float(acc) * m| <= 2^30 and its rounding
/// plus zp is exact in int32.
inline bool PackedRequantApplies(const float* multiplier, int64_t n, int32_t lo, int32_t hi) {
  if (lo < -128 || hi > 127 || lo > hi) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::fabs(multiplier[i]) <= 0.5f)) return false;
  }
  return true;
}

/// RequantizePackX48's constants.
struct alignas(64) PackedRequantV {
  __m512i zp;      // zp_out in every int32 lane
  __m512i lo, hi;  // lo, hi in every byte
  __m512i order;   // dword k: the packed dword (4 * (k % 4) + k / 4)
  bool add_zp;     // zp_out != 0
};

QCC_VNNI inline PackedRequantV MakePackedRequantV(int32_t zp_out, int32_t lo, int32_t hi) {
  PackedRequantV k;
  k.zp = _mm512_set1_epi32(zp_out);
  k.lo = _mm512_set1_epi8(static_cast<char>(lo));
  k.hi = _mm512_set1_epi8(static_cast<char>(hi));
  k.order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  k.add_zp = zp_out != 0;
  return k;
}

/// Requantize of NV (1 to 3) vectors of 16 int32 lanes (v<j> scaled by m<j>), as int8 in lane
/// order in the low 16 * NV bytes, under PackedRequantApplies. The same bits as RequantizeX16:
/// round(float(acc) * m) + zp is exact in int32 there, the two saturating packs make it int8
/// saturated, and clamping that to [lo, hi] (within int8) equals Saturate's clamp. Per vector it
/// is 3 or 4 instructions plus a share of 2 packs, a permute and the byte clamp, where
/// RequantizeX16 takes 8 (its float clamp and 2-uop vpmovsdb).
QCC_VNNI inline __m512i PackedRequantLanes(__m512i acc, __m512 m, const PackedRequantV& k) {
  constexpr __mmask16 kAll = 0xFFFF;  // maskz forms: see RequantizeX16
  const __m512i q =
      _mm512_maskz_cvt_roundps_epi32(kAll, _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, acc), m),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return k.add_zp ? _mm512_add_epi32(q, k.zp) : q;
}

template <int NV>
QCC_VNNI inline __m512i RequantizePackX48(__m512i v0, __m512i v1, __m512i v2, __m512 m0, __m512 m1,
                                          __m512 m2, const PackedRequantV& k) {
  const __m512i a = PackedRequantLanes(v0, m0, k);
  const __m512i b = NV > 1 ? PackedRequantLanes(v1, m1, k) : a;
  const __m512i c = NV > 2 ? PackedRequantLanes(v2, m2, k) : a;
  // Per 128-bit lane L: words a[4L..4L+3], b[4L..]; then bytes a, b, c, c of it as 4 dwords.
  const __m512i ab = _mm512_packs_epi32(a, b);
  const __m512i cc = NV > 2 ? _mm512_packs_epi32(c, c) : ab;
  const __m512i bytes = _mm512_maskz_permutexvar_epi32(0xFFFF, k.order, _mm512_packs_epi16(ab, cc));
  return _mm512_min_epi8(_mm512_max_epi8(bytes, k.lo), k.hi);
}

/// The quantized Add fused after a convolution (QConvParams::residual) as vector constants;
/// `lo`, `hi` are float(add.lo - add.zp_out), float(add.hi - add.zp_out).
struct alignas(64) ResidualAddV {
  __m512 mult_a, mult_b, lo, hi;
  __m512i zp_a, zp_b, zp_out;
};

/// True when AddResidualX16 gives AddValue's bits for `add`: both multipliers at most 1e36 in
/// magnitude (so neither product is infinite and their sum never NaN), the zero points and
/// [lo, hi] within int8.
inline bool ResidualAddApplies(const AddS8Params& add) {
  auto int8 = [](int32_t v) { return v >= -128 && v <= 127; };
  return std::fabs(add.mult_a) <= 1e36f && std::fabs(add.mult_b) <= 1e36f && int8(add.zp_a) &&
         int8(add.zp_b) && int8(add.zp_out) && int8(add.lo) && int8(add.hi) && add.lo <= add.hi;
}

QCC_VNNI inline ResidualAddV MakeResidualAddV(const AddS8Params& add) {
  ResidualAddV v;
  v.mult_a = _mm512_set1_ps(add.mult_a);
  v.mult_b = _mm512_set1_ps(add.mult_b);
  v.lo = _mm512_set1_ps(static_cast<float>(add.lo - add.zp_out));
  v.hi = _mm512_set1_ps(static_cast<float>(add.hi - add.zp_out));
  v.zp_a = _mm512_set1_epi32(add.zp_a);
  v.zp_b = _mm512_set1_epi32(add.zp_b);
  v.zp_out = _mm512_set1_epi32(add.zp_out);
  return v;
}

/// AddValue (support/quantize.h) of 16 lanes under ResidualAddApplies: `a` the conv's int8
/// results as int32 lanes, `b` the 16 residual bytes. The same two products (explicitly rounded,
/// so never contracted into a fused multiply-add) and one sum as the scalar function; clamping
/// to [lo - zp, hi - zp] before rounding equals Saturate's round-then-clamp (RequantizeX16's
/// argument), and with finite products the sum is never NaN.
QCC_VNNI inline __m128i AddResidualX16(__m512i a, __m128i b, const ResidualAddV& k) {
  // maskz forms with every lane set: see RequantizeX16.
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 ta = _mm512_maskz_mul_round_ps(
      kAll, _mm512_maskz_cvtepi32_ps(kAll, _mm512_sub_epi32(a, k.zp_a)), k.mult_a, kNearest);
  const __m512i b32 = _mm512_maskz_cvtepi8_epi32(kAll, b);
  const __m512 tb = _mm512_maskz_mul_round_ps(
      kAll, _mm512_maskz_cvtepi32_ps(kAll, _mm512_sub_epi32(b32, k.zp_b)), k.mult_b, kNearest);
  __m512 x = _mm512_maskz_add_round_ps(kAll, ta, tb, kNearest);
  x = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, x, k.lo), k.hi);
  const __m512i q = _mm512_maskz_cvt_roundps_epi32(kAll, x, kNearest);
  return _mm512_maskz_cvtepi32_epi8(kAll, _mm512_add_epi32(q, k.zp_out));
}

/// Index vectors of Transpose16x16Bytes: stage A (two, for rows given as 16 consecutive bytes
/// each) and stage B (two).
struct ByteTransposeIndex {
  alignas(64) uint8_t v[4][64];
};
inline ByteTransposeIndex MakeByteTransposeIndex() {
  ByteTransposeIndex t;
  for (int i = 0; i < 64; ++i) {
    const int j = i / 8, row = i % 8;  // stage A: byte 8 * column + row
    t.v[0][i] = static_cast<uint8_t>(16 * row + j);
    t.v[1][i] = static_cast<uint8_t>(16 * row + j + 8);
    const int jj = i / 16, c = i % 16;  // stage B: byte 16 * jj + c, column jj (or 4 + jj)
    const int from = c < 8 ? c : 64 + c - 8;
    t.v[2][i] = static_cast<uint8_t>(8 * jj + from);
    t.v[3][i] = static_cast<uint8_t>(8 * (4 + jj) + from);
  }
  return t;
}

/// Transposes the 16 x 16 bytes in z (z[k] holds rows 4k .. 4k + 3, 16 bytes each; or another
/// order, given stage-A indices to match) into o (o[m] holds rows 4m .. 4m + 3 of the
/// transpose). `idx`: a ByteTransposeIndex's four vectors.
QCC_VNNI inline void Transpose16x16Bytes(const __m512i z[4], const __m512i idx[4], __m512i o[4]) {
  // Stage A: for rows 0..7 (z[0], z[1]) and 8..15 (z[2], z[3]), the 8 x 8 sub-blocks of
  // columns 0..7 and 8..15, column-major (byte 8 * column + row).
  const __m512i a01_lo = _mm512_permutex2var_epi8(z[0], idx[0], z[1]);
  const __m512i a01_hi = _mm512_permutex2var_epi8(z[0], idx[1], z[1]);
  const __m512i a23_lo = _mm512_permutex2var_epi8(z[2], idx[0], z[3]);
  const __m512i a23_hi = _mm512_permutex2var_epi8(z[2], idx[1], z[3]);
  // Stage B: transpose row j of columns 0..7 of both halves (rows 0..7, then 8..15).
  o[0] = _mm512_permutex2var_epi8(a01_lo, idx[2], a23_lo);
  o[1] = _mm512_permutex2var_epi8(a01_lo, idx[3], a23_lo);
  o[2] = _mm512_permutex2var_epi8(a01_hi, idx[2], a23_hi);
  o[3] = _mm512_permutex2var_epi8(a01_hi, idx[3], a23_hi);
}

/// The channel quads of 64 positions: r[q] holds 64 bytes of channel q; out[i] gets the
/// dwords (x0, x1, x2, x3) of positions 16 i .. 16 i + 15, each byte flipped (x ^ 0x80), by
/// byte and word unpacks (which interleave within 128-bit lanes) and a 4 x 4 transpose of the
/// 128-bit lanes (maskz forms: see RequantizeX16).
QCC_VNNI inline void InterleaveQuads64(const __m512i r[4], __m512i out[4]) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i a = _mm512_unpacklo_epi8(r[0], r[1]), b = _mm512_unpackhi_epi8(r[0], r[1]);
  const __m512i c = _mm512_unpacklo_epi8(r[2], r[3]), d = _mm512_unpackhi_epi8(r[2], r[3]);
  // q<i> holds, in 128-bit lane L, the quads of positions 16 L + 4 i .. 16 L + 4 i + 3.
  const __m512i q0 = _mm512_unpacklo_epi16(a, c), q1 = _mm512_unpackhi_epi16(a, c);
  const __m512i q2 = _mm512_unpacklo_epi16(b, d), q3 = _mm512_unpackhi_epi16(b, d);
  const __m512i t0 = _mm512_maskz_shuffle_i32x4(0xFFFF, q0, q1, 0x44);
  const __m512i t1 = _mm512_maskz_shuffle_i32x4(0xFFFF, q0, q1, 0xEE);
  const __m512i t2 = _mm512_maskz_shuffle_i32x4(0xFFFF, q2, q3, 0x44);
  const __m512i t3 = _mm512_maskz_shuffle_i32x4(0xFFFF, q2, q3, 0xEE);
  out[0] = _mm512_xor_si512(_mm512_maskz_shuffle_i32x4(0xFFFF, t0, t2, 0x88), flip);
  out[1] = _mm512_xor_si512(_mm512_maskz_shuffle_i32x4(0xFFFF, t0, t2, 0xDD), flip);
  out[2] = _mm512_xor_si512(_mm512_maskz_shuffle_i32x4(0xFFFF, t1, t3, 0x88), flip);
  out[3] = _mm512_xor_si512(_mm512_maskz_shuffle_i32x4(0xFFFF, t1, t3, 0xDD), flip);
}

/// True when the VNNI path of w's layout adds p.residual in its epilogue (direct, pointwise and
/// small-map layouts, under VnniRequantApplies and ResidualAddApplies); QConv otherwise runs
/// the conv, then AddS8 over its output.
bool QConvFusesResidual(const QConvParams& p, const PackedQConvWeights& w);

/// Fills w's VNNI layout (direct or depthwise, per the header's rules) from p.weights; with
/// `amx` (QInt8HasAmx()), the AMX layout for the convolutions QConvAmxTakes.
void PackQConvVnni(const QConvParams& p, PackedQConvWeights* w, bool amx);
/// True when the AMX tile path runs `p` (qconv_amx_vnni.cc): not depthwise, and enough channels
/// per group for the tile multiplies' 64-byte rows to pay.
bool QConvAmxTakes(const QConvParams& p);
/// The AMX layout of p's weights, the bytes of one thread's buffers, and the AMX path
/// (qconv_amx_vnni.cc; CPUs with AMX-INT8 only).
void PackQConvAmx(const QConvParams& p, PackedQConvWeights* w);
int64_t QConvAmxThreadBytes(const QConvParams& p);
void DirectConvAmx(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace);
/// QConvWorkspaceBytes for the VNNI layouts.
int64_t QConvVnniWorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w);
/// QConv for the VNNI layouts; call only when QInt8HasVnni().
QCC_VNNI void QConvVnni(const QConvParams& p, const PackedQConvWeights& w, void* workspace);

/// True when the depthwise kernel takes `p`: C == group and a 64-byte row window covers the
/// taps of 16 consecutive outputs.
bool QConvDepthwiseVnniFits(const QConvParams& p);
/// Bytes of one thread's buffers of the depthwise kernels (the per-plane kernel's padded plane,
/// or the channel-blocked kernel's), a 64-byte multiple.
int64_t QConvDepthwiseVnniThreadBytes(const QConvParams& p);
/// Fills w's depthwise VNNI layout from p.weights (QConvDepthwiseVnniFits(p)): the per-plane
/// kernel's weights, then (when C == K) the channel-blocked kernel's.
void PackQConvDepthwiseVnni(const QConvParams& p, PackedQConvWeights* w);
/// How many slices of output channels the VNNI direct path splits one image into for
/// p.num_threads threads (1: the threads split its positions); see DirectSlices.
int64_t QConvDirectSlices(const QConvParams& p);
/// True when QConvDepthwiseVnni runs the channel-blocked kernel (qconv_depthwise_blocked_vnni.cc)
/// for `p`: one output per channel, dilation_w 1, small maps.
bool QConvDepthwiseBlockedRuns(const QConvParams& p);
/// Bytes of one thread's buffers of the channel-blocked kernel (64-byte multiples).
int64_t QConvDepthwiseBlockedThreadBytes(const QConvParams& p);
/// Bytes of the channel-blocked kernel's weights, and their packing into `dst`.
int64_t QConvDepthwiseBlockedPackedBytes(const QConvParams& p);
void PackQConvDepthwiseBlocked(const QConvParams& p, uint8_t* dst);
/// The channel-blocked kernel; `packed` and `workspace` are 64-byte aligned.
QCC_VNNI void QConvDepthwiseBlocked(const QConvParams& p, const int32_t* correction,
                                    const uint8_t* packed, uint8_t* workspace);
/// QConv for the depthwise layout (the channel-blocked kernel when QConvDepthwiseBlockedRuns);
/// `workspace` is 64-byte aligned, p.num_threads thread buffers.
QCC_VNNI void QConvDepthwiseVnni(const QConvParams& p, const PackedQConvWeights& w,
                                 uint8_t* workspace);

/// True when the VNNI layout of `p` is the pointwise one (qconv_pointwise_vnni.cc): a 1x1
/// convolution, stride 1, no pads, one group, K >= 16, on a map of at most 64 positions.
bool QConvPointwiseVnniPacks(const QConvParams& p);
/// Fills w's pointwise VNNI layout from p.weights.
void PackQConvPointwiseVnni(const QConvParams& p, PackedQConvWeights* w);
/// Bytes of one thread's buffers of the pointwise kernel (64-byte multiples).
int64_t QConvPointwiseVnniThreadBytes(const QConvParams& p);
/// QConv for the pointwise layout (any map); `workspace` is 64-byte aligned, p.num_threads
/// thread buffers.
QCC_VNNI void QConvPointwiseVnni(const QConvParams& p, const PackedQConvWeights& w,
                                 uint8_t* workspace);

/// Output channels [k0, k0 + kn) of image n at output positions [first, first + count) of
/// p.output from `staging`: position-major rows of `stride` bytes (a multiple of 16; channel k0
/// at byte 0), RoundUp(count, 16) rows readable; 16 positions x 16 channels per byte transpose.
/// With p.residual set, its Add (AddResidualX16) joins each row on the way out.
QCC_VNNI void WriteStagedOutput(const QConvParams& p, const ByteTransposeIndex& transpose,
                                const uint8_t* staging, int64_t stride, int64_t n, int64_t k0,
                                int64_t kn, int64_t first, int64_t count);

/// True when the VNNI layout of `p` is the small-map one (qconv_smallmap_vnni.cc): one group,
/// K in blocks of 48 or 64 channels, at most 256 output positions, phase planes wider than the
/// output (padding or stride), and not the pointwise kernel's.
bool QConvSmallMapVnniPacks(const QConvParams& p);
/// Fills w's small-map VNNI layout from p.weights.
void PackQConvSmallMapVnni(const QConvParams& p, PackedQConvWeights* w);
/// Bytes of one thread's buffers of the small-map kernel (64-byte multiples).
int64_t QConvSmallMapVnniThreadBytes(const QConvParams& p);
/// QConv for the small-map layout; `workspace` is 64-byte aligned, p.num_threads thread buffers.
QCC_VNNI void QConvSmallMapVnni(const QConvParams& p, const PackedQConvWeights& w,
                                uint8_t* workspace);

/// Fills w->packed with the VNNI layout of p.b.
void PackQGemmVnni(const QGemmParams& p, PackedQGemmWeights* w);
/// QGemm for the VNNI layout; call only when QInt8HasVnni().
QCC_VNNI void QGemmVnni(const QGemmParams& p, const PackedQGemmWeights& w);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_
