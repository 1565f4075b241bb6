// Eigen's sgemm built for AVX2 and FMA (kernels/cpu/CMakeLists.txt sets this file's flags).
#define QCC_EIGEN_NAMESPACE QccEigenAvx2
#define QCC_SGEMM_EIGEN SgemmEigenAvx2
#include "kernels/cpu/gemm_eigen_body.inc"
