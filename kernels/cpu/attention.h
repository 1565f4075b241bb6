// Scaled dot-product attention in fp32 (ONNX Attention, opset 23, without a KV cache): for every
// batch b and query head h,
//   Y[b, h] = softmax(scale * Q[b, h] · K[b, g]ᵀ + mask[b, h]) · V[b, g],   g = h / (Hq / Hkv)
// one (batch, head) at a time, so a head's scores stay in cache: no [B, H, Sq, Skv] tensor is
// written, and Q, K, V and Y are read and written in place in their [B, S, H * D] (or
// [B, H, S, D]) layout with no transposes.
#ifndef QCC_KERNELS_CPU_ATTENTION_H_
#define QCC_KERNELS_CPU_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "kernels/cpu/qgemm.h"  // QKernelPath

namespace qcc::cpu {

/// Where head h of batch b starts (b * batch + h * head elements) and the distance between its
/// consecutive sequence positions (row); a position's head_size elements are contiguous.
struct AttentionLayout {
  int64_t batch = 0, head = 0, row = 0;
};

struct AttentionF32Params {
  int64_t batch = 1;
  int64_t q_heads = 1, kv_heads = 1;  // q_heads a multiple of kv_heads (grouped-query attention)
  int64_t q_len = 0, kv_len = 0;      // sequence lengths
  int64_t head_size = 0;              // of Q and K
  int64_t v_head_size = 0;            // of V and Y
  AttentionLayout q, k, v, y;
  /// The additive mask (optional) broadcast to [batch, q_heads, q_len, kv_len]: element
  /// (b, h, i, j) at b * batch + h * head + i * row + j * col; a broadcast axis has stride 0.
  struct {
    int64_t batch = 0, head = 0, row = 0, col = 1;
  } mask;
  float scale = 1.0f;
  int num_threads = 1;
};

/// The parameters for dense Q [batch, q_len, q_heads * head], K [batch, kv_len, kv_heads * head],
/// V [batch, kv_len, kv_heads * v_head] and Y [batch, q_len, q_heads * v_head], and a dense mask
/// of `mask_dims` (rank <= 4, right-aligned to [batch, q_heads, q_len, kv_len], extent 1
/// broadcasting). The caller has checked that the extents divide.
AttentionF32Params Attention3dParams(int64_t batch, int64_t q_len, int64_t kv_len, int64_t q_hidden,
                                     int64_t v_hidden, int64_t q_heads, int64_t kv_heads,
                                     const std::vector<int64_t>& mask_dims, float scale,
                                     int num_threads);

/// The floats of scratch AttentionF32 needs (per-thread score blocks).
int64_t AttentionF32ScratchFloats(const AttentionF32Params& p);

/// Computes Y. `mask` may be null; `scratch` holds AttentionF32ScratchFloats(p) floats. Y must
/// not overlap Q, K, V or the mask.
void AttentionF32(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                  const float* mask, float* y, float* scratch);

/// The bytes of scratch AttentionInt8 needs (per-thread quantized operands and score blocks).
int64_t AttentionInt8ScratchBytes(const AttentionF32Params& p);

/// Y as AttentionF32 computes it, with both products in int8: `path` kFastest runs vpdpbusd
/// where the CPU has AVX-512 VNNI, else AVX2 vpmaddwd, else plain C++; kAvx2 the AVX2 products
/// (plain without AVX2); kReference plain C++. The integers are the same on every path:
///   - Q and K are quantized per row (one symmetric scale per query or key position and head,
///     max |x| / 127), V per column (per output channel of the head), at run time;
///   - scores s = q8 · k8 * (sq_i * scale) * sk_j (+ mask), then e = exp(s - max_j s) as in the
///     fp32 softmax, quantized to u8 as round(255 e): the row's largest term is exactly 255;
///   - Y[i, d] = (p8[i] · v8[., d]) / sum_j p8[i, j] * sv_d: the probabilities are normalized
///     by the sum of their quantized values, so each row of them sums to 1 exactly.
/// A (batch, head, block of query rows) whose Q, K or V holds a non-finite value is computed in
/// fp32 (AttentionF32's arithmetic), so NaN and infinity propagate as they do there. So is
/// everything when kv_len is over 512 (8-bit probabilities would drop too much of a long row's
/// mass; attention.cc, kInt8MaxKeys) or a head size over 65,536. A NaN in the mask is not
/// checked: it makes its row NaN at column 0 and its probability 0 elsewhere (fp32: the row NaN).
/// Bit-identical for every thread count and on every CPU (integer products are exact; the float
/// steps are the same IEEE operations in each build).
void AttentionInt8(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                   const float* mask, float* y, void* scratch,
                   QKernelPath path = QKernelPath::kFastest);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_ATTENTION_H_
