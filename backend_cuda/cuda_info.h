// What the build knows about CUDA: whether the backend was compiled, for which architectures,
// and whether a device is present at run time.
#ifndef QCC_BACKEND_CUDA_CUDA_INFO_H_
#define QCC_BACKEND_CUDA_CUDA_INFO_H_

#include <string>

namespace qcc::cuda {

/// True when this binary was built with nvcc.
bool BuiltWithCuda();
/// Compiled architectures, e.g. "80;89;90" (empty without CUDA).
std::string CompiledArchitectures();
/// Number of CUDA devices visible now (0 without CUDA, driver or device).
int DeviceCount();
/// Runs a one-element kernel (x + 1) on the device: proves the toolchain and runtime work.
/// Returns false without a device.
bool RunToolchainProbe(int x, int* result);

}  // namespace qcc::cuda

#endif  // QCC_BACKEND_CUDA_CUDA_INFO_H_
