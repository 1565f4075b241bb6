// cuBLASLt is loaded on first use, not linked (kernels/cuda/cublaslt_api.h): a qcc that
// never touches a GPU does not pay the ~210 MB of resident memory that loading it costs.
#include <cstdio>
#include <string>

#include "gtest/gtest.h"

#if QCC_HAVE_CUDA
#include <dlfcn.h>

#include "kernels/cuda/cublaslt_api.h"

namespace qcc::cuda {
namespace {

std::string Soname() { return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR); }

TEST(CublasLtApi, TheQccBinaryDoesNotLinkIt) {
  const std::string qcc = std::string(QCC_BINARY_DIR) + "/bin/qcc";
  FILE* pipe = popen(("readelf -d '" + qcc + "' 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string dynamic;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) dynamic.append(buffer, n);
  pclose(pipe);
  ASSERT_NE(dynamic.find("(NEEDED)"), std::string::npos) << "readelf -d " << qcc << ": " << dynamic;
  EXPECT_NE(dynamic.find("libcudart"), std::string::npos) << dynamic;
  EXPECT_EQ(dynamic.find("libcublasLt"), std::string::npos) << dynamic;
}

TEST(CublasLtApi, LoadsOnFirstUseAndResolvesEveryFunction) {
  // ctest runs each test in its own process, where nothing has loaded it yet.
  EXPECT_EQ(dlopen(Soname().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  absl::StatusOr<const CublasLtApi*> api = LoadCublasLt();
  ASSERT_TRUE(api.ok()) << api.status();
#define QCC_EXPECT_RESOLVED(name) EXPECT_NE((*api)->name, nullptr) << #name;
  QCC_CUBLASLT_FUNCTIONS(QCC_EXPECT_RESOLVED)
#undef QCC_EXPECT_RESOLVED
  void* loaded = dlopen(Soname().c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(loaded, nullptr);
  if (loaded != nullptr) dlclose(loaded);
  EXPECT_EQ(*LoadCublasLt(), *api);  // once per process
  EXPECT_EQ(
      CublasLtStatusText(CUBLAS_STATUS_NOT_INITIALIZED).rfind("CUBLAS_STATUS_NOT_INITIALIZED (", 0),
      0u)
      << CublasLtStatusText(CUBLAS_STATUS_NOT_INITIALIZED);
}

}  // namespace
}  // namespace qcc::cuda
#endif  // QCC_HAVE_CUDA
