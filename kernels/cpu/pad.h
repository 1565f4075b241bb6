// Pad's per-axis index maps: which input coordinate each output coordinate copies, for the
// four ONNX pad modes. The copy itself is IndexedCopy (kernels/movement.h).
#ifndef QCC_KERNELS_CPU_PAD_H_
#define QCC_KERNELS_CPU_PAD_H_

#include <cstdint>
#include <vector>

namespace qcc::cpu {

/// How Pad fills the new coordinates.
enum class PadFill : uint8_t {
  kConstant,  // the constant value
  kReflect,   // mirror without repeating the edge: [a b c] -> b | a b c | b
  kEdge,      // repeat the edge: a | a b c | c
  kWrap,      // continue periodically: c | a b c | a
};

/// Source coordinates along one axis of extent `extent` padded by `begin` and `end`
/// (extent + begin + end entries; -1 marks the constant fill). Negative amounts crop first; the
/// other modes then mirror, clamp or wrap within the cropped range, repeating as often as the
/// padding needs. The caller ensures the cropped range is non-empty unless mode is kConstant or
/// nothing is added.
std::vector<int64_t> PadSourceIndex(int64_t extent, int64_t begin, int64_t end, PadFill mode);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_PAD_H_
