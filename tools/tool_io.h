// Helpers shared by the qcc commands: loading models and tensor files, folders, argument
// splitting and one-line error text.
#ifndef QCC_TOOLS_TOOL_IO_H_
#define QCC_TOOLS_TOOL_IO_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "support/tensor.h"

namespace qcc::tools {

/// OK when `path` is an existing regular file; otherwise an error starting with `what` and the
/// path ("model 'm.onnx': no such file", "... is a directory").
absl::Status CheckRegularFile(const std::string& path, absl::string_view what);

/// OK when `path` is an existing folder; otherwise an error starting with `what` and the path.
absl::Status CheckDirectory(const std::string& path, absl::string_view what);

/// Creates folder `path` (and its parents) when missing; an error when it is a file.
absl::Status EnsureDirectory(const std::string& path, absl::string_view what);

/// True when `path` exists (any kind of file).
bool PathExists(const std::string& path);

/// Imports an ONNX model; every error names the file.
absl::StatusOr<std::unique_ptr<ir::Graph>> LoadModel(const std::string& path);

/// Reads a tensor from a .npy file or a serialized ONNX TensorProto (.pb), chosen by extension;
/// other extensions are an error. Errors name the file.
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path);

/// Splits "NAME=VALUE" at the first '='; an InvalidArgument naming `flag` when there is no '=' or
/// either side is empty.
absl::StatusOr<std::pair<std::string, std::string>> SplitNameValue(absl::string_view arg,
                                                                   absl::string_view flag);

/// --max-memory: 0 (the machine's memory) when empty, else ParseByteSize's bytes.
absl::StatusOr<int64_t> ParseMaxMemory(const std::string& text);

/// Parses --shard "i/N" (0 <= i < N): every N-th sample from the i-th on.
absl::Status ParseShard(absl::string_view text, int* index, int* count);

/// Applies --shape NAME=D0,D1,... (a D of N keeps the input's batch extent) to the graph's
/// inputs and re-infers shapes (qcc compile and qcc calibrate).
absl::Status ApplyShapes(const std::vector<std::string>& shapes, ir::Graph& graph);

/// The graph input names, quoted and comma separated: "'a', 'b'".
std::string InputNameList(const ir::Graph& graph);

/// `message` on one line: newlines and tabs become "; " and " ".
std::string OneLine(absl::string_view message);

}  // namespace qcc::tools

#endif  // QCC_TOOLS_TOOL_IO_H_
