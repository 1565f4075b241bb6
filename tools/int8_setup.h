// What `qcc compile --int8` and `qcc export` share before they part: the calibration table of
// the model, the method that solves it, and the per-tensor ranges.
#ifndef QCC_TOOLS_INT8_SETUP_H_
#define QCC_TOOLS_INT8_SETUP_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/calib_table.h"
#include "calib/scale_solvers.h"
#include "ir/graph.h"
#include "passes/quantize.h"

namespace qcc::tools {

/// `model` with its .onnx extension replaced by `suffix` ("model.onnx" -> "model" + suffix).
std::string BesideModel(const std::string& model, absl::string_view suffix);

struct Int8Table {
  calib::CalibTable table;
  calib::CalibMethodSpec method;
  bool method_given = false;  ///< the user chose the method (--calib-method)
};

/// Reads the table for `model` (`calib_path`, or MODEL.calib.json beside it), checks it was made
/// for `graph` (the imported, unfused model) and parses `method` (empty: the table's). A missing
/// table is FailedPrecondition telling the user to run `qcc calibrate` or pass --calib.
absl::StatusOr<Int8Table> LoadInt8Table(const std::string& model, const std::string& calib_path,
                                        const std::string& method, const ir::Graph& graph);

/// The range of every table tensor under the method: [-amax, amax], or [lo, hi] when asymmetric.
std::map<std::string, passes::TensorRange> SolveRanges(const Int8Table& t, bool asymmetric);

/// QuantizeOptions::asymmetric_ranges: the ranges, with a zero point, of the tensors that
/// fp32-result GEMMs read (a transformer's Linear inputs). Over the full calibrated range
/// (minmax) unless the user chose a method: those activations carry a few outlier channels
/// that the clipping methods (mse, entropy, percentile) cut, and the outliers matter (on
/// minilm-l6-v2, mse's ranges give a mean embedding cosine of 0.984, minmax's 0.994).
std::map<std::string, passes::TensorRange> GemmInputRanges(const Int8Table& t);

/// What the assign-precision pass decides from when `compile --int8` uses the table (per-channel
/// weights unless `per_tensor`; `exclude` as --exclude).
passes::PrecisionSetup StaticSetup(const Int8Table& t, bool per_tensor, bool asymmetric,
                                   const std::vector<std::string>& exclude);

}  // namespace qcc::tools

#endif  // QCC_TOOLS_INT8_SETUP_H_
