// Eigen's sgemm built for AVX-512F and FMA (kernels/cpu/CMakeLists.txt sets this file's flags).
#define QCC_EIGEN_NAMESPACE QccEigenAvx512
#define QCC_SGEMM_EIGEN SgemmEigenAvx512
#include "kernels/cpu/gemm_eigen_body.inc"
