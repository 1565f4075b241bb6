// fp16 <-> fp32 tensor conversions through the vector kernels (qelementwise.h), with
// CastTensor's values: the evaluator widens fp16 models' values with them, and calibration
// narrows its fp32 samples for an fp16 input.
#ifndef QCC_BACKEND_CPU_TENSOR_CONVERT_H_
#define QCC_BACKEND_CPU_TENSOR_CONVERT_H_

#include "support/tensor.h"

namespace qcc::cpu {

/// `t` (fp16 or bf16) as fp32: fp16 through the vector kernel (HalfToFloat's values exactly).
Tensor WidenToF32(const Tensor& t, int num_threads);

/// fp32 `t` as `to`: fp16 through the vector kernel (FloatToHalf's values exactly); any other
/// pair of types through CastTensor.
Tensor NarrowFromF32(const Tensor& t, DType to, int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_TENSOR_CONVERT_H_
