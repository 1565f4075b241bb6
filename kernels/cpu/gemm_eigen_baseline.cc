// Eigen's sgemm built for the baseline x86-64 (SSE2) (kernels/cpu/CMakeLists.txt sets this file's
// flags).
#define QCC_EIGEN_NAMESPACE QccEigenBaseline
#define QCC_SGEMM_EIGEN SgemmEigenBaseline
#include "kernels/cpu/gemm_eigen_body.inc"
