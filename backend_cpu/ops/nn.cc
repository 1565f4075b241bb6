// STUB: to be replaced.
#include "backend_cpu/op_registry.h"

namespace qcc::cpu {
void RegisterNnOps(OpRegistry& registry) {}
}  // namespace qcc::cpu
