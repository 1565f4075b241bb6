// GemmProblem builders, checks and the host reference GEMM (gemm_problem.h).
#include "kernels/cuda/gemm_problem.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "support/float16.h"

namespace qcc::cuda {

const char* GemmTypeName(GemmType t) {
  switch (t) {
    case GemmType::kInt8:
      return "int8";
    case GemmType::kInt32:
      return "int32";
    case GemmType::kHalf:
      return "fp16";
    case GemmType::kFloat32:
      return "fp32";
  }
  return "unknown";
}

const char* GemmOpName(GemmOp op) { return op == GemmOp::kN ? "N" : "T"; }

int64_t GemmTypeBytes(GemmType t) {
  switch (t) {
    case GemmType::kInt8:
      return 1;
    case GemmType::kHalf:
      return 2;
    case GemmType::kInt32:
    case GemmType::kFloat32:
      return 4;
  }
  return 0;
}

namespace {

// Elements one operand spans: the last batch's offset plus one stored matrix.
int64_t Span(int64_t rows, int64_t cols, int64_t ld, int64_t batches, int64_t stride) {
  if (rows <= 0 || cols <= 0 || batches <= 0) return 0;
  return (batches - 1) * stride + (cols - 1) * ld + rows;
}

}  // namespace

int64_t GemmProblem::a_elements() const {
  return Span(a_rows(), a_cols(), lda, batch_count, stride_a);
}
int64_t GemmProblem::b_elements() const {
  return Span(b_rows(), b_cols(), ldb, batch_count, stride_b);
}
int64_t GemmProblem::c_elements() const { return Span(m, n, ldc, batch_count, stride_c); }

std::string GemmProblem::ToString() const {
  std::string s =
      absl::StrCat(GemmTypeName(a_type), "x", GemmTypeName(b_type), "->", GemmTypeName(c_type),
                   " (compute ", compute == GemmCompute::kInt32 ? "32I" : "32F", ") ",
                   GemmOpName(op_a), GemmOpName(op_b), " m=", m, " n=", n, " k=", k, " lda=", lda,
                   " ldb=", ldb, " ldc=", ldc, " alpha=", alpha, " beta=", beta);
  if (batch_count != 1) {
    absl::StrAppend(&s, " batch=", batch_count, " strides=", stride_a, "/", stride_b, "/",
                    stride_c);
  }
  return s;
}

bool GemmProblem::operator==(const GemmProblem& o) const {
  return a_type == o.a_type && b_type == o.b_type && c_type == o.c_type && compute == o.compute &&
         op_a == o.op_a && op_b == o.op_b && m == o.m && n == o.n && k == o.k && lda == o.lda &&
         ldb == o.ldb && ldc == o.ldc && std::memcmp(&alpha, &o.alpha, sizeof(float)) == 0 &&
         std::memcmp(&beta, &o.beta, sizeof(float)) == 0 && batch_count == o.batch_count &&
         stride_a == o.stride_a && stride_b == o.stride_b && stride_c == o.stride_c;
}

namespace {

GemmProblem ConvGemm(GemmType ab, GemmType c, GemmCompute compute, int64_t kout_pad,
                     int64_t kred_pad, int64_t npix, int64_t groups) {
  GemmProblem p;
  p.a_type = p.b_type = ab;
  p.c_type = c;
  p.compute = compute;
  p.op_a = GemmOp::kT;
  p.op_b = GemmOp::kN;
  p.m = kout_pad;
  p.n = npix;
  p.k = kred_pad;
  p.lda = kred_pad;
  p.ldb = kred_pad;
  p.ldc = kout_pad;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  p.batch_count = groups;
  if (groups > 1) {
    p.stride_a = kout_pad * kred_pad;
    p.stride_b = npix * kred_pad;
    p.stride_c = npix * kout_pad;
  }
  return p;
}

}  // namespace

GemmProblem Int8ConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups) {
  return ConvGemm(GemmType::kInt8, GemmType::kInt32, GemmCompute::kInt32, kout_pad, kred_pad, npix,
                  groups);
}

GemmProblem Int8Gemm(int64_t rows, int64_t n_pad, int64_t k_pad) {
  return Int8ConvGemm(n_pad, k_pad, rows, 1);
}

GemmProblem HalfConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups) {
  return ConvGemm(GemmType::kHalf, GemmType::kFloat32, GemmCompute::kFloat32, kout_pad, kred_pad,
                  npix, groups);
}

GemmProblem FloatConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups) {
  return ConvGemm(GemmType::kFloat32, GemmType::kFloat32, GemmCompute::kFloat32, kout_pad, kred_pad,
                  npix, groups);
}

GemmProblem FloatConvGemmNchw(const NchwConvGemmShape& g, GemmType ab_type) {
  GemmProblem p;
  p.a_type = p.b_type = ab_type;
  p.c_type = GemmType::kFloat32;
  p.compute = GemmCompute::kFloat32;
  p.op_a = GemmOp::kN;
  p.op_b = GemmOp::kN;
  p.m = g.pixels;
  p.n = g.kout;
  p.k = g.kred;
  p.lda = g.lda;
  p.ldb = g.ldb;
  p.ldc = g.ldc;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  p.batch_count = g.images;
  if (g.images > 1) {
    p.stride_a = g.stride_a;
    p.stride_b = 0;  // every image uses the same weights
    p.stride_c = g.stride_c;
  }
  return p;
}

GemmProblem Int8ConvGemmNchw(const NchwConvGemmShape& g) {
  GemmProblem p = FloatConvGemmNchw(g, GemmType::kInt8);
  p.c_type = GemmType::kInt32;
  p.compute = GemmCompute::kInt32;
  p.op_a = GemmOp::kT;
  return p;
}

GemmProblem FloatGemm(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, float alpha,
                      float beta, GemmType ab_type) {
  // Row-major Y [m, n] is column-major Y^T (n x m) = op(B)^T op(A)^T. Row-major B as stored is
  // the column-major transpose of itself: B [k, n] is the n x k matrix op(B)^T (no op, ld n);
  // B [n, k] (trans_b) is the k x n matrix op(B), whose transpose we need (op T, ld k).
  GemmProblem p;
  p.a_type = p.b_type = ab_type;
  p.c_type = GemmType::kFloat32;
  p.compute = GemmCompute::kFloat32;
  p.m = n;
  p.n = m;
  p.k = k;
  p.op_a = trans_b ? GemmOp::kT : GemmOp::kN;
  p.lda = trans_b ? k : n;
  p.op_b = trans_a ? GemmOp::kT : GemmOp::kN;
  p.ldb = trans_a ? m : k;
  p.ldc = n;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

absl::Status CheckImmaConstraints(const GemmProblem& p) {
  const auto bad = [&p](auto... parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("int8 IMMA GEMM: ", parts..., " (", p.ToString(), ")"));
  };
  if (p.a_type != GemmType::kInt8) return bad("a_type must be int8");
  if (p.b_type != GemmType::kInt8) return bad("b_type must be int8");
  if (p.c_type != GemmType::kInt32) return bad("c_type must be int32");
  if (p.compute != GemmCompute::kInt32) return bad("compute must be 32I");
  if (p.op_a != GemmOp::kT) return bad("op_a must be T (only TN is supported)");
  if (p.op_b != GemmOp::kN) return bad("op_b must be N (only TN is supported)");
  const struct {
    const char* name;
    int64_t value;
  } multiples[] = {{"m", p.m}, {"k", p.k}, {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc}};
  for (const auto& f : multiples) {
    if (f.value % 4 != 0) return bad(f.name, "=", f.value, " is not a multiple of 4");
  }
  if (p.batch_count > 1) {
    if (p.stride_a % 4 != 0) return bad("stride_a=", p.stride_a, " is not a multiple of 4");
    if (p.stride_b % 4 != 0) return bad("stride_b=", p.stride_b, " is not a multiple of 4");
  }
  if (p.alpha != std::nearbyint(p.alpha)) return bad("alpha must be an integer");
  if (p.beta != std::nearbyint(p.beta)) return bad("beta must be an integer");
  return CheckGemmProblem(p);
}

absl::Status CheckGemmProblem(const GemmProblem& p) {
  const auto bad = [&p](auto... parts) {
    return absl::InvalidArgumentError(absl::StrCat("GEMM: ", parts..., " (", p.ToString(), ")"));
  };
  if (p.m <= 0) return bad("m must be positive");
  if (p.n <= 0) return bad("n must be positive");
  if (p.k <= 0) return bad("k must be positive");
  if (p.batch_count <= 0) return bad("batch_count must be positive");
  if (p.lda < std::max<int64_t>(1, p.a_rows())) return bad("lda is less than A's rows");
  if (p.ldb < std::max<int64_t>(1, p.b_rows())) return bad("ldb is less than B's rows");
  if (p.ldc < std::max<int64_t>(1, p.m)) return bad("ldc is less than m");
  if (p.batch_count > 1) {
    if (p.stride_a < 0 || p.stride_b < 0) return bad("negative batch stride");
    if (p.stride_c < p.ldc * (p.n - 1) + p.m) return bad("stride_c overlaps batches of C");
  }
  const bool int8 = p.a_type == GemmType::kInt8 && p.b_type == GemmType::kInt8 &&
                    p.c_type == GemmType::kInt32 && p.compute == GemmCompute::kInt32;
  const bool half = p.a_type == GemmType::kHalf && p.b_type == GemmType::kHalf &&
                    (p.c_type == GemmType::kFloat32 || p.c_type == GemmType::kHalf) &&
                    p.compute == GemmCompute::kFloat32;
  const bool fp32 = p.a_type == GemmType::kFloat32 && p.b_type == GemmType::kFloat32 &&
                    p.c_type == GemmType::kFloat32 && p.compute == GemmCompute::kFloat32;
  if (!int8 && !half && !fp32) return bad("unsupported type combination");
  return absl::OkStatus();
}

namespace {

float LoadFloat(GemmType t, const void* base, int64_t index) {
  if (t == GemmType::kHalf) return HalfToFloat(static_cast<const uint16_t*>(base)[index]);
  return static_cast<const float*>(base)[index];
}

}  // namespace

void ReferenceGemm(const GemmProblem& p, const void* a, const void* b, void* c) {
  const bool ta = p.op_a == GemmOp::kT, tb = p.op_b == GemmOp::kT;
  for (int64_t batch = 0; batch < p.batch_count; ++batch) {
    const int64_t oa = batch * p.stride_a, ob = batch * p.stride_b, oc = batch * p.stride_c;
    for (int64_t j = 0; j < p.n; ++j) {
      for (int64_t i = 0; i < p.m; ++i) {
        const int64_t ci = oc + i + j * p.ldc;
        if (p.compute == GemmCompute::kInt32) {
          const int8_t* a8 = static_cast<const int8_t*>(a) + oa;
          const int8_t* b8 = static_cast<const int8_t*>(b) + ob;
          uint32_t acc = 0;  // wraps modulo 2^32 like the int32 accumulator
          for (int64_t q = 0; q < p.k; ++q) {
            const int32_t av = ta ? a8[q + i * p.lda] : a8[i + q * p.lda];
            const int32_t bv = tb ? b8[j + q * p.ldb] : b8[q + j * p.ldb];
            acc += static_cast<uint32_t>(av * bv);
          }
          int32_t* c32 = static_cast<int32_t*>(c);
          uint32_t out = static_cast<uint32_t>(static_cast<int32_t>(p.alpha)) * acc;
          if (p.beta != 0.0f) {
            out += static_cast<uint32_t>(static_cast<int32_t>(p.beta)) *
                   static_cast<uint32_t>(c32[ci]);
          }
          c32[ci] = static_cast<int32_t>(out);
        } else {
          float acc = 0.0f;
          for (int64_t q = 0; q < p.k; ++q) {
            const float av = LoadFloat(p.a_type, a, oa + (ta ? q + i * p.lda : i + q * p.lda));
            const float bv = LoadFloat(p.b_type, b, ob + (tb ? j + q * p.ldb : q + j * p.ldb));
            const float prod = av * bv;
            acc = acc + prod;
          }
          float out = p.alpha * acc;
          if (p.beta != 0.0f) {
            const float old = LoadFloat(p.c_type, c, ci);
            const float scaled = p.beta * old;
            out = out + scaled;
          }
          if (p.c_type == GemmType::kHalf) {
            static_cast<uint16_t*>(c)[ci] = FloatToHalf(out);
          } else {
            static_cast<float*>(c)[ci] = out;
          }
        }
      }
    }
  }
}

}  // namespace qcc::cuda
