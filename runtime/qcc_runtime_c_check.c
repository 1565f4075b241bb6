/* Compiled as C99 by runtime/CMakeLists.txt: the C API header must stay valid C. */
#include "runtime/qcc_runtime.h"

/* Every declaration is usable from C. */
int qcc_runtime_c_check(const char* path) {
  qcc_engine* engine = NULL;
  qcc_status status = qcc_engine_load(path, 1, &engine);
  int32_t n = status == QCC_OK ? qcc_engine_num_inputs(engine) : 0;
  qcc_engine_free(engine);
  if (qcc_api_version() != QCC_API_VERSION || qcc_plan_format_version() < 1) return -1;
  return qcc_version()[0] != '\0' ? n : -1;
}
