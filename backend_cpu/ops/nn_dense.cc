// Gemm, MatMul and qcc.Attention on the CPU, on GemmF32 (kernels/cpu/gemm.h); Gemm applies its
// fused activation after the product.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/ops/fused_activation.h"
#include "backend_cpu/ops/nn_internal.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul.h"
#include "support/status.h"

namespace qcc::cpu::nn {

namespace {

absl::Status RunGemm(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::GemmAttrs& g = ctx.attrs<ir::GemmAttrs>();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  QCC_ASSIGN_OR_RETURN(const ActivationF32 act, FusedActivationOf(ctx, g));
  GemmF32Params p;
  p.trans_a = g.transA != 0;
  p.trans_b = g.transB != 0;
  p.m = y.dim(0);
  p.n = y.dim(1);
  p.k = a.dim(p.trans_a ? 0 : 1);
  p.lda = a.dim(1);
  p.ldb = b.dim(1);
  p.ldc = p.n;
  p.alpha = g.alpha;
  p.threads = ctx.num_threads;
  if (ctx.has_input(2) && g.beta != 0.0f) {
    // y = beta * C (broadcast), then y += alpha * op(A) op(B).
    const Tensor& c = ctx.input(2);
    const int64_t c_rows = c.rank() == 2 ? c.dim(0) : 1;
    const int64_t c_cols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
    FillBroadcast2dF32(c.data<float>(), c_rows, c_cols, g.beta, p.m, p.n, y.data<float>());
    p.beta = 1.0f;
  }
  GemmF32(p, a.data<float>(), b.data<float>(), y.data<float>());
  ApplyActivationF32(act, y.data<float>(), y.numel());
  return absl::OkStatus();
}

absl::Status RunMatMul(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  // numpy: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; those 1s are not in y's shape.
  Dims da = a.dims(), db = b.dims();
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  MatMulF32Params p;
  p.num_threads = ctx.num_threads;
  p.m = da[da.size() - 2];
  p.k = da.back();
  p.n = db.back();
  const size_t rank = std::max(da.size(), db.size()) - 2;
  p.a_batch.assign(rank, 1);
  p.b_batch.assign(rank, 1);
  std::copy(da.begin(), da.end() - 2, p.a_batch.begin() + (rank - (da.size() - 2)));
  std::copy(db.begin(), db.end() - 2, p.b_batch.begin() + (rank - (db.size() - 2)));
  p.batch.resize(rank);
  for (size_t i = 0; i < rank; ++i) p.batch[i] = std::max(p.a_batch[i], p.b_batch[i]);
  // A zero extent broadcast against 1 gives 0.
  for (size_t i = 0; i < rank; ++i) {
    if (p.a_batch[i] == 0 || p.b_batch[i] == 0) p.batch[i] = 0;
  }
  MatMulF32(p, a.data<float>(), b.data<float>(), ctx.output(0).data<float>());
  return absl::OkStatus();
}

absl::Status RunAttention(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::AttentionAttrs& a = ctx.attrs<ir::AttentionAttrs>();
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  // Shape inference checked what it knew; the extents themselves are checked here.
  bool ok = q.rank() == 3 && k.rank() == 3 && v.rank() == 3 && a.q_num_heads > 0 &&
            a.kv_num_heads > 0 && a.q_num_heads % a.kv_num_heads == 0 && q.dim(0) == k.dim(0) &&
            q.dim(0) == v.dim(0) && k.dim(1) == v.dim(1) && q.dim(2) % a.q_num_heads == 0 &&
            k.dim(2) == q.dim(2) / a.q_num_heads * a.kv_num_heads && v.dim(2) % a.kv_num_heads == 0;
  if (ok && mask != nullptr) {
    const Dims full = {q.dim(0), a.q_num_heads, q.dim(1), k.dim(1)};
    ok = mask->rank() <= 4;
    for (int64_t i = 0; ok && i < mask->rank(); ++i) {
      const int64_t d = mask->dim(i);
      ok = d == 1 || d == full[4 - mask->rank() + i];
    }
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("qcc.Attention: Q ", DimsToString(q.dims()), ", K ", DimsToString(k.dims()),
                     ", V ", DimsToString(v.dims()),
                     mask != nullptr ? absl::StrCat(" and mask ", DimsToString(mask->dims())) : "",
                     " do not fit ", a.q_num_heads, " and ", a.kv_num_heads, " heads"));
  }
  const AttentionF32Params p = Attention3dParams(
      q.dim(0), q.dim(1), k.dim(1), q.dim(2), v.dim(2), a.q_num_heads, a.kv_num_heads,
      mask != nullptr ? mask->dims() : Dims{}, a.scale, ctx.num_threads);
  std::vector<float> scratch(AttentionF32ScratchFloats(p));
  AttentionF32(p, q.data<float>(), k.data<float>(), v.data<float>(),
               mask != nullptr ? mask->data<float>() : nullptr, ctx.output(0).data<float>(),
               scratch.data());
  return absl::OkStatus();
}

}  // namespace

void RegisterDenseOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kGemm, RunGemm);
  registry.Add(ir::OpKind::kMatMul, RunMatMul);
  registry.Add(ir::OpKind::kAttention, RunAttention);
}

}  // namespace qcc::cpu::nn
