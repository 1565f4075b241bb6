#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cublaslt_api.h"

namespace qcc::cuda {
namespace {

absl::StatusOr<const CublasLtApi*> Load() {
  const std::string soname = absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string tried = soname;
#ifdef QCC_CUBLASLT_DIR
  if (lib == nullptr) {
    const std::string path = absl::StrCat(QCC_CUBLASLT_DIR, "/", soname);
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    absl::StrAppend(&tried, " and ", path);
  }
#endif
  if (lib == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load cuBLASLt (tried ", tried, "): ", why ? why : "unknown error",
                     "; install the CUDA ", CUBLAS_VER_MAJOR,
                     " libraries or put them on LD_LIBRARY_PATH, or use --device cpu"));
  }
  static CublasLtApi api;
#define QCC_CUBLASLT_RESOLVE(name)                                    \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (api.name == nullptr) {                                          \
    return absl::FailedPreconditionError(                             \
        absl::StrCat(tried, " has no ", #name,                        \
                     ": a cuBLASLt older than the headers qcc was "   \
                     "built with (",                                  \
                     CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, ")"));  \
  }
  QCC_CUBLASLT_FUNCTIONS(QCC_CUBLASLT_RESOLVE)
#undef QCC_CUBLASLT_RESOLVE
  return &api;
}

}  // namespace

absl::StatusOr<const CublasLtApi*> LoadCublasLt() {
  static const absl::StatusOr<const CublasLtApi*>* const loaded =
      new absl::StatusOr<const CublasLtApi*>(Load());
  return *loaded;
}

std::string CublasLtStatusText(cublasStatus_t status) {
  absl::StatusOr<const CublasLtApi*> api = LoadCublasLt();
  if (!api.ok()) return absl::StrCat("status ", static_cast<int>(status));
  return absl::StrCat((*api)->cublasLtGetStatusName(status), " (",
                      (*api)->cublasLtGetStatusString(status), ")");
}

}  // namespace qcc::cuda
