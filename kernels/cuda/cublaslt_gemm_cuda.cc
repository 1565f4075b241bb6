// CublasLtGemm on cuBLASLt (cublaslt_gemm.h). Built only with CUDA.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cublaslt_api.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "support/status.h"

namespace qcc::cuda {
namespace {

cudaDataType_t ToCuda(GemmType t) {
  switch (t) {
    case GemmType::kInt8:
      return CUDA_R_8I;
    case GemmType::kInt32:
      return CUDA_R_32I;
    case GemmType::kHalf:
      return CUDA_R_16F;
    case GemmType::kFloat32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

cublasOperation_t ToCuda(GemmOp op) { return op == GemmOp::kN ? CUBLAS_OP_N : CUBLAS_OP_T; }

/// cuBLASLt's functions; only called once CublasLtGemm::Create has loaded them.
const CublasLtApi& Lt() { return **LoadCublasLt(); }

absl::Status CublasError(const char* call, cublasStatus_t status, const GemmProblem& p) {
  return absl::InternalError(
      absl::StrCat(call, " failed: ", CublasLtStatusText(status), " for ", p.ToString()));
}

#define QCC_CUBLASLT_CALL(call, problem)               \
  do {                                                 \
    const cublasStatus_t qcc_status_ = (call);         \
    if (qcc_status_ != CUBLAS_STATUS_SUCCESS) {        \
      return CublasError(#call, qcc_status_, problem); \
    }                                                  \
  } while (false)

// The largest power of two (<= 256) dividing the address and every batch offset in bytes: the
// alignment cuBLASLt's heuristic may assume for that operand.
uint32_t Alignment(const void* ptr, int64_t stride_elements, int64_t batch_count,
                   int64_t elem_bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(ptr) | 256u;
  if (batch_count > 1) bits |= static_cast<uint64_t>(stride_elements * elem_bytes);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

struct Key {
  GemmProblem problem;
  size_t workspace_bytes = 0;
  uint32_t align_a = 256, align_b = 256, align_c = 256;
  bool operator==(const Key& o) const {
    return problem == o.problem && workspace_bytes == o.workspace_bytes && align_a == o.align_a &&
           align_b == o.align_b && align_c == o.align_c;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    const GemmProblem& p = k.problem;
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(p.a_type));
    mix(static_cast<uint64_t>(p.b_type));
    mix(static_cast<uint64_t>(p.c_type));
    mix(static_cast<uint64_t>(p.compute));
    mix(static_cast<uint64_t>(p.op_a) * 2 + static_cast<uint64_t>(p.op_b));
    for (int64_t v :
         {p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch_count, p.stride_a, p.stride_b, p.stride_c}) {
      mix(static_cast<uint64_t>(v));
    }
    uint32_t alpha_bits, beta_bits;
    std::memcpy(&alpha_bits, &p.alpha, 4);
    std::memcpy(&beta_bits, &p.beta, 4);
    mix(alpha_bits);
    mix(beta_bits);
    mix(k.workspace_bytes);
    mix(k.align_a | (uint64_t{k.align_b} << 16) | (uint64_t{k.align_c} << 32));
    return static_cast<size_t>(h);
  }
};

// Everything one problem needs at run time; owns its descriptors.
struct Entry {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  int32_t alpha_i = 1, beta_i = 0;
  float alpha_f = 1.0f, beta_f = 0.0f;
  bool int_scale = false;

  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry() {
    if (a != nullptr) Lt().cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) Lt().cublasLtMatrixLayoutDestroy(b);
    if (c != nullptr) Lt().cublasLtMatrixLayoutDestroy(c);
    if (desc != nullptr) Lt().cublasLtMatmulDescDestroy(desc);
  }
};

absl::Status MakeLayout(cublasLtMatrixLayout_t* layout, GemmType type, int64_t rows, int64_t cols,
                        int64_t ld, int64_t batch_count, int64_t stride, const GemmProblem& p) {
  QCC_CUBLASLT_CALL(
      Lt().cublasLtMatrixLayoutCreate(layout, ToCuda(type), static_cast<uint64_t>(rows),
                                      static_cast<uint64_t>(cols), ld),
      p);
  if (batch_count > 1) {
    const int32_t count = static_cast<int32_t>(batch_count);
    QCC_CUBLASLT_CALL(Lt().cublasLtMatrixLayoutSetAttribute(
                          *layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                      p);
    QCC_CUBLASLT_CALL(
        Lt().cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof(stride)),
        p);
  }
  return absl::OkStatus();
}

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* pref) const {
    Lt().cublasLtMatmulPreferenceDestroy(pref);
  }
};

absl::Status BuildEntry(cublasLtHandle_t handle, const Key& key, Entry* e) {
  const GemmProblem& p = key.problem;
  e->int_scale = p.compute == GemmCompute::kInt32;
  e->alpha_f = p.alpha;
  e->beta_f = p.beta;
  e->alpha_i = static_cast<int32_t>(p.alpha);
  e->beta_i = static_cast<int32_t>(p.beta);
  const cublasComputeType_t compute = e->int_scale ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = e->int_scale ? CUDA_R_32I : CUDA_R_32F;
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulDescCreate(&e->desc, compute, scale), p);
  const cublasOperation_t op_a = ToCuda(p.op_a), op_b = ToCuda(p.op_b);
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                                        sizeof(op_a)),
                    p);
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                                        sizeof(op_b)),
                    p);
  QCC_RETURN_IF_ERROR(
      MakeLayout(&e->a, p.a_type, p.a_rows(), p.a_cols(), p.lda, p.batch_count, p.stride_a, p));
  QCC_RETURN_IF_ERROR(
      MakeLayout(&e->b, p.b_type, p.b_rows(), p.b_cols(), p.ldb, p.batch_count, p.stride_b, p));
  QCC_RETURN_IF_ERROR(MakeLayout(&e->c, p.c_type, p.m, p.n, p.ldc, p.batch_count, p.stride_c, p));
  cublasLtMatmulPreference_t raw_pref = nullptr;
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulPreferenceCreate(&raw_pref), p);
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(raw_pref);
  const uint64_t ws = key.workspace_bytes;
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulPreferenceSetAttribute(
                        pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                    p);
  const uint32_t aligns[4] = {key.align_a, key.align_b, key.align_c, key.align_c};
  const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    QCC_CUBLASLT_CALL(Lt().cublasLtMatmulPreferenceSetAttribute(pref.get(), align_attrs[i],
                                                                &aligns[i], sizeof(aligns[i])),
                      p);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmulAlgoGetHeuristic(handle, e->desc, e->a, e->b, e->c, e->c,
                                                        pref.get(), 1, &result, &returned),
                    p);
  if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("cublasLtMatmulAlgoGetHeuristic found no algorithm for ", p.ToString(),
                     " (workspace ", key.workspace_bytes, " bytes, alignments ", key.align_a, "/",
                     key.align_b, "/", key.align_c, ")"));
  }
  e->algo = result.algo;
  return absl::OkStatus();
}

}  // namespace

struct CublasLtGemm::Cache {
  mutable std::mutex mu;
  std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> entries;

  // The entry for `key`, built on first use. The pointer stays valid while the cache lives.
  absl::StatusOr<const Entry*> Get(cublasLtHandle_t handle, const Key& key) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = entries.find(key);
    if (it != entries.end()) return it->second.get();
    const GemmProblem& p = key.problem;
    QCC_RETURN_IF_ERROR(CheckGemmProblem(p));
    if (p.compute == GemmCompute::kInt32) QCC_RETURN_IF_ERROR(CheckImmaConstraints(p));
    auto entry = std::make_unique<Entry>();
    QCC_RETURN_IF_ERROR(BuildEntry(handle, key, entry.get()));
    const Entry* raw = entry.get();
    entries.emplace(key, std::move(entry));
    return raw;
  }
};

absl::StatusOr<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create() {
  QCC_RETURN_IF_ERROR(LoadCublasLt().status());
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t status = Lt().cublasLtCreate(&handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("cublasLtCreate failed: ", CublasLtStatusText(status)));
  }
  return std::unique_ptr<CublasLtGemm>(new CublasLtGemm(handle, std::make_unique<Cache>()));
}

CublasLtGemm::CublasLtGemm(cublasLtContext* handle, std::unique_ptr<Cache> cache)
    : handle_(handle), cache_(std::move(cache)) {}

CublasLtGemm::~CublasLtGemm() {
  cache_.reset();  // descriptors before the handle
  if (handle_ != nullptr) Lt().cublasLtDestroy(handle_);
}

size_t CublasLtGemm::cached_problems() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->entries.size();
}

absl::Status CublasLtGemm::Prepare(const GemmProblem& p, size_t workspace_bytes) {
  // Base pointers 256-byte aligned (the arena's): only the batch strides can lower alignment.
  Key key;
  key.problem = p;
  key.workspace_bytes = workspace_bytes;
  key.align_a = Alignment(nullptr, p.stride_a, p.batch_count, GemmTypeBytes(p.a_type));
  key.align_b = Alignment(nullptr, p.stride_b, p.batch_count, GemmTypeBytes(p.b_type));
  key.align_c = Alignment(nullptr, p.stride_c, p.batch_count, GemmTypeBytes(p.c_type));
  absl::StatusOr<const Entry*> entry = cache_->Get(handle_, key);
  return entry.status();
}

absl::Status CublasLtGemm::Run(const GemmProblem& p, const void* a, const void* b, void* c,
                               void* workspace, size_t workspace_bytes, CUstream_st* stream) {
  Key key;
  key.problem = p;
  key.workspace_bytes = workspace_bytes;
  key.align_a = Alignment(a, p.stride_a, p.batch_count, GemmTypeBytes(p.a_type));
  key.align_b = Alignment(b, p.stride_b, p.batch_count, GemmTypeBytes(p.b_type));
  key.align_c = Alignment(c, p.stride_c, p.batch_count, GemmTypeBytes(p.c_type));
  QCC_ASSIGN_OR_RETURN(const Entry* entry, cache_->Get(handle_, key));
  const Entry& e = *entry;
  const void* alpha = e.int_scale ? static_cast<const void*>(&e.alpha_i) : &e.alpha_f;
  const void* beta = e.int_scale ? static_cast<const void*>(&e.beta_i) : &e.beta_f;
  QCC_CUBLASLT_CALL(Lt().cublasLtMatmul(handle_, e.desc, alpha, a, e.a, b, e.b, beta, c, e.c, c,
                                        e.c, &e.algo, workspace, workspace_bytes, stream),
                    p);
  return absl::OkStatus();
}

}  // namespace qcc::cuda
