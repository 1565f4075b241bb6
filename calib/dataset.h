// Calibration data: a folder of samples read lazily, one sample at a time, in sorted file order.
//
// Layout: for a single-input model, every data file under the folder (recursively, so class
// sub-folders work); for a multi-input model, one sub-folder per input name, sample i being the
// i-th file (in sorted order) of each. File kinds: .jpg/.jpeg/.png (decoded, then preprocessed
// by a PreprocessSpec), .npy and ONNX .pb tensors (taken as they are, cast to the input dtype).
// Other files are ignored. Memory stays O(1) in the number of samples: only the sorted file
// names are kept.
#ifndef QCC_CALIB_DATASET_H_
#define QCC_CALIB_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/preprocess.h"
#include "ir/graph.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::calib {

/// A model input the data feeds: its name, type and the type as users read it ("f32[N,3,32,32]").
struct DataInput {
  std::string name;
  ir::TensorType type;
  std::string type_text;  ///< For messages; derived from `type` when empty.
};

/// The graph inputs of `graph` as DataInputs (type_text from ir::TypeToString).
std::vector<DataInput> GraphDataInputs(const ir::Graph& graph);

/// How to read a folder.
struct DatasetOptions {
  PreprocessSpec preprocess;  ///< Applied to image files.
  int64_t max_samples = 0;    ///< Use only the first N samples (sorted order); 0: all.
  int shard_index = 0;        ///< Then keep every shard_count-th sample from shard_index on,
  int shard_count = 1;        ///< so that the shards 0..N-1 partition the samples exactly.
  /// Receives each warning (a skipped image); null prints "warning: ..." lines to stderr.
  std::function<void(const std::string&)> on_warning;
};

/// One sample: a tensor per model input, in input order, each with a leading batch of 1 and the
/// input's dtype.
struct Sample {
  int64_t index = 0;  ///< Position among the selected samples (after max_samples and shard).
  std::vector<Tensor> tensors;
  std::string source;  ///< The sample's file (the first input's, for multi-input models).
};

/// A folder of samples, opened and checked up front, then read one sample at a time.
class Dataset {
 public:
  /// Lists and checks the folder: InvalidArgument when it holds no data files (naming the folder
  /// and the accepted extensions), when a multi-input model lacks a sub-folder per input or their
  /// counts differ, when no image of an input decodes, or when the first sample of an input has
  /// the wrong rank, channel count or extent for the model (naming the file and both shapes).
  static absl::StatusOr<std::unique_ptr<Dataset>> Open(const std::string& folder,
                                                       std::vector<DataInput> inputs,
                                                       DatasetOptions options);

  /// Samples selected by max_samples and the shard (images found undecodable later still count).
  int64_t size() const { return static_cast<int64_t>(files_.empty() ? 0 : files_[0].size()); }
  /// The sorted files of input `i` selected for this run.
  const std::vector<std::string>& files(int i) const { return files_[i]; }

  /// Reads the next sample into `sample`; false at the end. An image that cannot be decoded is
  /// skipped (warning naming it, counted in skipped()); a sample of the wrong shape, or a bad
  /// .npy/.pb file, is an InvalidArgument error naming the file. When every sample was skipped,
  /// the end is an error rather than false.
  absl::StatusOr<bool> Next(Sample* sample);
  /// Starts again from the first sample (skipped counts restart too).
  void Rewind();

  /// Samples skipped so far because an image could not be decoded, and their files.
  int64_t skipped() const { return static_cast<int64_t>(skipped_files_.size()); }
  const std::vector<std::string>& skipped_files() const { return skipped_files_; }

 private:
  Dataset() = default;
  // Loads input `i` of the file `path` as [1, ...] in the input's dtype, checking its shape.
  // `decode_failed` is set (and an error returned) when an image cannot be decoded.
  absl::StatusOr<Tensor> LoadFile(int i, const std::string& path, bool* decode_failed) const;
  void Warn(const std::string& message) const;

  std::string folder_;
  std::vector<DataInput> inputs_;
  DatasetOptions options_;
  std::vector<std::vector<std::string>> files_;  // [input][sample]
  int64_t next_ = 0;
  int64_t loaded_ = 0;
  std::vector<std::string> skipped_files_;
};

}  // namespace qcc::calib

#endif  // QCC_CALIB_DATASET_H_
