// The exact GEMM the CUDA backend submits to cuBLASLt, as plain data (no CUDA headers), plus a
// host reference that computes it with cuBLASLt's column-major semantics. Tests run the reference
// on the problems the builders below produce and compare with the CPU kernels, which proves the
// transposes, leading dimensions, padding and batch strides on a machine without a GPU; the GPU
// test then compares cuBLASLt with the same reference.
//
// Semantics (cuBLASLt, column-major): for each batch b < batch_count, with X(i, j) = X[i + j * ld]
// and the operands offset by b * stride_{a,b,c} elements,
//   op(A) is m x k: op_a == kN: A(i, p) = a[i + p * lda] (A stored m x k)
//                   op_a == kT: A(i, p) = a[p + i * lda] (A stored k x m)
//   op(B) is k x n: op_b == kN: B(p, j) = b[p + j * ldb];  kT: B(p, j) = b[j + p * ldb]
//   C(i, j) = alpha * sum_p op(A)(i, p) * op(B)(p, j) + beta * C(i, j)     (C is m x n, ldc)
// with beta == 0 meaning C is not read.
//
// The layouts the backend uses (fixed for issue 5; the float convs changed since):
// - Float Conv (fp32 and fp16): FloatConvGemmNchw below, which writes NCHW.
// - Int8 Conv: Int8ConvGemmNchw below, which writes NCHW accumulators. The layout that follows
//   is QGemm's, and was the int8 convs' (batch index = group g): B = im2col [Npix, Kred_pad]
//   row-major, Npix =
// N*OH*OW,
//   Kred = C/group*R*S; A = packed weights [Kout_pad, Kred_pad] row-major (zero padded);
//   "TN": m = Kout_pad, n = Npix, k = Kred_pad, lda = ldb = Kred_pad, ldc = Kout_pad, so C is
//   row-major [Npix, Kout_pad]. conv_bodies.h's epilogues read it that way.
// - QGemm: A activations [M, K] copied to [M, K_pad] (PadRowsInt8), W packed [N_pad, K_pad]:
//   the conv problem with Kout_pad = N_pad, Kred_pad = K_pad, Npix = M; C is [M, N_pad].
// - ONNX Gemm (row-major, transA/transB): the row-major product Y = op(A) op(B) is the
//   column-major Y^T = op(B)^T op(A)^T, so the problem's operand a is ONNX B and b is ONNX A.
#ifndef QCC_KERNELS_CUDA_GEMM_PROBLEM_H_
#define QCC_KERNELS_CUDA_GEMM_PROBLEM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace qcc::cuda {

/// Element type of a GEMM operand (cuBLASLt: CUDA_R_8I, CUDA_R_32I, CUDA_R_16F, CUDA_R_32F).
enum class GemmType : int32_t { kInt8, kInt32, kHalf, kFloat32 };

/// Compute (accumulation) type (cuBLASLt: CUBLAS_COMPUTE_32I, CUBLAS_COMPUTE_32F). The scale
/// type (alpha, beta) follows: int32 for kInt32, fp32 for kFloat32.
enum class GemmCompute : int32_t { kInt32, kFloat32 };

/// Operation on an operand (CUBLAS_OP_N, CUBLAS_OP_T).
enum class GemmOp : int32_t { kN, kT };

/// "int8", "int32", "fp16", "fp32"; "N", "T".
const char* GemmTypeName(GemmType t);
const char* GemmOpName(GemmOp op);
/// Bytes of one element of `t`.
int64_t GemmTypeBytes(GemmType t);

/// One cuBLASLt matmul (semantics above). D is C (same pointer, same layout).
struct GemmProblem {
  GemmType a_type = GemmType::kFloat32, b_type = GemmType::kFloat32, c_type = GemmType::kFloat32;
  GemmCompute compute = GemmCompute::kFloat32;
  GemmOp op_a = GemmOp::kN, op_b = GemmOp::kN;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  /// Scalars; with compute kInt32 they must be integers (converted to int32 for cuBLASLt).
  float alpha = 1.0f, beta = 0.0f;
  /// Strided batch: batch_count >= 1 products, operand b-th at +b * stride_x elements.
  int64_t batch_count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;

  /// Rows and columns of the matrices as stored (before op): A is (op_a == kN ? m x k : k x m).
  int64_t a_rows() const { return op_a == GemmOp::kN ? m : k; }
  int64_t a_cols() const { return op_a == GemmOp::kN ? k : m; }
  int64_t b_rows() const { return op_b == GemmOp::kN ? k : n; }
  int64_t b_cols() const { return op_b == GemmOp::kN ? n : k; }
  /// Elements each operand spans (all batches), for buffer sizes.
  int64_t a_elements() const;
  int64_t b_elements() const;
  int64_t c_elements() const;
  /// One line for logs and error messages: "int8xint8->int32 TN m=.. n=.. k=.. lda=.. ...".
  std::string ToString() const;

  bool operator==(const GemmProblem& o) const;
  bool operator!=(const GemmProblem& o) const { return !(*this == o); }
};

/// Rounds x up to a multiple of `multiple` (> 0).
inline int64_t RoundUpTo(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

/// Padding the backend applies to GEMM dimensions (Kout, Kred, K, N): IMMA needs multiples of 4
/// for int8; fp16 uses 8 (16-byte rows, the tensor-core fast path); fp32 needs none.
inline constexpr int64_t kInt8GemmAlign = 4;
inline constexpr int64_t kHalfGemmAlign = 8;
inline constexpr int64_t kFloatGemmAlign = 1;

/// int8 conv GEMM (layout above): int8 x int8 -> int32, compute 32I, TN, alpha 1, beta 0,
/// m = kout_pad, n = npix, k = kred_pad, lda = ldb = kred_pad, ldc = kout_pad; `groups` batches
/// with strides kout_pad*kred_pad (A), npix*kred_pad (B), npix*kout_pad (C).
GemmProblem Int8ConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups = 1);

/// QGemm: activations [rows, k_pad] (b), weights [n_pad, k_pad] (a) -> C row-major [rows, n_pad]
/// int32. Int8ConvGemm(n_pad, k_pad, rows).
GemmProblem Int8Gemm(int64_t rows, int64_t n_pad, int64_t k_pad);

/// fp16 conv GEMM: Int8ConvGemm's shape with fp16 A and B, fp32 C, compute 32F.
GemmProblem HalfConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups = 1);

/// fp32 conv GEMM: Int8ConvGemm's shape in fp32 (kout_pad/kred_pad may be unpadded).
GemmProblem FloatConvGemm(int64_t kout_pad, int64_t kred_pad, int64_t npix, int64_t groups = 1);

/// The float convs' GEMM for one group of an NCHW conv (fp32 and fp16 plans): per image,
/// row-major Y[kout, ldc] = W[kout, ldb] A[kred, lda], where A is the im2col of the image
/// ([C*R*S, lda], conv_bodies.h Im2colNchw*) or, for a 1x1 fp32 conv with stride 1 and no
/// padding, the image itself ([C, H*W]); so Y is the image's NCHW output (ldc = OH*OW) or an
/// accumulator of that shape with padded rows. Column-major that is C (pixels x kout, ldc) =
/// A (pixels x kred, lda) B (kred x kout, ldb), "NN", batched over images with stride_b = 0.
/// Groups run one such GEMM each, their operands offset by the group's first channel.
struct NchwConvGemmShape {
  int64_t pixels = 1;    // OH*OW: m
  int64_t kout = 1;      // output channels of the group: n
  int64_t kred = 1;      // C/group*R*S: k
  int64_t lda = 1;       // A's leading dimension (float: >= pixels; int8: kred)
  int64_t ldb = 1;       // W's row length (>= kred)
  int64_t ldc = 1;       // Y's row length (>= pixels)
  int64_t images = 1;    // batch_count
  int64_t stride_a = 0;  // elements between images' A
  int64_t stride_c = 0;  // elements between images' Y
};
/// `ab_type` kFloat32 or kHalf; C fp32, compute 32F, alpha 1, beta 0.
GemmProblem FloatConvGemmNchw(const NchwConvGemmShape& shape, GemmType ab_type);

/// The int8 convs' GEMM for one group, per image, in IMMA's "TN" form: column-major C (pixels x
/// kout, ldc; int32) = A^T B where A is the image's im2col stored [pixels][kred] row-major (lda;
/// conv_bodies.h Im2colRowsInt8) and B the packed weights [kout_pad][kred] (ldb), so C is the
/// image's NCHW accumulators [kout][ldc]. shape.pixels, kred, lda, ldb and ldc are multiples of 4
/// (weight_packing.h MakeInt8NchwConvGemmShape); batched over images with stride_b = 0.
GemmProblem Int8ConvGemmNchw(const NchwConvGemmShape& shape);

/// ONNX Gemm on row-major operands: Y [m, n] = alpha * op(A) op(B) + beta * Y, op(A) m x k,
/// op(B) k x n, A stored [m, k] (or [k, m] when trans_a), B [k, n] (or [n, k] when trans_b).
/// Submit with a = ONNX B, b = ONNX A, c = Y (see the file comment). `ab_type` is kFloat32 or
/// kHalf (C stays fp32, compute 32F). For ONNX's C input with beta != 0, pass beta = 0 here
/// and add beta * C in GemmEpilogueF32 (conv_bodies.h), or pre-fill Y and pass beta = 1.
GemmProblem FloatGemm(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, float alpha,
                      float beta, GemmType ab_type = GemmType::kFloat32);

/// OK when `p` is a problem cuBLASLt runs on IMMA with plain (row/column) ordering on Ampere and
/// Hopper: int8 A and B, int32 C, compute 32I, op_a T and op_b N ("TN"), m, k, lda, ldb, ldc
/// multiples of 4, and for batches stride_a, stride_b multiples of 4 (4-byte aligned operands),
/// integer alpha and beta. InvalidArgument naming the first violated field otherwise.
absl::Status CheckImmaConstraints(const GemmProblem& p);

/// OK when `p` is well formed for any type: positive m, n, k, batch_count; leading dimensions
/// at least the stored rows (and >= 1); non-overlapping batch strides; a type combination the
/// backend uses (int8/int8/int32/32I, fp16/fp16/fp32/32F, fp16/fp16/fp16/32F, fp32/fp32/fp32/32F).
absl::Status CheckGemmProblem(const GemmProblem& p);

/// Computes `p` on the host with the semantics above, one output element at a time, summing
/// p = 0..k-1 in order: int8 products accumulated in int32 with two's-complement wrap-around
/// (what IMMA does), C = alpha * acc + beta * C in int32; fp16/fp32 operands converted to fp32,
/// products and sums in fp32, C = alpha * acc (+ beta * C), then rounded to c_type.
/// Call only for problems CheckGemmProblem accepts.
void ReferenceGemm(const GemmProblem& p, const void* a, const void* b, void* c);

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_GEMM_PROBLEM_H_
