// The input layout of the VNNI direct paths (qconv_vnni.cc, qconv_smallmap_vnni.cc); not a
// public header.
//
// Each (image, group) is rewritten into a per-thread buffer: the padded input split into
// stride_h x stride_w phase planes (phase (a, b) holds padded rows a, a + sh, ... and columns
// b, b + sw, ...), each plane a row-major grid of dwords holding 4 consecutive channels of one
// position (a "channel quad", every byte flipped: x ^ 0x80, the u8 form vpdpbusd multiplies). In
// a phase plane of width PW', output (y, x) at "virtual position" v = y * PW' + x reads tap
// (r, s) at v plus a constant offset (PhaseTapOffsets), for every stride. An unpadded stride-1
// input is its own phase plane (PW' = out_w), rewritten as one run per channel quad.
#ifndef QCC_KERNELS_CPU_QCONV_PLANES_VNNI_H_
#define QCC_KERNELS_CPU_QCONV_PLANES_VNNI_H_

#include <cstdint>

#include "kernels/cpu/qint8_vnni_internal.h"

namespace qcc::cpu::internal {

/// The phase planes of one convolution's (image, group).
struct PhasePlanes {
  int64_t cg, c4, oh, ow;
  int64_t phase_h, phase_w;  // rows and columns of a phase plane
  int64_t v;                 // virtual positions of an image: (oh - 1) * phase_w + ow
  int64_t plane;             // dwords per (phase, channel quad) plane, a multiple of 16
  int64_t max_offset;        // the farthest tap from a position within a plane, in dwords
  int64_t image_bytes;       // every phase and quad: the buffer one (image, group) takes
};

/// The planes of `p`, each long enough for 16-dword loads at any virtual position plus any
/// tap (up to 15 dwords past the last virtual position's farthest tap).
PhasePlanes PhasePlanesOf(const QConvParams& p);

/// tap_offset[r * S + s]: bytes from a virtual position's dword in the first plane to its tap
/// (r, s), channel quad 0.
void PhaseTapOffsets(const QConvParams& p, const PhasePlanes& g, int64_t* tap_offset);

/// Bytes TapOffsetsAt takes at the start of a workspace (a 64-byte multiple).
inline int64_t TapOffsetsBytes(const QConvParams& p) { return (p.r * p.s * 8 + 63) / 64 * 64; }
/// PhaseTapOffsets written at the start of `workspace` into *tap_offset; returns where the
/// threads' buffers start (TapOffsetsBytes(p) further, 64-byte aligned like `workspace`).
uint8_t* TapOffsetsAt(const QConvParams& p, const PhasePlanes& g, uint8_t* workspace,
                      const int64_t** tap_offset);

/// The byte index FillPhasePlanes interleaves rows with, for p's stride_w.
void PhaseRowIndex(const QConvParams& p, uint8_t idx[64]);

/// Rewrites channels [0, C/group) of `x` (one image's group) into phase planes of quads at
/// `buf`: in every plane, the dwords [lo, hi) (rows that hold them whole, and the padding past
/// the last row when hi reaches it). `idx` is PhaseRowIndex's. With `pads_filled`, the dwords
/// that are padding in every image (the pad rows and columns, and past the last row) already
/// hold the pad: an earlier call on this buffer, for the same convolution, wrote them (every
/// one of them, whatever its [lo, hi)); they are then not written again.
QCC_VNNI void FillPhasePlanes(const QConvParams& p, const PhasePlanes& g, const uint8_t* idx,
                              const int8_t* x, uint32_t* buf, int64_t lo, int64_t hi,
                              bool pads_filled);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_QCONV_PLANES_VNNI_H_
