// Helpers shared by the fusion passes (passes/fuse_*.cc): constant look-through, use checks and
// the rewiring that keeps a fused value's name. Not a public header.
#ifndef QCC_PASSES_FUSE_UTIL_H_
#define QCC_PASSES_FUSE_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "support/tensor.h"

namespace qcc::passes::fuse {

/// The data of `v` when it is known before running: a constant value, or the output of a
/// Constant node (exporters such as paddle2onnx keep weights in those). Null otherwise.
const Tensor* ConstantData(const ir::Value* v);

/// ConstantData as an fp32 tensor (cast from any float type), or nullopt when `v` is not a
/// float constant.
std::optional<Tensor> ConstantF32(const ir::Value* v);

/// The single element of a float constant (any shape with one element), or nullopt.
std::optional<float> ScalarF32(const ir::Value* v);

/// True when `v` has exactly one use and is not a graph output: the producer can be changed
/// without anyone else seeing it.
bool HasSingleUse(const ir::Graph& graph, const ir::Value* v);

/// The producer of `v` when it is of `kind` and HasSingleUse(graph, v) (inside a pattern);
/// nullptr otherwise.
ir::Node* SoleProducer(const ir::Graph& graph, const ir::Value* v, ir::OpKind kind);

/// True when input `i` of `n` is a scalar float constant NearlyEqual to `c`.
bool InputIsScalar(const ir::Node& n, int i, float c);

/// A value name not yet in `graph`, built from `stem`.
std::string UniqueName(const ir::Graph& graph, absl::string_view stem);

/// Makes `kept` stand for `replaced`: every use (and graph output slot) of `replaced` moves to
/// `kept`, and the two swap names (ir::SwapNames: with what a QDQ model gave each), so the
/// surviving tensor keeps the name later tools key on (observers, calibration tables, graph
/// outputs) and the model's quantization of it. `replaced` is left without uses.
void Forward(ir::Graph& graph, ir::Value* replaced, ir::Value* kept);

/// The nodes of `graph` whose kind is one of `kinds`, in graph order: a snapshot a pass can
/// rewrite while iterating.
std::vector<ir::Node*> NodesOfKind(const ir::Graph& graph, std::initializer_list<ir::OpKind> kinds);

/// Removes `nodes` (in order), each of which must have no remaining uses of its outputs.
void RemoveNodes(ir::Graph& graph, const std::vector<ir::Node*>& nodes);

/// Ends a pattern match: `fused`, the new node's output, takes the place (uses and name) of
/// `result`, the matched pattern's output, and `nodes` (listed from the result up, so each is
/// unused when removed) are removed.
void ReplacePattern(ir::Graph& graph, ir::Value* result, ir::Value* fused,
                    const std::vector<ir::Node*>& nodes);

/// What a fusion pass returns: `changed`, after sorting the graph again when it changed (the
/// fused nodes were appended at its end).
absl::StatusOr<bool> SortIfChanged(ir::Graph& graph, bool changed);

/// An inference BatchNormalization as a per-channel affine map: bn(y)[c] = scale[c] * y[c] +
/// shift[c], with scale = gamma / sqrt(var + eps) and shift = beta - scale * mean.
struct BnAffine {
  std::vector<float> scale, shift;
};

/// BnAffine of `bn` when it is in inference mode, its four parameters are float constants of
/// `channels` entries each, and none of its optional statistics outputs is read; else nullopt.
std::optional<BnAffine> InferenceBatchNorm(const ir::Graph& graph, const ir::Node& bn,
                                           int64_t channels);

/// True when `a` is within a relative 1e-6 of `b` (matching constants such as 1/6).
bool NearlyEqual(float a, float b);

}  // namespace qcc::passes::fuse

#endif  // QCC_PASSES_FUSE_UTIL_H_
