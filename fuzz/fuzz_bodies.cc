#include "fuzz/fuzz_bodies.h"

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "calib/calib_table.h"
#include "calib/image.h"
#include "calib/scale_solvers.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "onnx/onnx_pb.h"
#include "runtime/engine.h"
#include "runtime/plan_format.h"
#include "support/memory.h"
#include "support/npy.h"

namespace qcc::fuzz {
namespace {

/// External data and files a fuzzed model names resolve under a folder that does not exist.
constexpr char kNoSuchFolder[] = "/nonexistent/qcc-fuzz";
/// Memory one prepared plan may take (arena and scratch), and the bytes of its zero inputs.
constexpr int64_t kPlanMemory = int64_t{256} << 20;
constexpr uint64_t kMaxInputBytes = uint64_t{64} << 20;

absl::string_view Bytes(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace

bool OnnxImport(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return false;
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph =
      frontend::ImportOnnxModel(model, kNoSuchFolder);
  if (!graph.ok() || !ir::Verify(**graph).ok()) return false;
  return ir::InferShapes(**graph).ok();
}

bool PlanLoad(const uint8_t* data, size_t size) {
  // As given (the checksum then rejects nearly every mutation), and with its trailing CRC-32
  // recomputed, so that mutations reach the header, manifest and weights checks behind it.
  (void)runtime::ParsePlanBytes(Bytes(data, size), "fuzz.plan");
  if (size < 4) return false;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const uint32_t crc = runtime::PlanChecksum(data, size - 4);
  for (int i = 0; i < 4; ++i) bytes[size - 4 + i] = static_cast<char>(crc >> (8 * i));
  absl::StatusOr<runtime::Plan> plan = runtime::ParsePlanBytes(bytes, "fuzz.plan");
  if (!plan.ok()) return false;
  runtime::EngineOptions options;
  options.num_threads = 1;
  options.max_memory = kPlanMemory;
  absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
      runtime::Engine::Create(*std::move(plan), options);
  if (!engine.ok()) return false;
  std::vector<Tensor> inputs;
  for (const runtime::TensorInfo& in : (*engine)->inputs()) {
    Dims dims(in.dims.begin(), in.dims.end());
    if (!dims.empty() && dims[0] < 0) dims[0] = (*engine)->batch_min();
    const std::optional<uint64_t> bytes = DenseBytes(in.dtype, dims);
    if (!bytes || *bytes > kMaxInputBytes) return false;
    inputs.emplace_back(in.dtype, dims);
  }
  return (*engine)->CreateContext()->Run(inputs).ok();
}

bool CalibTable(const uint8_t* data, size_t size) {
  absl::StatusOr<calib::CalibTable> table =
      calib::CalibTableFromJson(Bytes(data, size), "fuzz.json");
  if (!table.ok()) return false;
  const bool written = calib::CalibTableToJson(*table).ok();
  for (const char* method : {"minmax", "entropy", "percentile=99.9", "mse"}) {
    const calib::CalibMethodSpec spec = *calib::ParseCalibMethod(method);
    for (const auto& [name, stats] : table->tensors) {
      (void)calib::SolveSymmetric(stats, spec);
      (void)calib::SolveAsymmetric(stats, spec);
    }
  }
  return written;
}

bool TensorFile(const uint8_t* data, size_t size) {
  const bool npy = ParseNpy(Bytes(data, size), "fuzz.npy").ok();
  onnx::TensorProto proto;
  const bool pb = proto.ParseFromArray(data, static_cast<int>(size)) &&
                  frontend::TensorFromProto(proto, kNoSuchFolder).ok();
  return npy || pb;
}

bool ImageFile(const uint8_t* data, size_t size) {
  bool decoded = false;
  for (int channels : {3, 1}) {
    absl::StatusOr<calib::Image> image = calib::DecodeImage(Bytes(data, size), channels, "fuzz");
    if (!image.ok()) continue;
    const calib::Image small = calib::ResizeBilinear(*image, 7, 5);
    (void)calib::CenterCrop(small, 4, 6);
    decoded = true;
  }
  return decoded;
}

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {{"onnx_import", OnnxImport},
                                              {"plan_load", PlanLoad},
                                              {"calib_table", CalibTable},
                                              {"tensor_file", TensorFile},
                                              {"image", ImageFile}};
  return targets;
}

}  // namespace qcc::fuzz
