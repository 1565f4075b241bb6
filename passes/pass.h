// The pass interface and the pipeline that runs passes in order.
#ifndef QCC_PASSES_PASS_H_
#define QCC_PASSES_PASS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace qcc::passes {

/// A graph rewrite. Passes are stateless: Run may be called on any number of graphs.
class Pass {
 public:
  virtual ~Pass() = default;
  /// Short kebab-case name, e.g. "fold-constants".
  virtual absl::string_view name() const = 0;
  /// Rewrites `graph`; returns whether anything changed. The graph must stay verifiable.
  virtual absl::StatusOr<bool> Run(ir::Graph& graph) const = 0;
};

/// What one pass did in a pipeline run.
struct PassRecord {
  std::string name;
  bool changed = false;
  int nodes_before = 0;
  int nodes_after = 0;
  /// Per op kind, the change in node count, e.g. "-19 BatchNormalization, +0 Conv" (non-zero only).
  std::string summary;
};

/// The record of a rewrite from `before` to `after` named `name` (a pass that makes a new graph,
/// such as RealizeInt8, reported like the pipeline's passes).
PassRecord RecordRewrite(absl::string_view name, const ir::Graph& before, const ir::Graph& after);

/// An explicit, ordered list of passes.
using Pipeline = std::vector<std::unique_ptr<Pass>>;

/// Runs `pipeline` in order; after each pass re-infers shapes (ir::InferShapes) and verifies
/// (ir::Verify), so a broken rewrite is reported with the pass's name.
absl::StatusOr<std::vector<PassRecord>> RunPipeline(ir::Graph& graph, const Pipeline& pipeline);

}  // namespace qcc::passes

#endif  // QCC_PASSES_PASS_H_
