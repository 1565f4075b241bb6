#include "tools/tool_io.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "ir/shape_inference.h"
#include "support/memory.h"
#include "support/npy.h"
#include "support/status.h"

namespace qcc::tools {

namespace fs = std::filesystem;

absl::Status CheckRegularFile(const std::string& path, absl::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat(what, " '", path, "': no such file"));
  }
  if (fs::is_directory(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' is a directory, not a file"));
  }
  if (!fs::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not a regular file"));
  }
  return absl::OkStatus();
}

absl::Status CheckDirectory(const std::string& path, absl::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat(what, " '", path, "': no such folder"));
  }
  if (!fs::is_directory(st)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not a folder"));
  }
  return absl::OkStatus();
}

absl::Status EnsureDirectory(const std::string& path, absl::string_view what) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return absl::OkStatus();
  if (fs::exists(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' exists and is not a folder"));
  }
  fs::create_directories(path, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " '", path, "': cannot create (", ec.message(), ")"));
  }
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

absl::StatusOr<std::unique_ptr<ir::Graph>> LoadModel(const std::string& path) {
  absl::Status file = CheckRegularFile(path, "model");
  if (!file.ok()) return file;
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = frontend::ImportOnnxFile(path);
  if (!graph.ok() && !absl::StrContains(graph.status().message(), path)) {
    return absl::Status(graph.status().code(),
                        absl::StrCat("model '", path, "': ", graph.status().message()));
  }
  return graph;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path) {
  absl::Status file = CheckRegularFile(path, "tensor file");
  if (!file.ok()) return file;
  const std::string ext = absl::AsciiStrToLower(fs::path(path).extension().string());
  absl::StatusOr<Tensor> t;
  if (ext == ".npy") {
    t = ReadNpy(path);
  } else if (ext == ".pb") {
    t = frontend::ReadTensorProtoFile(path);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor file '", path, "': unknown extension '", ext,
                     "' (expected .npy for NumPy arrays or .pb for ONNX TensorProto files)"));
  }
  if (!t.ok() && !absl::StrContains(t.status().message(), path)) {
    return absl::Status(t.status().code(),
                        absl::StrCat("tensor file '", path, "': ", t.status().message()));
  }
  return t;
}

absl::StatusOr<std::pair<std::string, std::string>> SplitNameValue(absl::string_view arg,
                                                                   absl::string_view flag) {
  const size_t eq = arg.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == arg.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", arg, "': expected NAME=VALUE, e.g. ", flag, " input=x.npy"));
  }
  return std::make_pair(std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1)));
}

absl::StatusOr<int64_t> ParseMaxMemory(const std::string& text) {
  if (text.empty()) return 0;
  return ParseByteSize(text, "--max-memory");
}

absl::Status ParseShard(absl::string_view text, int* index, int* count) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], index) ||
      !absl::SimpleAtoi(parts[1], count) || *count < 1 || *index < 0 || *index >= *count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard '", text, "' is not i/N with 0 <= i < N (e.g. --shard 0/4 ... --shard 3/4)"));
  }
  return absl::OkStatus();
}

std::string InputNameList(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::Value* v : graph.inputs()) names.push_back(absl::StrCat("'", v->name(), "'"));
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

std::string OneLine(absl::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += "; ";
    } else if (c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

absl::Status ApplyShapes(const std::vector<std::string>& shapes, ir::Graph& graph) {
  for (const std::string& arg : shapes) {
    QCC_ASSIGN_OR_RETURN(auto name_value, SplitNameValue(arg, "--shape"));
    ir::Value* input = nullptr;
    for (ir::Value* v : graph.inputs()) {
      if (v->name() == name_value.first) input = v;
    }
    if (input == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape '", arg, "': the model has no input '", name_value.first,
                       "'; its inputs: ", InputNameList(graph)));
    }
    const std::vector<ir::Dim>* old = input->type().dims ? &*input->type().dims : nullptr;
    std::vector<ir::Dim> dims;
    for (absl::string_view d : absl::StrSplit(name_value.second, ',')) {
      int64_t v = 0;
      if (d == "N" && old != nullptr && dims.size() < old->size()) {
        dims.push_back((*old)[dims.size()]);
      } else if (absl::SimpleAtoi(d, &v) && v >= 0) {
        dims.push_back(v);
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "--shape '", arg, "': extents are integers or N (the batch), e.g. x=N,3,48,192"));
      }
    }
    if (old != nullptr && old->size() != dims.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape '", arg, "': input '", input->name(), "' has rank ", old->size()));
    }
    input->set_type(ir::TensorType(input->dtype(), dims));
  }
  return shapes.empty() ? absl::OkStatus() : ir::InferShapes(graph);
}

}  // namespace qcc::tools
