// STUB: to be replaced.
#include "passes/passes.h"

namespace qcc::passes {
namespace {
class StubPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-matmul-add"; }
  absl::StatusOr<bool> Run(ir::Graph&) const override { return false; }
};
}  // namespace
std::unique_ptr<Pass> CreateFuseMatMulAddPass() { return std::make_unique<StubPass>(); }
}  // namespace qcc::passes
