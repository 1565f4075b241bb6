// The one bridge from the runtime's host code (*_cuda.cc, compiled by the host compiler, with
// absl) to device code (*.cu, compiled by nvcc, without absl): LaunchBody<Body>(n, args, stream)
// runs a kernel body of kernels/cuda/*_bodies.h over [0, n) on `stream` through
// launch.cuh's LaunchIndex. It is declared here and explicitly instantiated, once per body the
// runtime launches, in device_launch.cu, so host files can launch any body without nvcc.
// Adding a body: launch it from a *_cuda.cc file and add one QCC_LAUNCH_BODY line to
// device_launch.cu (a missing line is a link error naming the body).
#ifndef QCC_RUNTIME_CUDA_DEVICE_LAUNCH_H_
#define QCC_RUNTIME_CUDA_DEVICE_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qcc::runtime::cuda_exec {

/// The Args type of a body: the first parameter of Body::Run.
template <typename Fn>
struct BodyArgsOf;
template <typename A>
struct BodyArgsOf<void (*)(const A&, int64_t)> {
  using type = A;
};
template <typename Body>
using BodyArgs = typename BodyArgsOf<decltype(&Body::Run)>::type;

/// Launches Body::Run(args, i) for i in [0, n) on `stream`; the launch's error (cudaSuccess when
/// n <= 0). Never synchronises.
template <typename Body>
cudaError_t LaunchBody(int64_t n, const BodyArgs<Body>& args, cudaStream_t stream);

}  // namespace qcc::runtime::cuda_exec

#endif  // QCC_RUNTIME_CUDA_DEVICE_LAUNCH_H_
