#include "kernels/cpu/broadcast.h"

#include <cassert>

namespace qcc::cpu {

BroadcastPlan MakeBroadcastPlan(absl::Span<const Dims> operands, const Dims& out) {
  assert(!operands.empty() && operands.size() <= BroadcastPlan::kMaxOperands);
  BroadcastPlan plan;
  plan.num_operands = static_cast<int>(operands.size());
  plan.numel = NumElements(out);
  const size_t rank = out.size();

  // Per output axis (extent-1 axes dropped): its extent and, per operand, whether the operand
  // spans it (true) or broadcasts along it (false).
  using Mask = std::array<bool, BroadcastPlan::kMaxOperands>;
  BroadcastPlan::Extents extents;
  absl::InlinedVector<Mask, 6> spans;
  for (size_t a = 0; a < rank; ++a) {
    if (out[a] == 1) continue;
    Mask m{};
    for (int k = 0; k < plan.num_operands; ++k) {
      const Dims& d = operands[k];
      const size_t lead = rank - d.size();
      m[k] = a >= lead && d[a - lead] != 1;
      assert(!m[k] || d[a - lead] == out[a]);
    }
    if (!extents.empty() && spans.back() == m) {
      extents.back() *= out[a];
    } else {
      extents.push_back(out[a]);
      spans.push_back(m);
    }
  }
  if (extents.empty()) {
    extents.push_back(1);
    spans.push_back(Mask{});
  }

  plan.dims = extents;
  for (int k = 0; k < plan.num_operands; ++k) {
    BroadcastPlan::Extents& s = plan.strides[k];
    s.assign(extents.size(), 0);
    int64_t stride = 1;
    for (size_t a = extents.size(); a-- > 0;) {
      if (spans[a][k]) {
        s[a] = stride;
        stride *= extents[a];
      }
    }
  }
  return plan;
}

}  // namespace qcc::cpu
