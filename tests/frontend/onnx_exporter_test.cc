// The ONNX exporter on the real models: import -> export -> import gives the same outputs (bit for
// bit, on the CPU evaluator), before and after the fusion passes (whose fused activations come back
// as their own nodes and whose opset-1 Softmax comes back in the opset-13 form); the exported file
// declares opset 19 and qcc's own ops are refused.
#include "frontend/onnx_exporter.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "passes/passes.h"

namespace qcc::frontend {
namespace {

struct Case {
  const char* folder;
  const char* file;
  std::vector<Dims> input_dims;  // one per graph input (symbolic extents chosen here)
};

/// Seeded inputs: floats in [-1, 1], int64 token ids in [0, 1000) (masks and type ids: 1 and 0).
std::vector<Tensor> Inputs(const ir::Graph& g, const Case& c) {
  std::mt19937 rng(5);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* in = g.inputs()[i];
    Tensor t(in->dtype(), c.input_dims[i]);
    for (int64_t k = 0; k < t.numel(); ++k) {
      if (in->dtype() == DType::kInt64) {
        const std::string& n = in->name();
        t.data<int64_t>()[k] = n.find("mask") != std::string::npos ? 1
                               : n.find("type") != std::string::npos
                                   ? 0
                                   : static_cast<int64_t>(rng() % 1000);
      } else if (in->dtype() == DType::kFloat32) {
        t.data<float>()[k] = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      }
    }
    if (in->dtype() != DType::kFloat32 && in->dtype() != DType::kInt64) {
      Tensor f(DType::kFloat32, c.input_dims[i]);
      for (int64_t k = 0; k < f.numel(); ++k) {
        f.data<float>()[k] = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      }
      t = CastTensor(f, in->dtype());
    }
    inputs.push_back(t);
  }
  return inputs;
}

std::vector<Tensor> Evaluate(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  auto ev = cpu::Evaluator::Create(g);
  EXPECT_TRUE(ev.ok()) << ev.status();
  if (!ev.ok()) return {};
  auto out = (*ev)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

/// Exports `g`, imports the result and returns it.
std::unique_ptr<ir::Graph> RoundTrip(const ir::Graph& g) {
  absl::StatusOr<onnx::ModelProto> m = ExportOnnxModel(g);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  EXPECT_EQ(m->opset_import(0).version(), ExportOpset(g));
  absl::StatusOr<std::unique_ptr<ir::Graph>> back = ImportOnnxModel(*m, "");
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *std::move(back) : nullptr;
}

void ExpectSameOutputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dims(), b[i].dims()) << what << " output " << i;
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what << " output " << i;
    EXPECT_EQ(0, std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes())) << what << " output " << i;
  }
}

class ExporterRealModels : public ::testing::TestWithParam<Case> {};

TEST_P(ExporterRealModels, ImportExportImportKeepsTheOutputs) {
  const Case& c = GetParam();
  const std::string path = std::string(QCC_SHARED_DIR) + "/models/" + c.folder + "/" + c.file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  auto g = ImportOnnxFile(path);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->inputs().size(), c.input_dims.size());
  const std::vector<Tensor> inputs = Inputs(**g, c);
  const std::vector<Tensor> want = Evaluate(**g, inputs);
  ASSERT_FALSE(want.empty());

  std::unique_ptr<ir::Graph> back = RoundTrip(**g);
  ASSERT_NE(back, nullptr);
  ExpectSameOutputs(want, Evaluate(*back, inputs), "imported graph");

  // After the fusions `qcc export` runs (conv-bn folded, activations fused into Conv/Gemm/Add
  // attributes, LayerNorm and GELU as their ONNX ops).
  auto compiled = ImportOnnxFile(path);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(passes::RunPipeline(**g, passes::OnnxFormPipeline()).ok());
  const std::vector<Tensor> fused = Evaluate(**g, inputs);
  std::unique_ptr<ir::Graph> fused_back = RoundTrip(**g);
  ASSERT_NE(fused_back, nullptr);
  ExpectSameOutputs(fused, Evaluate(*fused_back, inputs), "fused graph");

  // The compile pipeline's qcc.Attention has no ONNX form: the exporter refuses it by name.
  ASSERT_TRUE(passes::RunPipeline(**compiled, passes::DefaultPipeline()).ok());
  bool has_attention = false;
  for (const auto& n : (*compiled)->nodes()) has_attention |= n->kind() == ir::OpKind::kAttention;
  if (c.folder == std::string("minilm-l6-v2")) {
    EXPECT_TRUE(has_attention);  // 6 fuse
  }
  if (has_attention) {
    absl::StatusOr<onnx::ModelProto> m = ExportOnnxModel(**compiled);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("is a qcc.Attention"), std::string::npos) << m.status();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, ExporterRealModels,
    ::testing::Values(Case{"mnist-8", "model.onnx", {{1, 1, 28, 28}}},
                      Case{"resnet20-cifar10", "model.onnx", {{2, 3, 32, 32}}},
                      Case{"squeezenet1.1", "model-fp16.onnx", {{1, 3, 224, 224}}},
                      Case{"efficientnet-lite0", "model.onnx", {{1, 3, 224, 224}}},
                      Case{"ppocr-cls-mbv3", "model.onnx", {{2, 3, 48, 192}}},
                      Case{"ppocr-det-v3", "model.onnx", {{1, 3, 64, 64}}},
                      Case{"minilm-l6-v2", "model.onnx", {{2, 128}, {2, 128}, {2, 128}}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.folder;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST(Exporter, ObserveNodesAreRefused) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 4}));
  ir::Node* relu = g.AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"});
  relu->output(0)->set_type(x->type());
  g.AddOutput(relu->output(0));
  g.AddNode(ir::OpKind::kObserve, "observe", {relu->output(0)}, {});
  absl::StatusOr<onnx::ModelProto> m = ExportOnnxModel(g);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("qcc.Observe"), std::string::npos) << m.status();
}

}  // namespace
}  // namespace qcc::frontend
