// qcc's int8 conv and GEMM kernels against an independent implementation: ONNX Runtime's
// QLinearConv and QLinearMatMul, and its QDQ runs (DequantizeLinear -> Conv/MatMul ->
// QuantizeLinear, fused into its int8 kernels, and computed in float with optimizations off), on
// the same quantized operands and scales (issue 18). tests/ort_reference/make_int8_cases.py
// writes the cases with ORT's outputs; uint8 activations (ORT's default) are the same arithmetic
// as int8 ones 128 lower, zero points included.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"
#include "support/npy.h"
#include "support/quantize.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

std::string CasesRoot() { return std::string(QCC_BINARY_DIR) + "/ort_int8_cases"; }

/// Runs make_int8_cases.py once per process; its exit code.
int MakeCases() {
  static const int code = [] {
    const std::string cmd = std::string(QCC_SOURCE_DIR) + "/.venv/bin/python " + QCC_SOURCE_DIR +
                            "/tests/ort_reference/make_int8_cases.py --out " + CasesRoot() +
                            " >/dev/null";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }();
  return code;
}

/// One case: params.txt as words per key, and its arrays.
struct Case {
  std::map<std::string, std::vector<std::string>> params;
  Tensor x, w, w_scale, bias;
  std::map<std::string, Tensor> ort;  // run name -> ORT's output

  double Number(const std::string& key) const { return std::stod(params.at(key).at(0)); }
  int64_t Int(const std::string& key, size_t i = 0) const {
    return std::stoll(params.at(key).at(i));
  }
  bool U8() const { return params.at("activations").at(0) == "u8"; }
};

Tensor Npy(const std::string& path) {
  absl::StatusOr<Tensor> t = ReadNpy(path);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

Case LoadCase(const std::string& name) {
  Case c;
  const std::string dir = CasesRoot() + "/" + name;
  std::ifstream in(dir + "/params.txt");
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key, word;
    words >> key;
    while (words >> word) c.params[key].push_back(word);
  }
  c.x = Npy(dir + "/x.npy");
  c.w = Npy(dir + "/w.npy");
  c.w_scale = Npy(dir + "/w_scale.npy");
  c.bias = Npy(dir + "/bias.npy");
  for (const std::string& run : c.params["runs"]) c.ort[run] = Npy(dir + "/y_" + run + ".npy");
  return c;
}

/// Quantized values as int8: uint8 data and zero points are 128 lower.
std::vector<int8_t> AsInt8(const Tensor& t) {
  std::vector<int8_t> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    out[i] = static_cast<int8_t>(t.dtype() == DType::kUInt8 ? t.data<uint8_t>()[i] - 128
                                                            : t.data<int8_t>()[i]);
  }
  return out;
}

/// How far qcc's output is from ORT's, in int8 steps.
struct Diff {
  int64_t differ = 0, total = 0, max = 0;
};

Diff Compare(const std::vector<int8_t>& got, const std::vector<int8_t>& want) {
  Diff d;
  d.total = static_cast<int64_t>(want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const int64_t e = std::abs(static_cast<int64_t>(got[i]) - want[i]);
    d.differ += e != 0;
    d.max = std::max(d.max, e);
  }
  return d;
}

/// qcc's outputs of a case: the reference kernel, then the fastest packed path this CPU has and
/// the AVX2 one (the same as the fastest where AVX-512 VNNI is missing).
std::vector<std::pair<std::string, std::vector<int8_t>>> RunQcc(const Case& c) {
  const int32_t x_zp = static_cast<int32_t>(c.Int("x_zp")) - (c.U8() ? 128 : 0);
  const int32_t y_zp = static_cast<int32_t>(c.Int("y_zp")) - (c.U8() ? 128 : 0);
  const float x_scale = static_cast<float>(c.Number("x_scale"));
  const float y_scale = static_cast<float>(c.Number("y_scale"));
  const std::vector<int8_t> x = AsInt8(c.x);
  const bool conv = c.params.at("kind").at(0) == "conv";
  // Weights as rows of output channels: conv [K, C/g, R, S] already is; MatMul's B [K, N] is
  // transposed into [N, K].
  const int64_t rows = conv ? c.w.dim(0) : c.w.dim(1);
  const int64_t cols = c.w.numel() / rows;
  std::vector<int8_t> w(c.w.numel());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      w[r * cols + k] = conv ? c.w.data<int8_t>()[r * cols + k] : c.w.data<int8_t>()[k * rows + r];
    }
  }
  // The contract's folded bias and multipliers (what passes/quantize.cc writes into a plan).
  std::vector<int32_t> bias(rows);
  std::vector<float> multiplier(rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t sum = 0;
    for (int64_t k = 0; k < cols; ++k) sum += w[r * cols + k];
    bias[r] = c.bias.data<int32_t>()[r] - static_cast<int32_t>(x_zp * sum);
    multiplier[r] = RequantMultiplier(x_scale, c.w_scale.data<float>()[r], y_scale);
  }
  std::vector<std::pair<std::string, std::vector<int8_t>>> out;
  if (conv) {
    cpu::QConvParams p;
    p.n = c.x.dim(0), p.c = c.x.dim(1), p.h = c.x.dim(2), p.w = c.x.dim(3);
    p.k = c.w.dim(0), p.r = c.w.dim(2), p.s = c.w.dim(3);
    p.stride_h = c.Int("strides", 0), p.stride_w = c.Int("strides", 1);
    p.pad_top = c.Int("pads", 0), p.pad_left = c.Int("pads", 1);
    p.pad_bottom = c.Int("pads", 2), p.pad_right = c.Int("pads", 3);
    p.dilation_h = c.Int("dilations", 0), p.dilation_w = c.Int("dilations", 1);
    p.group = c.Int("group");
    p.pad_value = static_cast<int8_t>(x_zp);
    p.zp_out = y_zp;
    p.input = x.data(), p.weights = w.data(), p.bias = bias.data();
    p.multiplier = multiplier.data();
    EXPECT_TRUE(cpu::ValidateQConvParams(p).ok());
    std::vector<int8_t> y(p.n * p.k * p.out_h() * p.out_w());
    p.output = y.data();
    cpu::QConvReference(p);
    out.emplace_back("reference", y);
    for (auto [name, path] :
         {std::pair<const char*, cpu::QKernelPath>{"fastest", cpu::QKernelPath::kFastest},
          {"avx2", cpu::QKernelPath::kAvx2}}) {
      const cpu::PackedQConvWeights packed = cpu::PackQConvWeights(p, path);
      std::vector<uint8_t> workspace(cpu::QConvWorkspaceBytes(p, packed));
      std::fill(y.begin(), y.end(), 0);
      cpu::QConv(p, packed, workspace.data());
      out.emplace_back(name, y);
    }
    return out;
  }
  cpu::QGemmParams p;
  p.m = c.x.dim(0), p.k = cols, p.n = rows;
  p.a = x.data(), p.b = w.data(), p.bias = bias.data(), p.multiplier = multiplier.data();
  p.zp_out = y_zp;
  std::vector<int8_t> y(p.m * p.n);
  p.y = y.data();
  cpu::QGemmReference(p);
  out.emplace_back("reference", y);
  for (auto [name, path] :
       {std::pair<const char*, cpu::QKernelPath>{"fastest", cpu::QKernelPath::kFastest},
        {"avx2", cpu::QKernelPath::kAvx2}}) {
    const cpu::PackedQGemmWeights packed = cpu::PackQGemmWeights(p, path);
    std::fill(y.begin(), y.end(), 0);
    cpu::QGemm(p, packed);
    out.emplace_back(name, y);
  }
  return out;
}

class Int8OrtReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { MakeCases(); }
  void SetUp() override {
    ASSERT_EQ(MakeCases(), 0)
        << "tests/ort_reference/make_int8_cases.py failed (run scripts/setup for the venv)";
  }
};

TEST_P(Int8OrtReferenceTest, KernelsMatchOnnxRuntime) {
  const Case c = LoadCase(GetParam());
  ASSERT_TRUE(c.x.defined() && c.w.defined() && c.w_scale.defined() && c.bias.defined());
  ASSERT_EQ(c.ort.size(), 3u);
  // ORT's int8 kernels (QLinear*, and the QDQ model they fuse into) requantize as the contract
  // does: float(acc) * (s_x * s_w / s_y), rounded half to even. They agree bit for bit. The QDQ
  // model computed in float may round a value lying within float error of a half step the
  // other way: at most 1 step, on at most 1 in 200 outputs.
  for (const auto& [kernel, y] : RunQcc(c)) {
    for (const auto& [run, want] : c.ort) {
      const Diff d = Compare(y, AsInt8(want));
      std::printf("%s: qcc %s vs ORT %s: %lld of %lld differ, max %lld\n", GetParam().c_str(),
                  kernel.c_str(), run.c_str(), static_cast<long long>(d.differ),
                  static_cast<long long>(d.total), static_cast<long long>(d.max));
      ASSERT_EQ(static_cast<int64_t>(y.size()), d.total) << kernel << " vs " << run;
      if (run == "qdq_float") {
        EXPECT_LE(d.max, 1) << kernel << " vs " << run;
        EXPECT_LE(d.differ * 200, d.total) << kernel << " vs " << run;
      } else {
        EXPECT_EQ(d.differ, 0) << kernel << " vs " << run;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OrtCases, Int8OrtReferenceTest,
                         ::testing::Values("conv3x3", "conv3x3_s2_asym_pads", "depthwise5x5",
                                           "grouped_dilated", "pointwise", "conv3x3_u8",
                                           "depthwise3x3_u8_s2", "matmul", "matmul_u8_per_column",
                                           "matmul_wide"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace qcc::testing
