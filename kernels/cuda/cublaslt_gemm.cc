// CublasLtGemm without CUDA: Create() reports Unavailable, so host-only builds link code that
// holds a CublasLtGemm (the real implementation is cublaslt_gemm_cuda.cc).
#include "kernels/cuda/cublaslt_gemm.h"

#if !defined(QCC_HAVE_CUDA)

namespace qcc::cuda {

struct CublasLtGemm::Cache {};

absl::StatusOr<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create() {
  return absl::UnavailableError("cuBLASLt: this build has no CUDA");
}

CublasLtGemm::CublasLtGemm(cublasLtContext* handle, std::unique_ptr<Cache> cache)
    : handle_(handle), cache_(std::move(cache)) {}
CublasLtGemm::~CublasLtGemm() = default;

size_t CublasLtGemm::cached_problems() const { return 0; }

absl::Status CublasLtGemm::Prepare(const GemmProblem&, size_t) {
  return absl::UnavailableError("cuBLASLt: this build has no CUDA");
}

absl::Status CublasLtGemm::Run(const GemmProblem&, const void*, const void*, void*, void*, size_t,
                               CUstream_st*) {
  return absl::UnavailableError("cuBLASLt: this build has no CUDA");
}

}  // namespace qcc::cuda

#endif  // !QCC_HAVE_CUDA
