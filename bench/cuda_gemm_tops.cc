// cuBLASLt GEMM throughput at 4096^3 (or the size given as the first argument): int8 IMMA
// (int32 output) and fp16 with fp32 accumulation (fp32 output), the two GEMMs the CUDA backend
// runs, through kernels/cuda/cublaslt_gemm.h exactly as the backend submits them
// (gemm_problem.h: Int8Gemm, HalfConvGemm). Prints measured TOPS/TFLOPS against the card's
// dense (non-sparse) datasheet peak. Without a device it prints "no CUDA device" and exits 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend_cuda/cuda_info.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemm_problem.h"

namespace {

using qcc::cuda::CublasLtGemm;
using qcc::cuda::GemmProblem;

// Dense tensor-core peaks from NVIDIA's datasheets (boost clock): int8 TOPS, fp16 TFLOPS with
// fp32 accumulation. `match` is searched in the device name; first match wins (order matters).
struct Peak {
  const char* match;
  const char* also;  // a second substring that must be present (or null)
  const char* name;
  double int8_tops;
  double fp16_tflops;
};
// clang-format off
constexpr Peak kPeaks[] = {
    {"H200", "NVL", "H200 NVL", 1671.0, 835.0},
    {"H200", nullptr, "H200 SXM", 1979.0, 989.4},
    {"H100", "PCIe", "H100 PCIe", 1513.0, 756.0},
    {"H100", "NVL", "H100 NVL", 1671.0, 835.0},
    {"H100", nullptr, "H100 SXM", 1979.0, 989.4},
    {"A100", nullptr, "A100", 624.0, 312.0},
    {"L40S", nullptr, "L40S", 733.0, 362.05},
    {"L40", nullptr, "L40", 362.0, 181.0},
    {"L4", nullptr, "L4", 242.5, 121.0},
};
// clang-format on

const Peak* FindPeak(const std::string& device) {
  for (const Peak& p : kPeaks) {
    if (device.find(p.match) == std::string::npos) continue;
    if (p.also != nullptr && device.find(p.also) == std::string::npos) continue;
    return &p;
  }
  return nullptr;
}

#define CHECK_CUDA(call)                                                        \
  do {                                                                          \
    const cudaError_t err_ = (call);                                            \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (false)

// Mean seconds per run of `p` (operands filled with small values; 5 warm-up runs, then `iters`).
double TimeGemm(CublasLtGemm* gemm, const GemmProblem& p, int iters) {
  const size_t a_bytes = p.a_elements() * qcc::cuda::GemmTypeBytes(p.a_type);
  const size_t b_bytes = p.b_elements() * qcc::cuda::GemmTypeBytes(p.b_type);
  const size_t c_bytes = p.c_elements() * qcc::cuda::GemmTypeBytes(p.c_type);
  void *a = nullptr, *b = nullptr, *c = nullptr, *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&a, a_bytes));
  CHECK_CUDA(cudaMalloc(&b, b_bytes));
  CHECK_CUDA(cudaMalloc(&c, c_bytes));
  CHECK_CUDA(cudaMalloc(&ws, CublasLtGemm::kDefaultWorkspaceBytes));
  CHECK_CUDA(cudaMemset(a, 1, a_bytes));  // int8 1, fp16 0x0101 (a small normal)
  CHECK_CUDA(cudaMemset(b, 1, b_bytes));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const auto run = [&]() {
    const absl::Status s = gemm->Run(p, a, b, c, ws, CublasLtGemm::kDefaultWorkspaceBytes, stream);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      std::exit(1);
    }
  };
  for (int i = 0; i < 5; ++i) run();
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) run();
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(ws);
  return ms / 1000.0 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  if (qcc::cuda::DeviceCount() == 0) {
    std::printf("no CUDA device\n");
    return 0;
  }
  const int64_t size = argc > 1 ? std::atoll(argv[1]) : 4096;
  if (size <= 0 || size % 8 != 0) {
    std::fprintf(stderr, "size must be a positive multiple of 8\n");
    return 2;
  }
  int dev = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  const std::string name = prop.name;
  const Peak* peak = FindPeak(name);
  absl::StatusOr<std::unique_ptr<CublasLtGemm>> gemm = CublasLtGemm::Create();
  if (!gemm.ok()) {
    std::fprintf(stderr, "%s\n", std::string(gemm.status().message()).c_str());
    return 1;
  }
  struct Row {
    const char* what;
    const char* unit;
    GemmProblem problem;
    double peak;
  };
  const Row rows[] = {
      {"int8 IMMA, int32 out", "TOPS", qcc::cuda::Int8Gemm(size, size, size),
       peak != nullptr ? peak->int8_tops : 0.0},
      {"fp16, fp32 accumulate", "TFLOPS", qcc::cuda::HalfConvGemm(size, size, size),
       peak != nullptr ? peak->fp16_tflops : 0.0},
  };
  std::printf("device: %s (sm_%d%d), peak: %s\n", name.c_str(), prop.major, prop.minor,
              peak != nullptr ? peak->name : "unknown");
  std::printf("| GEMM %lldx%lldx%lld        | unit   | measured | dense peak | of peak |\n",
              static_cast<long long>(size), static_cast<long long>(size),
              static_cast<long long>(size));
  std::printf("|---------------------------|--------|----------|------------|---------|\n");
  for (const Row& r : rows) {
    const double seconds = TimeGemm(gemm->get(), r.problem, 20);
    const double ops = 2.0 * static_cast<double>(r.problem.m) * static_cast<double>(r.problem.n) *
                       static_cast<double>(r.problem.k);
    const double measured = ops / seconds / 1e12;
    if (r.peak > 0.0) {
      std::printf("| %-25s | %-6s | %8.1f | %10.1f | %6.1f%% |\n", r.what, r.unit, measured, r.peak,
                  100.0 * measured / r.peak);
    } else {
      std::printf("| %-25s | %-6s | %8.1f | %10s | %7s |\n", r.what, r.unit, measured, "unknown",
                  "-");
    }
  }
  return 0;
}
