// LaunchBody (device_launch.h) for every kernel body the runtime launches: one explicit
// instantiation of launch.cuh's grid-stride kernel per body. No absl here (nvcc).
#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/movement_bodies.h"
#include "kernels/cuda/pool_bodies.h"
#include "runtime/cuda/device_launch.h"

namespace qcc::runtime::cuda_exec {

template <typename Body>
cudaError_t LaunchBody(int64_t n, const BodyArgs<Body>& args, cudaStream_t stream) {
  return ::qcc::cuda::LaunchIndex<Body>(n, args, stream);
}

#define QCC_LAUNCH_BODY(Body)                                                                     \
  template cudaError_t LaunchBody<::qcc::cuda::Body>(int64_t, const BodyArgs<::qcc::cuda::Body>&, \
                                                     cudaStream_t)

// elementwise_bodies.h
QCC_LAUNCH_BODY(QuantizeBody);
QCC_LAUNCH_BODY(DequantizeBody);
QCC_LAUNCH_BODY(RequantizeBody);
QCC_LAUNCH_BODY(QAddBody);
QCC_LAUNCH_BODY(QLutBody);
QCC_LAUNCH_BODY(CastF32ToF16Body);
QCC_LAUNCH_BODY(CastF16ToF32Body);
QCC_LAUNCH_BODY(UnaryBody);
QCC_LAUNCH_BODY(BinaryBody);
QCC_LAUNCH_BODY(SoftmaxBody);
// pool_bodies.h
QCC_LAUNCH_BODY(QMaxPoolBody);
QCC_LAUNCH_BODY(QAveragePoolBody);
QCC_LAUNCH_BODY(QGlobalAveragePoolBody);
QCC_LAUNCH_BODY(MaxPoolBody);
QCC_LAUNCH_BODY(AveragePoolBody);
QCC_LAUNCH_BODY(GlobalAveragePoolBody);
// movement_bodies.h (TransposeBody and SliceBody are StridedCopyBody)
QCC_LAUNCH_BODY(StridedCopyBody);
QCC_LAUNCH_BODY(PadBody);
QCC_LAUNCH_BODY(ConcatBody);
QCC_LAUNCH_BODY(QConcatBody);
// conv_bodies.h
QCC_LAUNCH_BODY(Im2colRowsInt8);
QCC_LAUNCH_BODY(Im2colNchwFloat);
QCC_LAUNCH_BODY(Im2colNchwFloatToHalf);
QCC_LAUNCH_BODY(PadRowsInt8);
QCC_LAUNCH_BODY(RequantEpilogue);
QCC_LAUNCH_BODY(RequantEpilogueNchw);
QCC_LAUNCH_BODY(FloatEpilogue);
QCC_LAUNCH_BODY(GemmEpilogueF32);
QCC_LAUNCH_BODY(DirectQConv);
QCC_LAUNCH_BODY(DirectQConv32);
QCC_LAUNCH_BODY(DirectConv);
QCC_LAUNCH_BODY(DirectConv32);

#undef QCC_LAUNCH_BODY

}  // namespace qcc::runtime::cuda_exec
