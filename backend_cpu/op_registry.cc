#include "backend_cpu/op_registry.h"

#include "absl/strings/str_cat.h"

namespace qcc::cpu {

absl::Status OpContext::Unsupported(absl::string_view what) const {
  return absl::UnimplementedError(
      absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), "): ", what));
}

absl::Status OpContext::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), "): ", what));
}

void OpRegistry::Add(ir::OpKind kind, OpRunFn run, FloatPolicy policy) {
  entries_[static_cast<int>(kind)] = OpEntry{run, policy};
}

const OpEntry* OpRegistry::Find(ir::OpKind kind) const {
  const OpEntry& e = entries_[static_cast<int>(kind)];
  return e.run != nullptr ? &e : nullptr;
}

void RegisterCpuOps(OpRegistry& registry) {
  RegisterNnOps(registry);
  RegisterElementwiseOps(registry);
  RegisterReduceOps(registry);
  RegisterMovementOps(registry);
  RegisterCalibOps(registry);
  RegisterQuantizeOps(registry);
}

const OpRegistry& DefaultOpRegistry() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterCpuOps(*r);
    return r;
  }();
  return *registry;
}

}  // namespace qcc::cpu
