// `qcc inspect MODEL.plan`: the plan's bindings, one line per step (kernel, precision, node,
// output), memory as a user thinks of it (parameters and weight bytes by dtype against the fp32
// model, the activation arena against the no-reuse sum at the plan's batch sizes), and the
// multiply-adds of a batch-1 run (what a roofline divides by time).

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/batch_slices.h"
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

/// Arena bytes (planned again at `batch`, each buffer apart) and the no-reuse sum of the arena
/// buffers.
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

/// Elements of buffer `id` at `batch`.
int64_t ElementsAt(const runtime::Plan& plan, int32_t id, int64_t batch) {
  int64_t n = 1;
  for (int64_t d : plan.buffers[id].dims) n *= d < 0 ? batch : d;
  return n;
}

/// The multiply-adds of a run at `batch`: convolutions, GEMMs, matrix products and attention's
/// two products (the work a roofline counts; elementwise steps are left out).
uint64_t MultiplyAdds(const runtime::Plan& plan, int64_t batch) {
  using runtime::StepKind;
  uint64_t total = 0;
  for (const runtime::PlanStep& step : plan.steps) {
    auto dims = [&](size_t i) -> const std::vector<int64_t>& {
      return plan.buffers[step.inputs[i]].dims;
    };
    auto out = [&](size_t i) { return ElementsAt(plan, step.outputs[i], batch); };
    switch (static_cast<StepKind>(step.kind)) {
      case StepKind::kConv:
      case StepKind::kQConv:
      case StepKind::kQConvAdd: {  // W [K, C/g, R, S]
        const std::vector<int64_t>& w = dims(1);
        total += out(0) * w[1] * w[2] * w[3];
        break;
      }
      case StepKind::kQGemm:
      case StepKind::kDynamicQGemm:  // W [N, K]
        total += out(0) * dims(1)[1];
        break;
      case StepKind::kDynamicQGemms:  // X, then (W [N_i, K], scale, bias) per output
        for (size_t i = 0; i < step.outputs.size(); ++i) total += out(i) * dims(1 + 3 * i)[1];
        break;
      case StepKind::kGemm: {
        absl::StatusOr<runtime::GemmStepParams> g =
            runtime::DecodeParams<runtime::GemmStepParams>(step);
        const std::vector<int64_t>& a = dims(0);
        if (g.ok() && a.size() == 2) total += out(0) * (g->trans_a != 0 ? a[0] : a[1]);
        break;
      }
      case StepKind::kMatMul:  // A [.., M, K]
        total += out(0) * dims(0).back();
        break;
      case StepKind::kAttention:
      case StepKind::kQAttention: {  // Q [B, Sq, Hq*D], K [B, Skv, ..] -> Y [B, Sq, Hq*Dv]
        const int64_t skv = dims(1)[1];
        total += (ElementsAt(plan, step.inputs[0], batch) + out(0)) * skv;
        break;
      }
      default:
        break;
    }
  }
  return total;
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
    // A cuda plan records the CUDA kernel of every step, and describes it in its metadata
    // (backend_cuda/lowering.h).
    if (step.cuda_kernel != runtime::CudaKernel::kNone) {
      const auto about = plan.metadata.find(absl::StrCat("cuda.kernel.", s));
      std::printf("      cuda: %s%s\n",
                  std::string(runtime::CudaKernelName(step.cuda_kernel)).c_str(),
                  about != plan.metadata.end() ? absl::StrCat(" ", about->second).c_str() : "");
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
    // At batch_max, the plan's own arena: its concat inputs computed in place share bytes with
    // the concat's output, which planning again (each buffer apart) does not know.
    if (batch == plan.batch_max) m.arena_bytes = plan.arena_bytes;
    std::printf("  activations at batch %lld: arena %llu B, no-reuse sum %llu B\n",
                static_cast<long long>(batch), static_cast<unsigned long long>(m.arena_bytes),
                static_cast<unsigned long long>(m.no_reuse_bytes));
    if (batch == plan.batch_max) break;
  }
  if (plan.batch_max > 1 && plan.target != runtime::kCudaTarget) {
    std::string why;
    const int64_t slice = runtime::SliceImages(plan);
    if (slice > 0 && slice < plan.batch_max) {
      std::printf("  CPU runs of a batch over %lld: in slices of up to %lld images\n",
                  static_cast<long long>(slice), static_cast<long long>(slice));
    } else if (slice == 0 && !runtime::ImagesIndependent(plan, &why)) {
      std::printf("  CPU runs: the whole batch at once (%s)\n", why.c_str());
    }
  }
  std::vector<std::string> counts;
  for (const auto& [k, n] : kernels) counts.push_back(absl::StrCat(k, " x", n));
  std::printf("  steps: %zu (%s)\n", plan.steps.size(), absl::StrJoin(counts, ", ").c_str());
  std::printf(
      "compute\n  multiply-adds at batch 1: %llu (convolutions, matrix products and "
      "attention)\n",
      static_cast<unsigned long long>(MultiplyAdds(plan, 1)));
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
