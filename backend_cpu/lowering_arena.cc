// The plan's activation arena (backend_cpu/lowering_internal.h, Lowering::PlanArena): every
// arena buffer's offset from the steps' lifetimes, greedily by size (runtime/memory_plan.h), with
// the inputs of concats that can be computed in place placed in their slice of the output.
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering_internal.h"
#include "runtime/memory_plan.h"
#include "runtime/steps.h"

namespace qcc::cpu {
namespace lowering_internal {

namespace {

/// Where a concat input computed in place lives: `offset` bytes into buffer `parent`.
struct ConcatSlice {
  int32_t parent;
  uint64_t offset;
};

/// The inputs of Concat and QConcat steps that can be computed in place, in their slice of the
/// output, so the step copies nothing for them (ConcatBytes and QConcat skip a source that is
/// already its slice). A slice is contiguous only when every extent before the axis is 1 at
/// every batch the plan runs (a channel concat of a batch-1 plan), and the arena offsets are
/// fixed, so the buffers' sizes must not depend on the batch. An input qualifies when it is an
/// arena buffer with one producer, appears once in the step, is copied unchanged (a QConcat
/// input with multiplier 1 and its zero point equal to the output's), starts at a multiple of
/// the plan alignment into the output, and is neither the output of such a concat nor already
/// the slice of another (one level: no slice has slices).
absl::flat_hash_map<int32_t, ConcatSlice> ConcatSlices(const runtime::Plan& plan) {
  absl::flat_hash_map<int32_t, ConcatSlice> slices;
  std::vector<int> producers(plan.buffers.size(), 0);
  for (const runtime::PlanStep& step : plan.steps) {
    for (int32_t b : step.outputs) {
      if (b >= 0) ++producers[b];
    }
  }
  auto batch_free = [&](int32_t b) {
    const runtime::PlanBuffer& buf = plan.buffers[b];
    return buf.kind == BufferKind::kArena && producers[b] == 1 &&
           (plan.batch_min == plan.batch_max || buf.dims.empty() || buf.dims[0] != -1);
  };
  absl::flat_hash_set<int32_t> parents;
  for (const runtime::PlanStep& step : plan.steps) {
    const auto kind = static_cast<StepKind>(step.kind);
    if ((kind != StepKind::kConcat && kind != StepKind::kQConcat) || step.outputs.size() != 1) {
      continue;
    }
    const int32_t y = step.outputs[0];
    if (y < 0 || !batch_free(y) || slices.contains(y)) continue;
    const runtime::PlanBuffer& out = plan.buffers[y];
    int64_t axis = 0;
    std::vector<bool> copied(step.inputs.size(), true);
    if (kind == StepKind::kConcat) {
      absl::StatusOr<runtime::AxisStepParams> p =
          runtime::DecodeParams<runtime::AxisStepParams>(step);
      if (!p.ok()) continue;
      axis = p->axis;
    } else {
      absl::StatusOr<runtime::QConcatStepParams> p =
          runtime::DecodeParams<runtime::QConcatStepParams>(step);
      if (!p.ok() || p->multipliers.size() != step.inputs.size() ||
          p->zp_in.size() != step.inputs.size()) {
        continue;
      }
      axis = p->axis;
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        copied[i] = p->multipliers[i] == 1.0f && p->zp_in[i] == p->zp_out;
      }
    }
    const int64_t rank = static_cast<int64_t>(out.dims.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    bool contiguous = true;
    for (int64_t d = 0; d < axis; ++d) {
      contiguous &= (d == 0 && out.dims[d] == -1 ? plan.batch_max : out.dims[d]) == 1;
    }
    if (!contiguous) continue;
    uint64_t offset = 0;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int32_t x = step.inputs[i];
      if (x < 0) break;
      const std::optional<uint64_t> bytes = runtime::BufferBytes(plan.buffers[x], plan.batch_max);
      if (!bytes) break;
      const bool once = std::count(step.inputs.begin(), step.inputs.end(), x) == 1;
      if (copied[i] && once && batch_free(x) && plan.buffers[x].dtype == out.dtype &&
          !parents.contains(x) && !slices.contains(x) && offset % runtime::kPlanAlignment == 0) {
        slices[x] = {y, offset};
        parents.insert(y);
      }
      offset += *bytes;
    }
  }
  return slices;
}

}  // namespace

absl::Status Lowering::PlanArena() {
  const absl::flat_hash_map<int32_t, ConcatSlice> slices = ConcatSlices(plan_);
  std::vector<int32_t> arena_ids;
  std::vector<runtime::BufferLifetime> lifetimes;
  absl::flat_hash_map<int32_t, size_t> index;
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    if (plan_.buffers[b].kind != BufferKind::kArena) continue;
    if (slices.contains(static_cast<int32_t>(b))) continue;  // placed with its concat's output
    index[static_cast<int32_t>(b)] = lifetimes.size();
    arena_ids.push_back(static_cast<int32_t>(b));
    std::optional<uint64_t> bytes = runtime::BufferBytes(plan_.buffers[b], options_.batch_max);
    if (!bytes) return absl::InvalidArgumentError("a buffer's size overflows");
    lifetimes.push_back({*bytes, std::numeric_limits<int32_t>::max(), -1});
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    auto touch = [&](int32_t b) {
      // A slice's steps keep its concat's output live.
      if (auto slice = slices.find(b); slice != slices.end()) b = slice->second.parent;
      auto it = index.find(b);
      if (it == index.end()) return;
      runtime::BufferLifetime& l = lifetimes[it->second];
      l.first_step = std::min(l.first_step, static_cast<int32_t>(s));
      l.last_step = std::max(l.last_step, static_cast<int32_t>(s));
    };
    for (int32_t b : plan_.steps[s].inputs) touch(b);
    for (int32_t b : plan_.steps[s].outputs) touch(b);
  }
  for (runtime::BufferLifetime& l : lifetimes) {
    if (l.last_step < 0) l.first_step = l.last_step = 0;  // never used
  }
  QCC_ASSIGN_OR_RETURN(runtime::MemoryPlan memory, runtime::PlanMemory(lifetimes));
  for (size_t i = 0; i < arena_ids.size(); ++i) {
    plan_.buffers[arena_ids[i]].arena_offset = static_cast<int64_t>(memory.offsets[i]);
  }
  for (const auto& [b, slice] : slices) {
    plan_.buffers[b].arena_offset =
        plan_.buffers[slice.parent].arena_offset + static_cast<int64_t>(slice.offset);
  }
  plan_.arena_bytes = memory.arena_bytes;
  plan_.metadata["arena_no_reuse_bytes"] = absl::StrCat(memory.no_reuse_bytes);
  return absl::OkStatus();
}

}  // namespace lowering_internal
}  // namespace qcc::cpu
