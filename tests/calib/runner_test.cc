// The calibration runner: exact statistics of every observed tensor over a folder of samples,
// independent of batch size, thread count and sharding; NaN counting; and its errors.
#include "calib/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "backend_cuda/cuda_info.h"
#include "calib/dataset.h"
#include "calib/runner_internal.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "support/npy.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

namespace fs = std::filesystem;

std::string TempDir() { return qcc::testing::NewTestDir("qcc_calib_runner"); }

// x [N,4] -> Relu -> y -> Softmax -> z. Relu is quantizable, Softmax is not: x and y are
// observed, z is not.
std::unique_ptr<ir::Graph> ReluSoftmaxGraph(int64_t batch_dim = ir::SymbolDim(0)) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  if (batch_dim < 0) g->AddSymbol("N");
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {batch_dim, 4}));
  ir::Node* relu = g->AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"});
  ir::Node* softmax = g->AddNode(ir::OpKind::kSoftmax, "softmax", {relu->output(0)}, {"z"});
  g->AddOutput(softmax->output(0));
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

// Writes sample i as `dir`/NNN.npy holding [1,4] = values[4i .. 4i+3].
void WriteSamples(const std::string& dir, const std::vector<float>& values) {
  for (size_t i = 0; i * 4 < values.size(); ++i) {
    Tensor t = Tensor::FromVector<float>(DType::kFloat32, {1, 4},
                                         {values.begin() + 4 * i, values.begin() + 4 * i + 4});
    ASSERT_TRUE(WriteNpy(absl::StrFormat("%s/%03d.npy", dir, i), t).ok());
  }
}

std::vector<float> SampleValues(int samples) {
  std::vector<float> v;
  for (int i = 0; i < samples * 4; ++i) v.push_back(0.25f * static_cast<float>((i * 7) % 23 - 11));
  return v;
}

absl::StatusOr<CalibrationRun> Calibrate(const std::string& dir, int64_t batch, int threads,
                                         DatasetOptions data_options = {}) {
  auto graph = ReluSoftmaxGraph();
  auto instrumented = InstrumentForCalibration(*graph);
  if (!instrumented.ok()) return instrumented.status();
  auto data = Dataset::Open(dir, GraphDataInputs(*graph), data_options);
  if (!data.ok()) return data.status();
  RunnerOptions options;
  options.batch = batch;
  options.num_threads = threads;
  return RunCalibration(*graph, **data, options);
}

TEST(CalibRunner, StatisticsAreThoseOfEveryObservedValue) {
  const std::string dir = TempDir();
  const std::vector<float> values = SampleValues(10);
  WriteSamples(dir, values);
  std::vector<int64_t> progress;
  auto graph = ReluSoftmaxGraph();
  ASSERT_TRUE(InstrumentForCalibration(*graph).ok());
  auto data = Dataset::Open(dir, GraphDataInputs(*graph), {});
  ASSERT_TRUE(data.ok()) << data.status();
  RunnerOptions options;
  options.batch = 4;
  options.on_progress = [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, 10);
    progress.push_back(done);
  };
  absl::StatusOr<CalibrationRun> run = RunCalibration(*graph, **data, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->samples, 10);
  EXPECT_EQ(run->batch, 4);
  EXPECT_EQ(progress, (std::vector<int64_t>{4, 8, 10}));
  ASSERT_EQ(run->tensors.size(), 2u);  // x and y; not the Softmax output z
  ASSERT_TRUE(run->tensors.count("x") && run->tensors.count("y"));

  TensorStats expect_x, expect_y;
  expect_x.Add(values.data(), static_cast<int64_t>(values.size()));
  std::vector<float> relu;
  for (float v : values) relu.push_back(std::max(v, 0.0f));
  expect_y.Add(relu.data(), static_cast<int64_t>(relu.size()));
  EXPECT_TRUE(run->tensors.at("x") == expect_x);
  EXPECT_TRUE(run->tensors.at("y") == expect_y);
  EXPECT_EQ(run->tensors.at("x").count(), 40);
  EXPECT_EQ(run->tensors.at("x").min(), -2.75f);
  EXPECT_EQ(run->tensors.at("x").max(), 2.75f);
  EXPECT_EQ(run->tensors.at("y").min(), 0.0f);
}

// x [N,4] -> Relu -> y; Concat(y, x) -> c [N,8] -> Reshape [N,2,4] -> r -> Relu -> out. The
// statistics of c and r are merged from those of y and x (the same values), not collected again:
// they must equal those of the values themselves, on one thread or with a batch per thread.
TEST(CalibRunner, ConcatAndReshapeOutputsHaveTheStatisticsOfTheirValues) {
  const std::string dir = TempDir();
  const std::vector<float> values = SampleValues(10);
  WriteSamples(dir, values);
  TensorStats expect;  // per sample: relu(x), then x
  for (size_t i = 0; i < values.size(); i += 4) {
    float row[8];
    for (int j = 0; j < 4; ++j) {
      row[j] = std::max(values[i + j], 0.0f);
      row[4 + j] = values[i + j];
    }
    expect.Add(row, 8);
  }
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto g = std::make_unique<ir::Graph>();
    g->set_opset(13);
    const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
    ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4}));
    ir::Value* y = g->AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"})->output(0);
    ir::Node* cat = g->AddNode(ir::OpKind::kConcat, "concat", {y, x}, {"c"});
    cat->mutable_attrs<ir::AxisAttrs>().axis = 1;
    ir::Value* shape =
        g->NewConstant("shape", Tensor::FromVector<int64_t>(DType::kInt64, {3}, {-1, 2, 4}));
    ir::Value* r =
        g->AddNode(ir::OpKind::kReshape, "reshape", {cat->output(0), shape}, {"r"})->output(0);
    g->AddOutput(g->AddNode(ir::OpKind::kRelu, "relu2", {r}, {"out"})->output(0));
    ASSERT_TRUE(ir::InferShapes(*g).ok());
    ASSERT_TRUE(InstrumentForCalibration(*g).ok());
    auto data = Dataset::Open(dir, GraphDataInputs(*g), {});
    ASSERT_TRUE(data.ok()) << data.status();
    RunnerOptions options;
    options.batch = 1;
    options.num_threads = threads;
    absl::StatusOr<CalibrationRun> run = RunCalibration(*g, **data, options);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_TRUE(run->tensors.count("c") && run->tensors.count("r"));
    EXPECT_EQ(run->tensors.at("c").count(), 80);
    EXPECT_TRUE(run->tensors.at("c") == expect);
    EXPECT_TRUE(run->tensors.at("r") == expect);
  }
}

TEST(CalibRunner, BatchThreadsAndShardsDoNotChangeTheStatistics) {
  const std::string dir = TempDir();
  WriteSamples(dir, SampleValues(37));
  absl::StatusOr<CalibrationRun> reference = Calibrate(dir, 1, 1);
  ASSERT_TRUE(reference.ok()) << reference.status();
  // At batch 1 with 2 or 3 threads, 2 or 3 lanes take the samples as they come, each into its
  // own statistics.
  for (int64_t batch : {1, 2, 5, 16, 64}) {
    for (int threads : {1, 2, 3}) {
      absl::StatusOr<CalibrationRun> run = Calibrate(dir, batch, threads);
      ASSERT_TRUE(run.ok()) << run.status();
      EXPECT_EQ(run->samples, 37);
      EXPECT_TRUE(run->tensors == reference->tensors)
          << "batch " << batch << " threads " << threads;
    }
  }
  // Three shards merged equal the whole.
  std::map<std::string, TensorStats> merged;
  int64_t samples = 0;
  for (int shard = 0; shard < 3; ++shard) {
    DatasetOptions o;
    o.shard_index = shard;
    o.shard_count = 3;
    absl::StatusOr<CalibrationRun> run = Calibrate(dir, 4, 2, o);
    ASSERT_TRUE(run.ok()) << run.status();
    samples += run->samples;
    for (const auto& [name, stats] : run->tensors) merged[name].Merge(stats);
  }
  EXPECT_EQ(samples, 37);
  EXPECT_TRUE(merged == reference->tensors);
}

TEST(CalibRunner, LargeTensorsSplitAcrossThreadsGiveTheSameStatistics) {
  // 20,000 values per sample: over the per-thread threshold, so the statistics are gathered
  // in pieces and merged.
  const std::string dir = TempDir();
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  g->AddSymbol("N");
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {ir::SymbolDim(0), 20000}));
  ir::Node* relu = g->AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"});
  g->AddOutput(relu->output(0));
  ASSERT_TRUE(ir::InferShapes(*g).ok());
  ASSERT_TRUE(InstrumentForCalibration(*g).ok());
  std::vector<float> all;
  for (int s = 0; s < 8; ++s) {
    std::vector<float> v(20000);
    for (int i = 0; i < 20000; ++i) v[i] = std::sin(0.001f * static_cast<float>(i * (s + 1)));
    all.insert(all.end(), v.begin(), v.end());
    ASSERT_TRUE(WriteNpy(absl::StrFormat("%s/%d.npy", dir, s),
                         Tensor::FromVector<float>(DType::kFloat32, {1, 20000}, v))
                    .ok());
  }
  TensorStats expect;
  expect.Add(all.data(), static_cast<int64_t>(all.size()));
  auto data = Dataset::Open(dir, GraphDataInputs(*g), {});
  ASSERT_TRUE(data.ok()) << data.status();
  RunnerOptions options;
  options.batch = 8;
  options.num_threads = 2;
  absl::StatusOr<CalibrationRun> run = RunCalibration(*g, **data, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->tensors.at("x") == expect);
}

TEST(CalibRunner, NanAndInfinityInTheDataAreCountedPerTensor) {
  const std::string dir = TempDir();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  WriteSamples(dir, {1, nan, -inf, 2, nan, 3, inf, -1});
  absl::StatusOr<CalibrationRun> run = Calibrate(dir, 2, 1);
  ASSERT_TRUE(run.ok()) << run.status();
  const TensorStats& x = run->tensors.at("x");
  EXPECT_EQ(x.nan_count(), 2);
  EXPECT_EQ(x.posinf_count(), 1);
  EXPECT_EQ(x.neginf_count(), 1);
  EXPECT_EQ(x.min(), -1.0f);
  EXPECT_EQ(x.max(), 3.0f);
  // Relu keeps NaN and +inf and maps -inf to 0.
  const TensorStats& y = run->tensors.at("y");
  EXPECT_EQ(y.nan_count(), 2);
  EXPECT_EQ(y.posinf_count(), 1);
  EXPECT_EQ(y.neginf_count(), 0);
}

TEST(CalibRunner, FixedBatchOfOneRunsOneSampleAtATime) {
  const std::string dir = TempDir();
  WriteSamples(dir, SampleValues(3));
  auto graph = ReluSoftmaxGraph(/*batch_dim=*/1);
  ASSERT_TRUE(InstrumentForCalibration(*graph).ok());
  auto data = Dataset::Open(dir, GraphDataInputs(*graph), {});
  ASSERT_TRUE(data.ok()) << data.status();
  RunnerOptions options;
  options.batch = 16;
  absl::StatusOr<CalibrationRun> run = RunCalibration(*graph, **data, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->batch, 1);
  EXPECT_EQ(run->samples, 3);
}

TEST(CalibRunner, SamplesOfVaryingShapeRunInSeparateBatchesAndReportProgress) {
  // x [N, W] with a dynamic W: samples of width 4, 4, 6, 4 make three batches (4+4, 6, 4).
  const std::string dir = TempDir();
  const std::vector<int64_t> widths = {4, 4, 6, 4};
  std::vector<float> all;
  for (size_t i = 0; i < widths.size(); ++i) {
    std::vector<float> v;
    for (int64_t k = 0; k < widths[i]; ++k) v.push_back(static_cast<float>(i * 10 + k) - 12.0f);
    all.insert(all.end(), v.begin(), v.end());
    ASSERT_TRUE(WriteNpy(absl::StrFormat("%s/%d.npy", dir, i),
                         Tensor::FromVector<float>(DType::kFloat32, {1, widths[i]}, v))
                    .ok());
  }
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  g->AddSymbol("N");
  g->AddSymbol("W");
  ir::Value* x =
      g->AddInput("x", ir::TensorType(DType::kFloat32, {ir::SymbolDim(0), ir::SymbolDim(1)}));
  g->AddOutput(g->AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"})->output(0));
  ASSERT_TRUE(ir::InferShapes(*g).ok());
  ASSERT_TRUE(InstrumentForCalibration(*g).ok());
  auto data = Dataset::Open(dir, GraphDataInputs(*g), {});
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<int64_t> progress;
  RunnerOptions options;
  options.batch = 16;
  options.on_progress = [&](int64_t done, int64_t) { progress.push_back(done); };
  absl::StatusOr<CalibrationRun> run = RunCalibration(*g, **data, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->samples, 4);
  EXPECT_EQ(progress, (std::vector<int64_t>{2, 3, 4}));
  TensorStats expect;
  expect.Add(all.data(), static_cast<int64_t>(all.size()));
  EXPECT_TRUE(run->tensors.at("x") == expect);
}

TEST(CalibRunner, LanesRunEverySampleOnceAndReportProgressInOrder) {
  // StreamLanes on 2 and 3 lanes: each sample runs once, on some lane, and progress counts the
  // samples run, one at a time, up to all of them.
  const std::string dir = TempDir();
  WriteSamples(dir, SampleValues(23));
  auto graph = ReluSoftmaxGraph(/*batch_dim=*/1);
  for (int lanes : {2, 3}) {
    auto data = Dataset::Open(dir, GraphDataInputs(*graph), {});
    ASSERT_TRUE(data.ok()) << data.status();
    std::mutex mu;
    std::multiset<float> firsts;  // each sample's first value
    std::set<int> lanes_seen;
    std::vector<int64_t> progress;
    RunnerOptions options;
    options.on_progress = [&](int64_t done, int64_t total) {
      EXPECT_EQ(total, 23);
      progress.push_back(done);
    };
    CalibrationRun run;
    const absl::Status status = internal::StreamLanes(
        **data, options, lanes,
        [&](int lane, const std::vector<Tensor>& inputs) {
          EXPECT_EQ(inputs.size(), 1u);
          EXPECT_EQ(inputs[0].dims(), (Dims{1, 4}));
          std::lock_guard<std::mutex> lock(mu);
          firsts.insert(inputs[0].data<float>()[0]);
          lanes_seen.insert(lane);
          return absl::OkStatus();
        },
        &run);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(run.samples, 23);
    const std::vector<float> values = SampleValues(23);
    std::multiset<float> expect;
    for (int i = 0; i < 23; ++i) expect.insert(values[4 * i]);
    EXPECT_EQ(firsts, expect) << lanes << " lanes";
    for (int lane : lanes_seen) EXPECT_TRUE(lane >= 0 && lane < lanes) << lane;
    std::vector<int64_t> counts(23);
    for (int i = 0; i < 23; ++i) counts[i] = i + 1;
    EXPECT_EQ(progress, counts) << lanes << " lanes";
  }
}

TEST(CalibRunner, LanesNameTheFileOfAFailedSample) {
  // Sample 5 fails on whichever lane runs it: the error keeps its code and names 005.npy, and
  // not every sample ran.
  const std::string dir = TempDir();
  const std::vector<float> values = SampleValues(40);
  WriteSamples(dir, values);
  auto graph = ReluSoftmaxGraph(/*batch_dim=*/1);
  auto data = Dataset::Open(dir, GraphDataInputs(*graph), {});
  ASSERT_TRUE(data.ok()) << data.status();
  CalibrationRun run;
  const absl::Status status = internal::StreamLanes(
      **data, {}, 2,
      [&](int, const std::vector<Tensor>& inputs) {
        const float* v = inputs[0].data<float>();
        if (std::equal(v, v + 4, values.begin() + 20)) return absl::InternalError("bad sample");
        return absl::OkStatus();
      },
      &run);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("005.npy"), std::string::npos) << status;
  EXPECT_NE(status.message().find("bad sample"), std::string::npos) << status;
  EXPECT_LT(run.samples, 40);
}

TEST(CalibRunner, Errors) {
  const std::string dir = TempDir();
  WriteSamples(dir, SampleValues(2));
  // No observers: nothing to calibrate.
  auto plain = ReluSoftmaxGraph();
  auto data = Dataset::Open(dir, GraphDataInputs(*plain), {});
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<CalibrationRun> run = RunCalibration(*plain, **data, {});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("nothing to calibrate"), std::string::npos);
  // --device cuda without a device (or without CUDA in this build) says to use the CPU.
  auto graph = ReluSoftmaxGraph();
  ASSERT_TRUE(InstrumentForCalibration(*graph).ok());
  if (cuda::DeviceCount() == 0) {
    RunnerOptions cuda;
    cuda.device = Device::kCuda;
    run = RunCalibration(*graph, **data, cuda);
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), absl::StatusCode::kFailedPrecondition) << run.status();
    EXPECT_NE(run.status().message().find("--device cpu"), std::string::npos) << run.status();
    // auto runs on the CPU then.
    RunnerOptions automatic;
    automatic.device = Device::kAuto;
    run = RunCalibration(*graph, **data, automatic);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->device, Device::kCpu);
  }
  EXPECT_FALSE(ParseDevice("gpu").ok());
  EXPECT_EQ(*ParseDevice("auto"), Device::kAuto);
  // A fixed batch other than 1.
  auto fixed = ReluSoftmaxGraph(/*batch_dim=*/2);
  ASSERT_TRUE(InstrumentForCalibration(*fixed).ok());
  DataInput relaxed{"x", ir::TensorType(DType::kFloat32, {ir::SymbolDim(0), 4}), ""};
  auto fixed_data = Dataset::Open(dir, {relaxed}, {});
  ASSERT_TRUE(fixed_data.ok()) << fixed_data.status();
  run = RunCalibration(*fixed, **fixed_data, {});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("fixed batch of 2"), std::string::npos);
}

}  // namespace
}  // namespace qcc::calib
