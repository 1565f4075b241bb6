// What the VNNI direct path (qconv_vnni.cc) and the AMX path (qconv_amx_vnni.cc) share over
// the phase planes (qconv_planes_vnni.h): which lanes of a run of virtual positions are
// outputs, the constants of a convolution's epilogue, and the epilogue itself (StoreRow:
// requantize, add the fused residual, store the valid lanes). Not a public header.
#ifndef QCC_KERNELS_CPU_QCONV_DIRECT_VNNI_H_
#define QCC_KERNELS_CPU_QCONV_DIRECT_VNNI_H_

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/qconv_planes_vnni.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"

namespace qcc::cpu::internal {

/// Bit l set for each of the `lanes` (<= 64) virtual positions from one at column `col` of its
/// phase-plane row that is an output (its column is < out_w). A run of bits per virtual row:
/// lane by lane, it was 5-6% of resnet20's 16-channel 3x3 layers at batch 32 (a dependent chain
/// of 48 steps a tile).
inline uint64_t ValidLanesAt(const PhasePlanes& g, int64_t col, int64_t lanes) {
  if (g.phase_w == g.ow) return LowBits64(lanes);  // no column is dropped (1x1, no pads)
  uint64_t valid = 0;
  for (int64_t l = 0; l < lanes; l += g.phase_w - col, col = 0) {
    // Lanes l .. of this row: its columns col .. phase_w - 1, outputs while < out_w.
    if (col < g.ow) valid |= LowBits64(std::min(g.ow - col, lanes - l)) << l;
  }
  return valid;
}

/// ValidLanesAt for the lanes from virtual position v0.
inline uint64_t ValidLanes(const PhasePlanes& g, int64_t v0, int64_t lanes) {
  return ValidLanesAt(g, v0 % g.phase_w, lanes);
}

/// The output position of the first output at or after virtual position v0.
inline int64_t FirstOutput(const PhasePlanes& g, int64_t v0) {
  return v0 / g.phase_w * g.ow + std::min(v0 % g.phase_w, g.ow);
}

/// What the direct and AMX paths' pieces share: the rewrite's row index and the epilogue's
/// constants.
struct PlaneConstants {
  alignas(64) uint8_t idx[64];  // PhaseRowIndex
  ResidualAddV add;             // p.residual's Add, when set
  PackedRequantV pack;
  bool packed_requant;  // PackedRequantApplies
};

QCC_VNNI void PreparePlaneConstants(const QConvParams& p, PlaneConstants* k);

/// Where and how a register tile's results go.
struct TileOut {
  int8_t* y;            // output channel 0 of the tile at its first valid position
  int64_t y_stride;     // bytes between output channels
  int64_t rows;         // output channels of the tile that exist (1..kMr)
  const int32_t* init;  // kMr accumulator starts (bias + correction)
  const float* multiplier;
  uint64_t valid;  // the tile's lanes that are real outputs (compressed together when stored)
  int64_t count;   // popcount(valid)
  int32_t zp, lo, hi;
  const int8_t* residual;      // the fused Add's residual at y's position; null: none
  const ResidualAddV* add;     // its constants
  const PackedRequantV* pack;  // RequantizePackX48's constants; null: RequantizeX16
};

/// A TileOut's fields that hold for every tile of a convolution.
inline TileOut ConvTileOut(const QConvParams& p, const PlaneConstants& k, int64_t out_plane) {
  TileOut o;
  o.y_stride = out_plane;
  o.zp = p.zp_out;
  o.lo = p.lo;
  o.hi = p.hi;
  o.add = &k.add;
  o.pack = k.packed_requant ? &k.pack : nullptr;
  return o;
}

/// A tile's store constants for StoreRow, in a local of the tile's function built before its
/// first store: an int8 store may alias any memory as far as GCC knows, so constants read
/// through the TileOut (and its pack) would be read and rebuilt after every row's store (10 to
/// 20 scalar instructions a row, against 12 vpdpbusd a row for a 1x1 conv of 16 channels).
struct RowStore {
  PackedRequantV pack;  // a copy of *TileOut::pack, when packed
  __m512i zp;
  __m512 lo, hi;
  uint64_t valid;
  __mmask64 count_mask;  // the low popcount(valid) bytes
  const ResidualAddV* add;
  bool packed, whole;
};

template <int NV>
QCC_VNNI inline RowStore RowStoreOf(const TileOut& o) {
  RowStore s;
  s.packed = o.pack != nullptr;
  if (s.packed) s.pack = *o.pack;
  s.zp = _mm512_set1_epi32(o.zp);
  s.lo = _mm512_set1_ps(static_cast<float>(o.lo - o.zp));
  s.hi = _mm512_set1_ps(static_cast<float>(o.hi - o.zp));
  s.valid = o.valid;
  s.count_mask = LowBits64(o.count);
  s.add = o.add;
  s.whole = o.count == 16 * NV;  // every lane is an output
  return s;
}

/// Requantizes one output channel's NV vectors (scaled by `m`, adding the residual `r` at the
/// same outputs when it is not null) and stores its valid lanes contiguously.
template <int NV>
QCC_VNNI inline void StoreRow(__m512i v0, __m512i v1, __m512i v2, float multiplier, int8_t* y,
                              const int8_t* r, const RowStore& s) {
  const __m512 m = _mm512_set1_ps(multiplier);
  if (r == nullptr && s.packed) {
    __m512i bytes = RequantizePackX48<NV>(v0, v1, v2, m, m, m, s.pack);
    if (!s.whole) bytes = _mm512_maskz_compress_epi8(s.valid, bytes);
    _mm512_mask_storeu_epi8(y, s.count_mask, bytes);
    return;
  }
  __m128i b0, b1, b2;
  if (r == nullptr) {
    b0 = RequantizeX16(v0, m, s.zp, s.lo, s.hi);
    b1 = NV > 1 ? RequantizeX16(v1, m, s.zp, s.lo, s.hi) : b0;
    b2 = NV > 2 ? RequantizeX16(v2, m, s.zp, s.lo, s.hi) : b0;
  } else {
    // The residual of output i is at r[i]; spread over the tile's lanes unless all are outputs.
    __m128i r0, r1, r2;
    if (s.whole) {
      r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
      r1 = NV > 1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 16)) : r0;
      r2 = NV > 2 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32)) : r0;
    } else {
      alignas(64) int8_t spread[64];
      _mm512_store_si512(
          spread, _mm512_maskz_expand_epi8(s.valid, _mm512_maskz_loadu_epi8(s.count_mask, r)));
      r0 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread));
      r1 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread + 16));
      r2 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread + 32));
    }
    b0 = AddResidualX16(RequantizeI32X16(v0, m, s.zp, s.lo, s.hi), r0, *s.add);
    b1 = NV > 1 ? AddResidualX16(RequantizeI32X16(v1, m, s.zp, s.lo, s.hi), r1, *s.add) : b0;
    b2 = NV > 2 ? AddResidualX16(RequantizeI32X16(v2, m, s.zp, s.lo, s.hi), r2, *s.add) : b0;
  }
  if (s.whole) {
    // Every lane is an output (as for any unpadded stride-1 conv but at the image's end): plain
    // stores, which cost far less than a byte compress and a masked store.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), b0);
    if (NV > 1) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 16), b1);
    if (NV > 2) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 32), b2);
    return;
  }
  __m512i bytes = _mm512_zextsi128_si512(b0);
  if (NV > 1) bytes = _mm512_inserti32x4(bytes, b1, 1);
  if (NV > 2) bytes = _mm512_inserti32x4(bytes, b2, 2);
  bytes = _mm512_maskz_compress_epi8(s.valid, bytes);
  _mm512_mask_storeu_epi8(y, s.count_mask, bytes);
}

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_QCONV_DIRECT_VNNI_H_
