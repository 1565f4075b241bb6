// The calibration table: per-tensor statistics of one calibration run, as versioned JSON.
//
// Format (version 1), written byte for byte deterministically (keys sorted, one tensor per line):
//   {
//    "format": "qcc-calib",
//    "version": 1,
//    "fingerprint": "<ir::Fingerprint of the model>",
//    "qcc_version": "0.1.0",
//    "preprocessing": {...},            // the caller's JSON object, keys sorted
//    "settings": {"batch":8,"max_samples":0,"method":"mse","shard":"0/1"},
//    "samples": 500,
//    "bins": 2048,
//    "tensors": {
//     "<name>": {"min":-1.5,"max":3,"count":N,"nan":0,"posinf":0,"neginf":0,"range":4,
//                "hist":[[1019,2,5],[1024,7]]},
//     ...
//    }
//   }
// "hist" lists the runs of consecutive non-zero bins of the TensorStats histogram, each as
// [first bin index, count, count, ...], in ascending order; every other bin is zero. "min"/"max"
// are null and "range" 0 when the tensor had no finite value. Floats are written in their
// shortest round-trip form, so reading and writing again reproduces the file exactly.
// "shard" is "i/N" (the i-th of N interleaved shards), or "i,j,.../N" for a partial merge; a merge
// that covers all N shards becomes "0/1", the same as a run over all samples.
#ifndef QCC_CALIB_CALIB_TABLE_H_
#define QCC_CALIB_CALIB_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "calib/tensor_stats.h"
#include "ir/graph.h"

namespace qcc::calib {

inline constexpr absl::string_view kCalibTableFormat = "qcc-calib";
inline constexpr int kCalibTableVersion = 1;

/// How the statistics were gathered.
struct CalibSettings {
  /// The method `qcc compile` uses by default, as ParseCalibMethod spells it.
  std::string method = "mse";
  int64_t batch = 1;
  /// 0: no limit.
  int64_t max_samples = 0;
  /// This table holds the samples s with s % shard_count in `shards` (sorted, distinct).
  int shard_count = 1;
  std::vector<int> shards = {0};
};

/// "i/N" or "i,j/N".
std::string ShardToString(const CalibSettings& settings);

/// One calibration run (or a merge of shards).
struct CalibTable {
  std::string fingerprint;
  std::string qcc_version;
  /// The preprocessing, as the text of a JSON object ("{}" when none).
  std::string preprocessing = "{}";
  CalibSettings settings;
  int64_t samples = 0;
  /// Per observed tensor, by tensor name.
  std::map<std::string, TensorStats> tensors;
  /// Where the table was read from, for messages (not serialized; empty for a fresh table).
  std::string source;
};

/// The JSON text of `table` (see the file comment). InvalidArgument when the preprocessing is not
/// a JSON object or a name is not valid UTF-8.
absl::StatusOr<std::string> CalibTableToJson(const CalibTable& table);
/// Parses and checks a table; errors name `source` and the tensor/field at fault.
absl::StatusOr<CalibTable> CalibTableFromJson(absl::string_view text, absl::string_view source);

/// Writes `table` to `path` atomically (a temporary file renamed over it): on error no file, and
/// no partial file, is left behind.
absl::Status WriteCalibTable(const std::string& path, const CalibTable& table);
/// Reads and checks the table at `path`: NotFound when missing, InvalidArgument for bad JSON (with
/// the byte offset), another format or version, or inconsistent statistics.
absl::StatusOr<CalibTable> ReadCalibTable(const std::string& path);

/// Combines the tables of two shards of the same model and preprocessing exactly: statistics and
/// sample counts add. InvalidArgument for different fingerprints, preprocessing or shard counts,
/// or a shard present in both.
absl::StatusOr<CalibTable> MergeCalibTables(const CalibTable& a, const CalibTable& b);

/// FailedPrecondition when `table` was made for another model than `graph`.
absl::Status CheckFingerprint(const CalibTable& table, const ir::Graph& graph);

}  // namespace qcc::calib

#endif  // QCC_CALIB_CALIB_TABLE_H_
