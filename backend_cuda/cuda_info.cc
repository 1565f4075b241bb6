#include "backend_cuda/cuda_info.h"

namespace qcc::cuda {

#ifdef QCC_HAVE_CUDA
int ProbeDeviceCount();
bool LaunchProbe(int x, int* result);
bool BuiltWithCuda() { return true; }
int DeviceCount() { return ProbeDeviceCount(); }
bool RunToolchainProbe(int x, int* result) { return DeviceCount() > 0 && LaunchProbe(x, result); }
#else
bool BuiltWithCuda() { return false; }
int DeviceCount() { return 0; }
bool RunToolchainProbe(int, int*) { return false; }
#endif

std::string CompiledArchitectures() { return BuiltWithCuda() ? QCC_CUDA_ARCHS : ""; }

}  // namespace qcc::cuda
