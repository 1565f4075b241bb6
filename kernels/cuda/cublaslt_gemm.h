// cuBLASLt behind a small class: runs a GemmProblem (gemm_problem.h) on a stream. The header
// needs no CUDA headers (the handle and stream types are forward-declared), so host-only code
// can hold one; without CUDA (QCC_HAVE_CUDA undefined) Create() returns Unavailable.
//
// Per distinct (problem, workspace size) the first Prepare/Run builds the matmul descriptor, the
// matrix layouts and the heuristic's algorithm and caches them; later Runs of that problem
// allocate nothing and never synchronise (call Prepare at engine creation so that Enqueue
// never builds one). Errors name the cuBLASLt call and its status string, e.g.
// "cublasLtMatmul failed: CUBLAS_STATUS_NOT_SUPPORTED (the operation or data type combination is
// currently not supported) for int8xint8->int32 TN m=.. ...".
#ifndef QCC_KERNELS_CUDA_CUBLASLT_GEMM_H_
#define QCC_KERNELS_CUDA_CUBLASLT_GEMM_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cuda/gemm_problem.h"

// The CUDA runtime's cudaStream_t is `CUstream_st*` and cuBLASLt's handle `cublasLtContext*`.
struct CUstream_st;
struct cublasLtContext;

namespace qcc::cuda {

class CublasLtGemm {
 public:
  /// Workspace the backend gives cuBLASLt per context (enough for every heuristic choice on
  /// Ampere/Hopper; 0 also works, with fewer algorithms).
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  /// Creates the cuBLASLt handle (on the current device). Unavailable without CUDA.
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create();

  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// Checks `p` (CheckGemmProblem, and CheckImmaConstraints for int8) and builds and caches its
  /// descriptors and algorithm for runs with `workspace_bytes` of workspace and 256-byte aligned
  /// operand pointers (the alignment the heuristic assumes is part of the cache key: Run with
  /// less aligned pointers builds another entry). InvalidArgument for a
  /// bad problem; Internal naming the problem when the heuristic finds no algorithm.
  absl::Status Prepare(const GemmProblem& p, size_t workspace_bytes);

  /// Enqueues `p` on `stream` (a cudaStream_t; null: the legacy default stream): device
  /// pointers a, b, c (C is also D), `workspace` of `workspace_bytes` device bytes (may be null
  /// when 0). Prepares `p` first when it has not been (allocating then). Thread-safe.
  absl::Status Run(const GemmProblem& p, const void* a, const void* b, void* c, void* workspace,
                   size_t workspace_bytes, CUstream_st* stream);

  /// The raw handle (cublasLtHandle_t), for callers that need it.
  cublasLtContext* handle() const { return handle_; }

  /// Number of cached problems (for tests).
  size_t cached_problems() const;

 private:
  struct Cache;
  CublasLtGemm(cublasLtContext* handle, std::unique_ptr<Cache> cache);

  cublasLtContext* handle_ = nullptr;
  std::unique_ptr<Cache> cache_;
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_CUBLASLT_GEMM_H_
