// cuBLASLt, loaded with dlopen on first use instead of linked: loading libcublasLt costs about
// 210 MB of resident memory (its relocations), which every qcc process and every program that
// embeds the CUDA runtime would otherwise pay even when it never touches a GPU. Built only with
// CUDA (the callers are *_cuda.cc files).
#ifndef QCC_KERNELS_CUDA_CUBLASLT_API_H_
#define QCC_KERNELS_CUDA_CUBLASLT_API_H_

#include <cublasLt.h>

#include <string>

#include "absl/status/statusor.h"

namespace qcc::cuda {

// Every cuBLASLt function qcc calls.
#define QCC_CUBLASLT_FUNCTIONS(X)         \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)

/// The resolved entry points, named as in cublasLt.h.
struct CublasLtApi {
#define QCC_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  QCC_CUBLASLT_FUNCTIONS(QCC_CUBLASLT_POINTER)
#undef QCC_CUBLASLT_POINTER
};

/// Loads libcublasLt.so.<major of the headers> (the loader's search path, then the folder CMake
/// found it in) and resolves every function, once per process; later calls return the same
/// table or the same error. FailedPrecondition naming the library and dlerror() when it cannot.
absl::StatusOr<const CublasLtApi*> LoadCublasLt();

/// "NAME (description)" of a cuBLAS status, or "status N" when cuBLASLt is not loaded.
std::string CublasLtStatusText(cublasStatus_t status);

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_CUBLASLT_API_H_
