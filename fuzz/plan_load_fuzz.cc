// libFuzzer entry point of the plan_load target (fuzz/fuzz_bodies.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)qcc::fuzz::PlanLoad(data, size);
  return 0;
}
