// Helpers shared by the lowering tests.
#ifndef QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
#define QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_

#include "runtime/plan.h"
#include "runtime/steps.h"

namespace qcc::testing {

/// The number of `kind` steps in `plan`.
inline int CountSteps(const runtime::Plan& plan, runtime::StepKind kind) {
  int n = 0;
  for (const runtime::PlanStep& s : plan.steps) n += s.kind == static_cast<uint32_t>(kind);
  return n;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
