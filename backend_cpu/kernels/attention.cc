#include "backend_cpu/kernels/attention.h"

#include <algorithm>

#include "backend_cpu/kernels/gemm.h"
#include "backend_cpu/kernels/nn_parallel.h"
#include "backend_cpu/kernels/softmax.h"

namespace qcc::cpu {
namespace {

/// Query rows per block: a block's scores (rows x kv_len floats) stay within 64 KiB, in L2.
int64_t BlockRows(const AttentionF32Params& p) {
  constexpr int64_t kScoreFloats = 16 * 1024;
  return std::max<int64_t>(1, std::min(p.q_len, kScoreFloats / std::max<int64_t>(1, p.kv_len)));
}

int ScratchThreads(const AttentionF32Params& p) { return std::max(1, p.num_threads); }

}  // namespace

AttentionF32Params Attention3dParams(int64_t batch, int64_t q_len, int64_t kv_len, int64_t q_hidden,
                                     int64_t v_hidden, int64_t q_heads, int64_t kv_heads,
                                     const std::vector<int64_t>& mask_dims, float scale,
                                     int num_threads) {
  AttentionF32Params p;
  p.batch = batch;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_size = q_hidden / q_heads;
  p.v_head_size = v_hidden / kv_heads;
  const int64_t kv_hidden = p.head_size * kv_heads, y_hidden = p.v_head_size * q_heads;
  p.q = {q_len * q_hidden, p.head_size, q_hidden};
  p.k = {kv_len * kv_hidden, p.head_size, kv_hidden};
  p.v = {kv_len * v_hidden, p.v_head_size, v_hidden};
  p.y = {q_len * y_hidden, p.v_head_size, y_hidden};
  // Dense strides of the mask right-aligned to [batch, heads, q_len, kv_len]; 0 where it is 1.
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = mask_dims.size(); i-- > 0;) {
    const size_t axis = 4 - mask_dims.size() + i;
    strides[axis] = mask_dims[i] == 1 ? 0 : stride;
    stride *= mask_dims[i];
  }
  p.mask.batch = strides[0];
  p.mask.head = strides[1];
  p.mask.row = strides[2];
  p.mask.col = strides[3];
  p.scale = scale;
  p.num_threads = num_threads;
  return p;
}

int64_t AttentionF32ScratchFloats(const AttentionF32Params& p) {
  return ScratchThreads(p) * BlockRows(p) * p.kv_len;
}

void AttentionF32(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                  const float* mask, float* y, float* scratch) {
  if (p.batch == 0 || p.q_heads == 0 || p.q_len == 0 || p.v_head_size == 0) return;
  const int64_t rows_per_block = BlockRows(p);
  const int64_t blocks = (p.q_len + rows_per_block - 1) / rows_per_block;
  const int64_t group = p.q_heads / p.kv_heads;
  const int64_t units = p.batch * p.q_heads * blocks;
  const int64_t cost = rows_per_block * p.kv_len * (p.head_size + p.v_head_size + 8);
  NnParallelFor(ScratchThreads(p), units, cost, [&](int64_t begin, int64_t end, int thread) {
    float* scores = scratch + thread * rows_per_block * p.kv_len;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t block = u % blocks, bh = u / blocks;
      const int64_t b = bh / p.q_heads, h = bh % p.q_heads, g = h / group;
      const int64_t row0 = block * rows_per_block;
      const int64_t rows = std::min(rows_per_block, p.q_len - row0);
      if (p.kv_len == 0) {  // P [rows, 0] times V [0, Dv]: a sum over nothing, as MatMul gives
        for (int64_t i = 0; i < rows; ++i) {
          float* yr = y + b * p.y.batch + h * p.y.head + (row0 + i) * p.y.row;
          std::fill(yr, yr + p.v_head_size, 0.0f);
        }
        continue;
      }
      GemmF32Params s;  // scores = scale * Q Kᵀ
      s.m = rows;
      s.n = p.kv_len;
      s.k = p.head_size;
      s.trans_b = true;
      s.lda = p.q.row;
      s.ldb = p.k.row;
      s.ldc = p.kv_len;
      s.alpha = p.scale;
      GemmF32(s, q + b * p.q.batch + h * p.q.head + row0 * p.q.row,
              k + b * p.k.batch + g * p.k.head, scores);
      const float* mask_rows =
          mask == nullptr ? nullptr : mask + b * p.mask.batch + h * p.mask.head + row0 * p.mask.row;
      if (mask_rows != nullptr && p.mask.col != 1) {  // a mask constant along each row
        for (int64_t i = 0; i < rows; ++i) {
          const float* m = mask_rows + i * p.mask.row;
          for (int64_t j = 0; j < p.kv_len; ++j) scores[i * p.kv_len + j] += m[j * p.mask.col];
        }
        mask_rows = nullptr;
      }
      SoftmaxAddRows(rows, p.kv_len, scores, mask_rows, p.mask.row);
      GemmF32Params o;  // Y = P V
      o.m = rows;
      o.n = p.v_head_size;
      o.k = p.kv_len;
      o.lda = p.kv_len;
      o.ldb = p.v.row;
      o.ldc = p.y.row;
      GemmF32(o, scores, v + b * p.v.batch + g * p.v.head,
              y + b * p.y.batch + h * p.y.head + row0 * p.y.row);
    }
  });
}

}  // namespace qcc::cpu
