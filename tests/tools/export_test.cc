// `qcc export` end to end on the real ResNet-20: the QDQ model's structure and scales against the
// plan compiled from the same table, the TensorRT calibration cache read back by a small reader,
// and the bad inputs (each a one-line error that writes nothing).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

using ExportTest = PlanTest;

constexpr int kResnet20Convs = 19;

onnx::ModelProto ReadModel(const std::string& path) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(ReadWholeFile(path))) << path;
  return m;
}

std::map<std::string, Tensor> Initializers(const onnx::ModelProto& m) {
  std::map<std::string, Tensor> out;
  for (const auto& t : m.graph().initializer()) {
    absl::StatusOr<Tensor> v = frontend::TensorFromProto(t, "");
    EXPECT_TRUE(v.ok()) << t.name();
    if (v.ok()) out[t.name()] = *v;
  }
  return out;
}

int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

/// A TensorRT calibration cache read back: the header line and tensor -> scale.
struct TrtCache {
  std::string header;
  std::map<std::string, float> scales;
  int bad_lines = 0;
};

TrtCache ReadTrtCache(const std::string& path) {
  TrtCache cache;
  const std::vector<std::string> lines = Lines(ReadWholeFile(path));
  if (lines.empty()) return cache;
  cache.header = lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].rfind(": ");
    const std::string hex = colon == std::string::npos ? "" : lines[i].substr(colon + 2);
    if (hex.size() != 8 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      ++cache.bad_lines;
      continue;
    }
    const uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    cache.scales[lines[i].substr(0, colon)] = scale;
  }
  return cache;
}

/// The class after "top-1: class " in `qcc run` output, or -1.
int Top1Class(const std::string& out) {
  const size_t at = out.find("top-1: class ");
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 13);
}

std::set<std::string> TableTensors(const std::string& table_path) {
  std::set<std::string> names;
  const nlohmann::json j = nlohmann::json::parse(ReadWholeFile(table_path));
  for (const auto& [name, stats] : j.at("tensors").items()) names.insert(name);
  return names;
}

TEST_F(ExportTest, QdqModelCarriesThePlansWeightsAndScales) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  const QccResult r = Qcc({"export", Resnet20Model(), "--qdq", "--calib", Path("t.json"), "-o",
                           Path("m.qdq.onnx"), "--trt-cache", Path("m.cache")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("20 with int8 weights, per-channel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("QDQ model -> " + Path("m.qdq.onnx")), std::string::npos) << r.out;
  EXPECT_FALSE(HasPlanOrTemp(".tmp")) << "temporary file left";

  const onnx::ModelProto m = ReadModel(Path("m.qdq.onnx"));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 19);
  const std::map<std::string, Tensor> init = Initializers(m);
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : m.graph().node()) {
    for (const auto& o : n.output()) producer[o] = &n;
  }
  int convs = 0, gemms = 0, quantize = 0;
  std::map<std::string, float> activation_scales;
  for (const auto& n : m.graph().node()) {
    EXPECT_NE(n.op_type(), "BatchNormalization") << n.name();
    if (n.op_type() == "QuantizeLinear") {
      ++quantize;
      ASSERT_EQ(n.input_size(), 3) << n.name();
      const Tensor& zp = init.at(n.input(2));
      EXPECT_EQ(zp.dtype(), DType::kInt8) << n.name();
      EXPECT_EQ(zp.GetAsDouble(0), 0.0) << n.name();
      // The tensor's name: the Q's input, or for a graph output the DQ's output (the float
      // tensor before the Q is then NAME_float).
      std::string name = n.input(0);
      for (const auto& out : m.graph().output()) {
        if (out.name() + "_float" == name) name = out.name();
      }
      activation_scales[name] = static_cast<float>(init.at(n.input(1)).GetAsDouble(0));
    }
    if (n.op_type() != "Conv" && n.op_type() != "Gemm") continue;
    (n.op_type() == "Conv" ? convs : gemms)++;
    // The weights: a per-channel DequantizeLinear of int8 data on the output-channel axis.
    const onnx::NodeProto* dq = producer.at(n.input(1));
    ASSERT_EQ(dq->op_type(), "DequantizeLinear") << n.name();
    const Tensor& w = init.at(dq->input(0));
    const Tensor& scale = init.at(dq->input(1));
    EXPECT_EQ(w.dtype(), DType::kInt8) << n.name();
    const int64_t axis = IntAttr(*dq, "axis", 1);
    const bool trans_b = n.op_type() == "Gemm" && IntAttr(n, "transB", 0) != 0;
    const int64_t out_axis = n.op_type() == "Conv" || trans_b ? 0 : 1;
    EXPECT_EQ(axis, out_axis) << n.name();
    EXPECT_EQ(scale.numel(), w.dim(out_axis)) << n.name();
    int extremes = 0;  // symmetric per-channel: some weight of each channel is at +-127
    for (int64_t i = 0; i < w.numel(); ++i) extremes += std::abs(w.GetAsDouble(i)) == 127.0;
    EXPECT_GE(extremes, 1) << n.name();
    // The activation input comes through a Q/DQ pair.
    EXPECT_EQ(producer.at(n.input(0))->op_type(), "DequantizeLinear") << n.name();
  }
  EXPECT_EQ(convs, kResnet20Convs);
  EXPECT_EQ(gemms, 1);
  EXPECT_GT(quantize, kResnet20Convs);

  ASSERT_TRUE(activation_scales.count("input")) << "the input has no QuantizeLinear";

  // The TensorRT cache: one line per calibrated tensor, each scale > 0, and the scales of the
  // tensors the QDQ model quantizes equal to its Q scales (both are the plan's).
  const TrtCache cache = ReadTrtCache(Path("m.cache"));
  EXPECT_EQ(cache.header, "TRT-8601-EntropyCalibration2");
  EXPECT_EQ(cache.bad_lines, 0);
  std::set<std::string> cached;
  for (const auto& [name, scale] : cache.scales) {
    cached.insert(name);
    EXPECT_TRUE(std::isfinite(scale) && scale > 0) << name << ": " << scale;
  }
  EXPECT_EQ(cached, TableTensors(Path("t.json")));
  for (const auto& [name, scale] : activation_scales) {
    ASSERT_TRUE(cache.scales.count(name)) << name;
    EXPECT_EQ(cache.scales.at(name), scale) << name;
  }

  // qcc runs the QDQ model itself (Q/DQ evaluated in fp32): the same top-1 class as the plan.
  for (int set = 0; set < 2; ++set) {
    const QccResult plan_run = Qcc({"run", Path("m.plan"), "--test-data", Resnet20TestSet(set)});
    const QccResult qdq_run = Qcc({"run", Path("m.qdq.onnx"), "--test-data", Resnet20TestSet(set)});
    ASSERT_EQ(plan_run.exit_code, 0) << plan_run.err;
    ASSERT_EQ(qdq_run.exit_code, 0) << qdq_run.err;
    EXPECT_GE(Top1Class(plan_run.out), 0) << plan_run.out;
    EXPECT_EQ(Top1Class(qdq_run.out), Top1Class(plan_run.out)) << plan_run.out << qdq_run.out;
  }
}

TEST_F(ExportTest, AsymmetricExportUsesUint8ZeroPoints) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const QccResult r = Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--asymmetric",
                           "-o", Path("a.qdq.onnx")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("uint8 asymmetric activations"), std::string::npos) << r.out;
  const onnx::ModelProto m = ReadModel(Path("a.qdq.onnx"));
  const std::map<std::string, Tensor> init = Initializers(m);
  int quantize = 0, nonzero = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "QuantizeLinear") continue;
    ++quantize;
    const Tensor& zp = init.at(n.input(2));
    EXPECT_EQ(zp.dtype(), DType::kUInt8) << n.name();
    nonzero += zp.GetAsDouble(0) != 128.0;
  }
  EXPECT_GT(quantize, kResnet20Convs);
  EXPECT_GT(nonzero, 0) << "every zero point is 128: the ranges were not asymmetric";
}

TEST_F(ExportTest, TrtCacheAloneAndItsVersion) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const QccResult r = Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--trt-cache",
                           Path("c.cache"), "--trt-version", "100300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("QDQ model"), std::string::npos) << "only the cache was asked for";
  EXPECT_EQ(ReadTrtCache(Path("c.cache")).header, "TRT-100300-EntropyCalibration2");
  EXPECT_FALSE(fs::exists(fs::path(Resnet20Model()).replace_extension(".qdq.onnx")));
}

TEST_F(ExportTest, BadInputIsAOneLineErrorAndWritesNothing) {
  // No table.
  ExpectOneLineError(
      Qcc({"export", Resnet20Model(), "--calib", Path("none.json"), "-o", Path("x.onnx")}),
      {"none.json", "qcc calibrate"});
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  // TensorRT's int8 is symmetric.
  ExpectOneLineError(Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--asymmetric",
                          "--trt-cache", Path("x.cache")}),
                     {"--trt-cache", "--asymmetric"});
  // -o names the QDQ model, which only --trt-cache does not ask for.
  ExpectOneLineError(Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--trt-cache",
                          Path("x.cache"), "-o", Path("x.onnx")}),
                     {"-o", "--qdq"});
  // A table of another model.
  const std::string mnist = SharedModelDir("mnist-8") + "/model.onnx";
  ExpectOneLineError(Qcc({"export", mnist, "--calib", Path("t.json"), "-o", Path("x.onnx")}),
                     {"t.json"});
  // An --exclude that matches nothing.
  ExpectOneLineError(Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--exclude",
                          "NoSuchNode", "-o", Path("x.onnx")}),
                     {"NoSuchNode"});
  // An output folder that does not exist.
  ExpectOneLineError(
      Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "-o", Path("no/such/dir/x.onnx")}),
      {"no/such/dir/x.onnx"});
  ExpectOneLineError(Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "--per-tensor",
                          "--per-channel", "-o", Path("x.onnx")}),
                     {"--per-channel", "--per-tensor"}, 2);
  // A model that already is a QDQ model.
  ASSERT_EQ(
      Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "-o", Path("q.onnx")}).exit_code,
      0);
  ExpectOneLineError(
      Qcc({"export", Path("q.onnx"), "--calib", Path("t.json"), "-o", Path("x.onnx")}),
      {"q.onnx", "already a QDQ model"});
  // ...whose compile takes no table and no weight granularity: the model decides.
  ExpectOneLineError(
      Qcc({"compile", Path("q.onnx"), "--int8", "--per-tensor", "-o", Path("x.plan")}),
      {"QDQ model", "--per-tensor"});
  EXPECT_FALSE(fs::exists(Path("x.onnx")));
  EXPECT_FALSE(fs::exists(Path("x.cache")));
  EXPECT_FALSE(fs::exists(Path("x.plan")));
  EXPECT_FALSE(HasPlanOrTemp(".tmp"));
}

TEST_F(ExportTest, ExportedModelCompilesBackToThePlansOutputs) {
  // export -> compile of the QDQ model (its own scales) gives the plan compile makes from the
  // table: the same outputs on the model's test data.
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  ASSERT_EQ(
      Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "-o", Path("q.onnx")}).exit_code,
      0);
  const QccResult c = Qcc({"compile", Path("q.onnx"), "--int8", "-o", Path("q.plan")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("20 weight tensors keep the model's scales"), std::string::npos) << c.out;
  for (int set = 0; set < 2; ++set) {
    ASSERT_EQ(
        Qcc({"run", Path("m.plan"), "--test-data", Resnet20TestSet(set), "--output-dir", Path("a")})
            .exit_code,
        0);
    ASSERT_EQ(
        Qcc({"run", Path("q.plan"), "--test-data", Resnet20TestSet(set), "--output-dir", Path("b")})
            .exit_code,
        0);
    absl::StatusOr<Tensor> a = frontend::ReadTensorProtoFile(Path("a/output_0.pb"));
    absl::StatusOr<Tensor> b = frontend::ReadTensorProtoFile(Path("b/output_0.pb"));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->numel(), b->numel());
    for (int64_t i = 0; i < a->numel(); ++i) {
      EXPECT_EQ(a->GetAsDouble(i), b->GetAsDouble(i)) << "set " << set << " logit " << i;
    }
  }
}

TEST_F(ExportTest, InspectPrintsTheQuantizedGraphAsExportWritesIt) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const QccResult r =
      Qcc({"inspect", Resnet20Model(), "--passes", "--int8", "--qdq", "--calib", Path("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(
      Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "-o", Path("q.onnx")}).exit_code,
      0);
  const onnx::ModelProto m = ReadModel(Path("q.onnx"));
  int q = 0, dq = 0, printed_q = 0, printed_dq = 0, convs = 0;
  for (const auto& n : m.graph().node()) {
    q += n.op_type() == "QuantizeLinear";
    dq += n.op_type() == "DequantizeLinear";
  }
  for (const std::string& line : Lines(r.out)) {
    printed_q += line.find(" = QuantizeLinear(") != std::string::npos;
    printed_dq += line.find(" = DequantizeLinear(") != std::string::npos;
    if (line.find(" = Conv(") != std::string::npos) {
      ++convs;
      EXPECT_NE(line.find("_weight_dequantized"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(printed_q, q);
  EXPECT_EQ(printed_dq, dq);
  EXPECT_EQ(convs, kResnet20Convs);
  ExpectOneLineError(Qcc({"inspect", Resnet20Model(), "--int8", "--calib", Path("t.json")}),
                     {"--passes"});
}

TEST_F(ExportTest, InspectPrintsTheQuantizedGraphTheLoweringReads) {
  // Without --qdq: the graph compile --int8 lowers, int8 tensors with their scales.
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const QccResult r =
      Qcc({"inspect", Resnet20Model(), "--passes", "--int8", "--calib", Path("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int qconvs = 0, quantizes = 0, dequantizes = 0;
  for (const std::string& line : Lines(r.out)) {
    EXPECT_EQ(line.find(" = Conv("), std::string::npos) << line;
    EXPECT_EQ(line.find("QuantizeLinear"), std::string::npos) << line;
    if (line.find(" = qcc.QConv(") != std::string::npos) {
      ++qconvs;
      EXPECT_NE(line.find(":int8, %"), std::string::npos) << line;  // reads an int8 tensor
      EXPECT_NE(line.find(" : i8["), std::string::npos) << line;    // writes one
      EXPECT_NE(line.find("] q("), std::string::npos) << line;      // with its scale
    }
    quantizes += line.find(" = qcc.Quantize(") != std::string::npos;
    dequantizes += line.find(" = qcc.Dequantize(") != std::string::npos;
  }
  EXPECT_EQ(qconvs, kResnet20Convs);
  EXPECT_EQ(quantizes, 1);    // the image
  EXPECT_EQ(dequantizes, 1);  // the logits
  EXPECT_NE(r.out.find(absl::StrCat("pass assign-precision: changed, nodes ")), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("-", kResnet20Convs, " Conv")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("+", kResnet20Convs, " qcc.QConv")), std::string::npos)
      << r.out;
  // Then the passes on the quantized graph: the pairs between int8 nodes cancel, and the scales
  // fold into integer bias and multipliers.
  EXPECT_NE(r.out.find("pass cancel-qdq: changed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass fold-scales: changed"), std::string::npos) << r.out;
  ExpectOneLineError(Qcc({"inspect", Resnet20Model(), "--qdq"}), {"--passes"});
}

TEST_F(ExportTest, InspectOfAQdqModelAbsorbsItsPairsAndQuantizesWithItsOwnScales) {
  // A QDQ model (qcc's own export) needs no table: its pairs become tensor parameters in the
  // absorb-qdq pass, which assign-precision then uses, as compile --int8 does.
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  ASSERT_EQ(
      Qcc({"export", Resnet20Model(), "--calib", Path("t.json"), "-o", Path("q.onnx")}).exit_code,
      0);
  const QccResult r = Qcc({"inspect", Path("q.onnx"), "--passes", "--int8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pass absorb-qdq: changed, nodes "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" QuantizeLinear, -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass assign-precision: changed"), std::string::npos) << r.out;
  int qconvs = 0, linear = 0;
  for (const std::string& line : Lines(r.out)) {
    qconvs += line.find(" = qcc.QConv(") != std::string::npos;
    linear += line.find("QuantizeLinear(") != std::string::npos;
  }
  EXPECT_EQ(qconvs, kResnet20Convs);
  EXPECT_EQ(linear, 0);  // every pair absorbed
  // The table does not apply to it.
  ExpectOneLineError(
      Qcc({"inspect", Path("q.onnx"), "--passes", "--int8", "--calib", Path("t.json")}),
      {"q.onnx", "QDQ model", "--calib"});
}

}  // namespace
}  // namespace qcc::testing
