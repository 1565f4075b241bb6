// `qcc inspect MODEL.plan`: the plan's bindings, one line per step (kernel, precision, node,
// output), and memory as a user thinks of it: parameters and weight bytes by dtype against the
// fp32 model, and the activation arena against the no-reuse sum at the plan's batch sizes.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_format.h"
#include "runtime/steps.h"
#include "support/status.h"
#include "tools/commands.h"

namespace qcc::tools {
namespace {

std::string Shape(const runtime::PlanBuffer& b) {
  std::vector<std::string> dims;
  for (int64_t d : b.dims) dims.push_back(d < 0 ? "N" : absl::StrCat(d));
  return absl::StrCat(DTypeName(b.dtype), "[", absl::StrJoin(dims, ","), "]");
}

std::string Meta(const runtime::Plan& plan, const std::string& key) {
  auto it = plan.metadata.find(key);
  return it == plan.metadata.end() ? "?" : it->second;
}

/// Arena bytes (planned again at `batch`) and the no-reuse sum of the arena buffers.
absl::StatusOr<runtime::MemoryPlan> ArenaAt(const runtime::Plan& plan, int64_t batch) {
  std::vector<runtime::BufferLifetime> lifetimes;
  std::map<int32_t, size_t> index;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (plan.buffers[b].kind != runtime::BufferKind::kArena) continue;
    index[static_cast<int32_t>(b)] = lifetimes.size();
    lifetimes.push_back({runtime::BufferBytes(plan.buffers[b], batch).value_or(0),
                         static_cast<int32_t>(plan.steps.size()), 0});
  }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    std::vector<int32_t> ids = plan.steps[s].inputs;
    ids.insert(ids.end(), plan.steps[s].outputs.begin(), plan.steps[s].outputs.end());
    for (int32_t b : ids) {
      auto it = index.find(b);
      if (it == index.end()) continue;
      runtime::BufferLifetime& l = lifetimes[it->second];
      l.first_step = std::min(l.first_step, static_cast<int32_t>(s));
      l.last_step = std::max(l.last_step, static_cast<int32_t>(s));
    }
  }
  for (runtime::BufferLifetime& l : lifetimes) {
    if (l.last_step < l.first_step) l.first_step = l.last_step = 0;
  }
  return runtime::PlanMemory(lifetimes);
}

}  // namespace

absl::Status InspectPlanCommand(const std::string& path) {
  QCC_ASSIGN_OR_RETURN(runtime::Plan plan, runtime::ReadPlan(path));
  std::printf(
      "plan %s: target %s, batch %lld..%lld, %s (%s weights, %s activations, %s), from "
      "%s, qcc %s\n",
      path.c_str(), plan.target.c_str(), static_cast<long long>(plan.batch_min),
      static_cast<long long>(plan.batch_max), Meta(plan, "precision").c_str(),
      Meta(plan, "weights").c_str(), Meta(plan, "activations").c_str(),
      Meta(plan, "calib_method").c_str(), Meta(plan, "source").c_str(),
      Meta(plan, "qcc_version").c_str());
  for (const auto& [label, bindings] :
       {std::make_pair("input", &plan.inputs), std::make_pair("output", &plan.outputs)}) {
    for (const runtime::Binding& b : *bindings) {
      std::printf("%s %s: %s\n", label, b.name.c_str(), Shape(plan.buffers[b.buffer]).c_str());
    }
  }
  std::printf("\n%4s  %-18s %-9s %-44s %s\n", "step", "kernel", "precision", "node", "output");
  std::map<std::string, int> kernels;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const runtime::PlanStep& step = plan.steps[s];
    const std::string kernel(runtime::StepKindName(step.kind));
    ++kernels[kernel];
    const runtime::PlanBuffer& out = plan.buffers[step.outputs.front()];
    const char* precision = kernel == "Quantize" || kernel == "Dequantize" ? "convert"
                            : out.dtype == DType::kInt8                    ? "int8"
                                                                           : "fp32";
    std::printf("%4zu  %-18s %-9s %-44s %s %s\n", s, kernel.c_str(), precision, step.name.c_str(),
                out.name.c_str(), Shape(out).c_str());
    // A cuda plan records the CUDA kernel of every step (backend_cuda/lowering.h).
    const auto cuda_kernel = plan.metadata.find(absl::StrCat("cuda.kernel.", s));
    if (cuda_kernel != plan.metadata.end()) {
      std::printf("      cuda: %s\n", cuda_kernel->second.c_str());
    }
  }
  std::map<std::string, uint64_t> bytes;
  uint64_t total = 0;
  for (const runtime::PlanWeight& w : plan.weights) {
    bytes[std::string(DTypeName(w.dtype))] += w.nbytes;
    total += w.nbytes;
  }
  std::vector<std::string> parts;
  for (const auto& [dtype, n] : bytes) parts.push_back(absl::StrCat(dtype, " ", n, " B"));
  std::printf("\nmemory\n  parameters: %s\n", Meta(plan, "parameters").c_str());
  double model_bytes = 0;
  const bool known = absl::SimpleAtod(Meta(plan, "model_weight_bytes"), &model_bytes);
  std::printf("  weights: %llu B (%s) against %s B in the source model%s\n",
              static_cast<unsigned long long>(total), absl::StrJoin(parts, ", ").c_str(),
              Meta(plan, "model_weight_bytes").c_str(),
              known && model_bytes > 0 && total > 0
                  ? absl::StrCat(" (", absl::SixDigits(model_bytes / total), "x smaller)").c_str()
                  : "");
  for (int64_t batch : {plan.batch_min, plan.batch_max}) {
    QCC_ASSIGN_OR_RETURN(runtime::MemoryPlan m, ArenaAt(plan, batch));
    std::printf("  activations at batch %lld: arena %llu B, no-reuse sum %llu B\n",
                static_cast<long long>(batch), static_cast<unsigned long long>(m.arena_bytes),
                static_cast<unsigned long long>(m.no_reuse_bytes));
    if (batch == plan.batch_max) break;
  }
  std::vector<std::string> counts;
  for (const auto& [k, n] : kernels) counts.push_back(absl::StrCat(k, " x", n));
  std::printf("  steps: %zu (%s)\n", plan.steps.size(), absl::StrJoin(counts, ", ").c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
