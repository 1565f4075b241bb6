/* The qcc runtime's C API: load a plan file, query its inputs and outputs, run it on the CPU.
 *
 *   qcc_engine* engine;  qcc_context* ctx;
 *   if (qcc_engine_load("model.plan", 0, &engine) != QCC_OK) puts(qcc_last_error());
 *   qcc_context_create(engine, &ctx);
 *   const void* inputs[1] = {image};            // the input's dtype, dense row-major
 *   const int64_t dims0[4] = {2, 3, 224, 224};  // its dims, with the batch
 *   const int64_t* dims[1] = {dims0};
 *   const int32_t ranks[1] = {4};
 *   if (qcc_context_run(ctx, 1, inputs, dims, ranks) != QCC_OK) puts(qcc_last_error());
 *   const void* y; const int64_t* y_dims; int32_t y_rank;
 *   qcc_context_output(ctx, 0, &y, &y_dims, &y_rank);  // valid until the next run or free
 *   qcc_context_free(ctx);  qcc_engine_free(engine);
 *
 * Rules: every function returns a status (or a plain value for the queries) and never throws or
 * aborts; on failure qcc_last_error() describes the last failed call of the calling thread.
 * An engine is immutable and may be shared by threads; a context is used by one thread at a
 * time. A context keeps its engine alive, so the two may be freed in any order. Input data
 * must be aligned to its element size and stay valid during qcc_context_run (it is not copied).
 */
#ifndef QCC_RUNTIME_QCC_RUNTIME_H_
#define QCC_RUNTIME_QCC_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Result of a call; the non-zero values follow absl::StatusCode's meaning. */
typedef enum qcc_status {
  QCC_OK = 0,
  QCC_UNKNOWN = 2,            /**< any other failure */
  QCC_INVALID_ARGUMENT = 3,   /**< a bad argument, input or plan file */
  QCC_NOT_FOUND = 5,          /**< the plan file does not exist */
  QCC_RESOURCE_EXHAUSTED = 8, /**< out of memory */
  QCC_UNIMPLEMENTED = 12,     /**< unsupported by this runtime */
  QCC_INTERNAL = 13,          /**< a bug in qcc */
} qcc_status;

/** Element types (numbered as qcc's DType). */
typedef enum qcc_dtype {
  QCC_DTYPE_UNDEFINED = 0,
  QCC_DTYPE_FLOAT32 = 1,
  QCC_DTYPE_FLOAT16 = 2,
  QCC_DTYPE_BFLOAT16 = 3,
  QCC_DTYPE_FLOAT8E4M3 = 4,
  QCC_DTYPE_FLOAT64 = 5,
  QCC_DTYPE_INT8 = 6,
  QCC_DTYPE_UINT8 = 7,
  QCC_DTYPE_INT16 = 8,
  QCC_DTYPE_UINT16 = 9,
  QCC_DTYPE_INT32 = 10,
  QCC_DTYPE_UINT32 = 11,
  QCC_DTYPE_INT64 = 12,
  QCC_DTYPE_UINT64 = 13,
  QCC_DTYPE_BOOL = 14,
} qcc_dtype;

typedef struct qcc_engine qcc_engine;
typedef struct qcc_context qcc_context;

/** The version of this C API, raised whenever a declaration here changes meaning. A program
 *  compares the QCC_API_VERSION it was built with against qcc_api_version() of the library it
 *  runs with; they differ when the two do not match. */
#define QCC_API_VERSION 1
int32_t qcc_api_version(void);
/** The qcc release the library was built from, as `qcc --version` prints it ("0.1.0"). */
const char* qcc_version(void);
/** The plan file format version this runtime reads; it refuses plans of any other version
 *  (written by another qcc release): compile them again with this release. */
int32_t qcc_plan_format_version(void);

/** The message of the calling thread's last failed call ("" when none); valid until its next
 *  failing call. */
const char* qcc_last_error(void);

/** Reads and prepares the plan file at `path` with `num_threads` kernel threads per step
 *  (0: every core). On success *engine owns it (free with qcc_engine_free). */
qcc_status qcc_engine_load(const char* path, int32_t num_threads, qcc_engine** engine);
/** Releases the caller's reference (NULL is ignored). */
void qcc_engine_free(qcc_engine* engine);

/** The number of inputs / outputs (0 for NULL). */
int32_t qcc_engine_num_inputs(const qcc_engine* engine);
int32_t qcc_engine_num_outputs(const qcc_engine* engine);
/** Input / output `index`'s name, dtype, rank and dims (dims[0] == -1: the dynamic batch).
 *  Pointers live as long as the engine; NULL, QCC_DTYPE_UNDEFINED or -1 for a bad index. */
const char* qcc_engine_input_name(const qcc_engine* engine, int32_t index);
qcc_dtype qcc_engine_input_dtype(const qcc_engine* engine, int32_t index);
int32_t qcc_engine_input_rank(const qcc_engine* engine, int32_t index);
const int64_t* qcc_engine_input_dims(const qcc_engine* engine, int32_t index);
const char* qcc_engine_output_name(const qcc_engine* engine, int32_t index);
qcc_dtype qcc_engine_output_dtype(const qcc_engine* engine, int32_t index);
int32_t qcc_engine_output_rank(const qcc_engine* engine, int32_t index);
const int64_t* qcc_engine_output_dims(const qcc_engine* engine, int32_t index);
/** The batch range a run accepts. */
qcc_status qcc_engine_batch_range(const qcc_engine* engine, int64_t* batch_min, int64_t* batch_max);

/** A new execution context for `engine` (free with qcc_context_free). */
qcc_status qcc_context_create(const qcc_engine* engine, qcc_context** context);
void qcc_context_free(qcc_context* context);

/** Runs the plan. inputs[i] holds input i (its dtype, dense row-major) with rank
 *  input_ranks[i] and dims input_dims[i][0 .. rank); the dims must match the input's, with
 *  the batch within the engine's range. Outputs are then read with qcc_context_output. */
qcc_status qcc_context_run(qcc_context* context, int32_t num_inputs, const void* const* inputs,
                           const int64_t* const* input_dims, const int32_t* input_ranks);
/** Output `index` of the last successful run: its data, dims and rank, owned by the context
 *  and valid until the next qcc_context_run or qcc_context_free. */
qcc_status qcc_context_output(const qcc_context* context, int32_t index, const void** data,
                              const int64_t** dims, int32_t* rank);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* QCC_RUNTIME_QCC_RUNTIME_H_ */
