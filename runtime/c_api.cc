// The C API (runtime/qcc_runtime.h) over Engine and ExecutionContext. Every entry point catches
// everything: no exception crosses the C boundary.
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/engine.h"
#include "runtime/plan.h"
#include "runtime/plan_format.h"
#include "runtime/qcc_runtime.h"

struct qcc_engine {
  std::shared_ptr<const qcc::runtime::Engine> engine;
};

struct qcc_context {
  std::shared_ptr<const qcc::runtime::Engine> engine;
  std::unique_ptr<qcc::runtime::ExecutionContext> context;
  std::vector<qcc::Tensor> outputs;  // of the last successful run
};

namespace {

using qcc::runtime::Engine;
using qcc::runtime::TensorInfo;

static_assert(QCC_DTYPE_FLOAT32 == static_cast<int>(qcc::DType::kFloat32) &&
                  QCC_DTYPE_INT8 == static_cast<int>(qcc::DType::kInt8) &&
                  QCC_DTYPE_INT32 == static_cast<int>(qcc::DType::kInt32) &&
                  QCC_DTYPE_BOOL == static_cast<int>(qcc::DType::kBool),
              "qcc_dtype must number the dtypes as qcc::DType does");

thread_local std::string last_error;

qcc_status Fail(qcc_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

qcc_status Fail(const absl::Status& status) {
  qcc_status code = QCC_UNKNOWN;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      code = QCC_INVALID_ARGUMENT;
      break;
    case absl::StatusCode::kNotFound:
      code = QCC_NOT_FOUND;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = QCC_RESOURCE_EXHAUSTED;
      break;
    case absl::StatusCode::kUnimplemented:
      code = QCC_UNIMPLEMENTED;
      break;
    case absl::StatusCode::kInternal:
      code = QCC_INTERNAL;
      break;
    default:
      break;
  }
  return Fail(code, std::string(status.message()));
}

// Runs `fn` (returning qcc_status), turning any exception into a status.
template <typename Fn>
qcc_status Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Fail(QCC_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Fail(QCC_INTERNAL, absl::StrCat("internal error: ", e.what()));
  } catch (...) {
    return Fail(QCC_INTERNAL, "internal error: unknown exception");
  }
}

const TensorInfo* Info(const qcc_engine* engine, int32_t index, bool output) {
  if (engine == nullptr || engine->engine == nullptr || index < 0) return nullptr;
  const std::vector<TensorInfo>& infos =
      output ? engine->engine->outputs() : engine->engine->inputs();
  return static_cast<size_t>(index) < infos.size() ? &infos[index] : nullptr;
}

}  // namespace

extern "C" {

int32_t qcc_api_version(void) { return QCC_API_VERSION; }

const char* qcc_version(void) { return QCC_VERSION; }

int32_t qcc_plan_format_version(void) {
  return static_cast<int32_t>(qcc::runtime::kPlanFormatVersion);
}

const char* qcc_last_error(void) { return last_error.c_str(); }

qcc_status qcc_engine_load(const char* path, int32_t num_threads, qcc_engine** engine) {
  return Guard([&] {
    if (engine == nullptr) return Fail(QCC_INVALID_ARGUMENT, "qcc_engine_load: engine is NULL");
    *engine = nullptr;
    if (path == nullptr) return Fail(QCC_INVALID_ARGUMENT, "qcc_engine_load: path is NULL");
    if (num_threads < 0) {
      return Fail(QCC_INVALID_ARGUMENT, "qcc_engine_load: num_threads must be >= 0");
    }
    qcc::runtime::EngineOptions options;
    options.num_threads = num_threads;
    absl::StatusOr<std::shared_ptr<const Engine>> loaded = Engine::Load(path, options);
    if (!loaded.ok()) return Fail(loaded.status());
    *engine = new qcc_engine{std::move(*loaded)};
    return QCC_OK;
  });
}

void qcc_engine_free(qcc_engine* engine) { delete engine; }

int32_t qcc_engine_num_inputs(const qcc_engine* engine) {
  return engine == nullptr ? 0 : static_cast<int32_t>(engine->engine->inputs().size());
}

int32_t qcc_engine_num_outputs(const qcc_engine* engine) {
  return engine == nullptr ? 0 : static_cast<int32_t>(engine->engine->outputs().size());
}

const char* qcc_engine_input_name(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, false);
  return info == nullptr ? nullptr : info->name.c_str();
}

qcc_dtype qcc_engine_input_dtype(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, false);
  return info == nullptr ? QCC_DTYPE_UNDEFINED : static_cast<qcc_dtype>(info->dtype);
}

int32_t qcc_engine_input_rank(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, false);
  return info == nullptr ? -1 : static_cast<int32_t>(info->dims.size());
}

const int64_t* qcc_engine_input_dims(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, false);
  return info == nullptr ? nullptr : info->dims.data();
}

const char* qcc_engine_output_name(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, true);
  return info == nullptr ? nullptr : info->name.c_str();
}

qcc_dtype qcc_engine_output_dtype(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, true);
  return info == nullptr ? QCC_DTYPE_UNDEFINED : static_cast<qcc_dtype>(info->dtype);
}

int32_t qcc_engine_output_rank(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, true);
  return info == nullptr ? -1 : static_cast<int32_t>(info->dims.size());
}

const int64_t* qcc_engine_output_dims(const qcc_engine* engine, int32_t index) {
  const TensorInfo* info = Info(engine, index, true);
  return info == nullptr ? nullptr : info->dims.data();
}

qcc_status qcc_engine_batch_range(const qcc_engine* engine, int64_t* batch_min,
                                  int64_t* batch_max) {
  if (engine == nullptr || batch_min == nullptr || batch_max == nullptr) {
    return Fail(QCC_INVALID_ARGUMENT, "qcc_engine_batch_range: NULL argument");
  }
  *batch_min = engine->engine->batch_min();
  *batch_max = engine->engine->batch_max();
  return QCC_OK;
}

qcc_status qcc_context_create(const qcc_engine* engine, qcc_context** context) {
  return Guard([&] {
    if (context == nullptr) {
      return Fail(QCC_INVALID_ARGUMENT, "qcc_context_create: context is NULL");
    }
    *context = nullptr;
    if (engine == nullptr) return Fail(QCC_INVALID_ARGUMENT, "qcc_context_create: engine is NULL");
    *context = new qcc_context{engine->engine, engine->engine->CreateContext(), {}};
    return QCC_OK;
  });
}

void qcc_context_free(qcc_context* context) { delete context; }

qcc_status qcc_context_run(qcc_context* context, int32_t num_inputs, const void* const* inputs,
                           const int64_t* const* input_dims, const int32_t* input_ranks) {
  return Guard([&] {
    if (context == nullptr) return Fail(QCC_INVALID_ARGUMENT, "qcc_context_run: context is NULL");
    context->outputs.clear();
    const std::vector<TensorInfo>& infos = context->engine->inputs();
    if (num_inputs < 0 || static_cast<size_t>(num_inputs) != infos.size()) {
      return Fail(QCC_INVALID_ARGUMENT, absl::StrCat("qcc_context_run: expected ", infos.size(),
                                                     " inputs, got ", num_inputs));
    }
    if (num_inputs > 0 && (inputs == nullptr || input_dims == nullptr || input_ranks == nullptr)) {
      return Fail(QCC_INVALID_ARGUMENT, "qcc_context_run: inputs, dims or ranks is NULL");
    }
    std::vector<qcc::Tensor> tensors;
    for (int32_t i = 0; i < num_inputs; ++i) {
      const std::string id = absl::StrCat("qcc_context_run: input ", i, " '", infos[i].name, "'");
      const int32_t rank = input_ranks[i];
      if (rank < 0 || rank > static_cast<int32_t>(qcc::runtime::kMaxPlanRank) ||
          (rank > 0 && input_dims[i] == nullptr)) {
        return Fail(QCC_INVALID_ARGUMENT, absl::StrCat(id, ": invalid rank ", rank, " or dims"));
      }
      qcc::Dims dims(input_dims[i], input_dims[i] + rank);
      const size_t elem = qcc::DTypeSize(infos[i].dtype);
      const auto address = reinterpret_cast<uintptr_t>(inputs[i]);
      if (inputs[i] == nullptr || address % elem != 0) {
        return Fail(QCC_INVALID_ARGUMENT, absl::StrCat(id, ": data is NULL or not aligned to its ",
                                                       elem, "-byte elements"));
      }
      // A non-owning view of the caller's bytes (the aliasing constructor with no owner).
      std::shared_ptr<uint8_t> view(std::shared_ptr<uint8_t>(),
                                    const_cast<uint8_t*>(static_cast<const uint8_t*>(inputs[i])));
      tensors.emplace_back(infos[i].dtype, std::move(dims), std::move(view));
    }
    absl::StatusOr<std::vector<qcc::Tensor>> outputs = context->context->Run(tensors);
    if (!outputs.ok()) return Fail(outputs.status());
    context->outputs = std::move(*outputs);
    return QCC_OK;
  });
}

qcc_status qcc_context_output(const qcc_context* context, int32_t index, const void** data,
                              const int64_t** dims, int32_t* rank) {
  if (context == nullptr || data == nullptr || dims == nullptr || rank == nullptr) {
    return Fail(QCC_INVALID_ARGUMENT, "qcc_context_output: NULL argument");
  }
  if (index < 0 || static_cast<size_t>(index) >= context->outputs.size()) {
    return Fail(QCC_INVALID_ARGUMENT,
                absl::StrCat("qcc_context_output: no output ", index, " (", context->outputs.size(),
                             " outputs from the last successful run)"));
  }
  const qcc::Tensor& t = context->outputs[index];
  *data = t.raw();
  *dims = t.dims().data();
  *rank = static_cast<int32_t>(t.rank());
  return QCC_OK;
}

}  // extern "C"
