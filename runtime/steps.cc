#include "runtime/steps.h"

namespace qcc::runtime {

absl::string_view StepKindName(uint32_t kind) {
  static constexpr absl::string_view kNames[] = {
#define STEP(kind, params) #kind,
#include "runtime/steps.def"
#undef STEP
  };
  return kind < static_cast<uint32_t>(StepKind::kNumStepKinds) ? kNames[kind] : "unknown";
}

}  // namespace qcc::runtime
