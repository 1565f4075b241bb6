#include "calib/dataset.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend_cpu/tensor_convert.h"
#include "calib/image.h"
#include "frontend/tensor_proto.h"
#include "ir/printer.h"
#include "support/npy.h"
#include "support/status.h"

namespace qcc::calib {
namespace {

namespace fs = std::filesystem;

constexpr char kAccepted[] = ".jpg, .jpeg, .png, .npy, .pb";

enum class FileKind { kOther, kImage, kNpy, kTensorProto };

FileKind KindOf(const fs::path& path) {
  const std::string ext = absl::AsciiStrToLower(path.extension().string());
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") return FileKind::kImage;
  if (ext == ".npy") return FileKind::kNpy;
  if (ext == ".pb") return FileKind::kTensorProto;
  return FileKind::kOther;
}

// Every data file under `dir`, recursively, sorted by path.
absl::StatusOr<std::vector<std::string>> ListDataFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("data folder '", dir, "' does not exist or is not a folder"));
  }
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && KindOf(it->path()) != FileKind::kOther) {
      files.push_back(it->path().string());
    }
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list data folder '", dir, "': ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no data files in '", dir, "' (accepted: ", kAccepted, ")"));
  }
  return files;
}

std::string TypeText(const DataInput& input) {
  if (!input.type_text.empty()) return input.type_text;
  if (!input.type.has_rank()) return absl::StrCat(DTypeName(input.type.dtype), "[*]");
  std::vector<std::string> dims;
  for (ir::Dim d : *input.type.dims) dims.push_back(ir::IsKnown(d) ? absl::StrCat(d) : "?");
  return absl::StrCat(DTypeName(input.type.dtype), "[", absl::StrJoin(dims, ","), "]");
}

// True when `dims` (a sample, batch 1) fits the model type: same rank, known extents equal
// (the batch axis excepted: the runner stacks samples).
bool Fits(const Dims& dims, const ir::TensorType& type) {
  if (!type.has_rank()) return true;
  if (static_cast<int64_t>(dims.size()) != type.rank() || dims.empty() || dims[0] != 1) {
    return false;
  }
  for (size_t a = 1; a < dims.size(); ++a) {
    const ir::Dim d = (*type.dims)[a];
    if (ir::IsKnown(d) && d != dims[a]) return false;
  }
  return true;
}

}  // namespace

std::vector<DataInput> GraphDataInputs(const ir::Graph& graph) {
  std::vector<DataInput> inputs;
  for (const ir::Value* v : graph.inputs()) {
    inputs.push_back(DataInput{v->name(), v->type(), ir::TypeToString(graph, v->type())});
  }
  return inputs;
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::Open(const std::string& folder,
                                                       std::vector<DataInput> inputs,
                                                       DatasetOptions options) {
  if (inputs.empty()) return absl::InvalidArgumentError("the model has no inputs to feed");
  if (options.shard_count < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_count) {
    return absl::InvalidArgumentError(absl::StrCat("bad shard ", options.shard_index, "/",
                                                   options.shard_count,
                                                   ": expected i/N with 0 <= i < N"));
  }
  if (options.max_samples < 0) return absl::InvalidArgumentError("max_samples must be >= 0");
  std::unique_ptr<Dataset> ds(new Dataset());
  ds->folder_ = folder;
  ds->options_ = std::move(options);
  ds->inputs_ = std::move(inputs);

  std::vector<std::vector<std::string>> all;
  if (ds->inputs_.size() == 1) {
    QCC_ASSIGN_OR_RETURN(std::vector<std::string> files, ListDataFiles(folder));
    all.push_back(std::move(files));
  } else {
    std::vector<std::string> names, missing;
    std::error_code ec;
    for (const DataInput& in : ds->inputs_) {
      names.push_back(in.name);
      if (!fs::is_directory(fs::path(folder) / in.name, ec)) missing.push_back(in.name);
    }
    if (!missing.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model has inputs ", absl::StrJoin(names, ", "), ": '", folder,
          "' needs one sub-folder per input name; missing: ", absl::StrJoin(missing, ", ")));
    }
    for (const DataInput& in : ds->inputs_) {
      QCC_ASSIGN_OR_RETURN(std::vector<std::string> files,
                           ListDataFiles((fs::path(folder) / in.name).string()));
      all.push_back(std::move(files));
    }
    for (size_t i = 1; i < all.size(); ++i) {
      if (all[i].size() != all[0].size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input sub-folders hold different numbers of samples: '", ds->inputs_[0].name, "' has ",
            all[0].size(), ", '", ds->inputs_[i].name, "' has ", all[i].size()));
      }
    }
  }

  // max_samples first, then the shard: the shards of a run partition the same samples.
  const DatasetOptions& opt = ds->options_;
  size_t count = all[0].size();
  if (opt.max_samples > 0) count = std::min<size_t>(count, opt.max_samples);
  for (std::vector<std::string>& files : all) {
    std::vector<std::string> kept;
    for (size_t s = opt.shard_index; s < count; s += opt.shard_count) {
      kept.push_back(std::move(files[s]));
    }
    ds->files_.push_back(std::move(kept));
  }
  if (ds->files_[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", opt.shard_index, "/", opt.shard_count,
                                                   " of the ", count, " samples in '", folder,
                                                   "' is empty"));
  }

  // Check each input on its first decodable sample, before any inference runs.
  for (size_t i = 0; i < ds->inputs_.size(); ++i) {
    absl::Status first_failure;
    bool ok = false;
    for (const std::string& path : ds->files_[i]) {
      bool decode_failed = false;
      absl::StatusOr<Tensor> t = ds->LoadFile(static_cast<int>(i), path, &decode_failed);
      if (t.ok()) {
        ok = true;
        break;
      }
      if (!decode_failed) return t.status();
      if (first_failure.ok()) first_failure = t.status();
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "none of the ", ds->files_[i].size(), " images for input '", ds->inputs_[i].name,
          "' in '", folder, "' could be decoded (first: ", first_failure.message(), ")"));
    }
  }
  return ds;
}

absl::StatusOr<Tensor> Dataset::LoadFile(int i, const std::string& path,
                                         bool* decode_failed) const {
  *decode_failed = false;
  const DataInput& input = inputs_[i];
  const FileKind kind = KindOf(path);
  Tensor t;
  if (kind == FileKind::kImage) {
    absl::StatusOr<Image> image = DecodeImageFile(path, options_.preprocess.channels());
    if (!image.ok()) {
      *decode_failed = true;
      return image.status();
    }
    QCC_ASSIGN_OR_RETURN(t, PreprocessImage(*image, options_.preprocess, DType::kFloat32));
  } else if (kind == FileKind::kNpy) {
    QCC_ASSIGN_OR_RETURN(t, ReadNpy(path));
  } else {
    QCC_ASSIGN_OR_RETURN(t, frontend::ReadTensorProtoFile(path));
  }
  // A tensor file may leave out the batch axis.
  if (kind != FileKind::kImage && input.type.has_rank() && t.rank() == input.type.rank() - 1) {
    Dims dims = t.dims();
    dims.insert(dims.begin(), 1);
    t = t.Reshaped(dims);
  }
  if (!Fits(t.dims(), input.type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", input.name, "': '", path, "' gives shape ", DimsToString(t.dims()),
        " but the model expects ", TypeText(input), " (one sample, batch 1)",
        kind == FileKind::kImage
            ? absl::StrCat("; images are preprocessed as: ", options_.preprocess.Describe())
            : ""));
  }
  if (input.type.dtype != DType::kUndefined && t.dtype() != input.type.dtype) {
    // An fp16 input's samples (150,000 values a 224 x 224 photo) through the vector kernel:
    // CastTensor's scalar loop was 3% of calibrating squeezenet1.1 (fp16) on 2 threads.
    t = cpu::NarrowFromF32(t, input.type.dtype, 1);
  }
  return t;
}

void Dataset::Warn(const std::string& message) const {
  if (options_.on_warning) {
    options_.on_warning(message);
  } else {
    std::cerr << "warning: " << message << "\n";
  }
}

absl::StatusOr<bool> Dataset::Next(Sample* sample) {
  while (next_ < size()) {
    const int64_t index = next_++;
    std::vector<Tensor> tensors;
    bool skipped = false;
    for (size_t i = 0; i < inputs_.size() && !skipped; ++i) {
      const std::string& path = files_[i][index];
      bool decode_failed = false;
      absl::StatusOr<Tensor> t = LoadFile(static_cast<int>(i), path, &decode_failed);
      if (decode_failed) {
        Warn(absl::StrCat("skipping sample ", index, ": ", t.status().message()));
        skipped_files_.push_back(path);
        skipped = true;
      } else if (!t.ok()) {
        return t.status();
      } else {
        tensors.push_back(*std::move(t));
      }
    }
    if (skipped) continue;
    sample->index = index;
    sample->tensors = std::move(tensors);
    sample->source = files_[0][index];
    ++loaded_;
    return true;
  }
  if (loaded_ == 0 && skipped() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("none of the ", size(), " samples in '", folder_, "' could be decoded"));
  }
  return false;
}

void Dataset::Rewind() {
  next_ = 0;
  loaded_ = 0;
  skipped_files_.clear();
}

}  // namespace qcc::calib
