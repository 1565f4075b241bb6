// The qcc commands, one function per subcommand (each defined in tools/cmd_<name>.cc). main.cc
// parses the command line into these option structs and prints the returned error, if any.
#ifndef QCC_TOOLS_COMMANDS_H_
#define QCC_TOOLS_COMMANDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace qcc::tools {

/// `qcc --version`: "qcc X.Y.Z" and a line on the CUDA build and the devices found.
std::string VersionText();

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // "NAME=FILE", a .npy or ONNX TensorProto .pb
  std::string test_data;            // an ONNX test_data_set_N folder (input_K.pb, output_K.pb)
  std::string output_dir;           // where output_K.pb go; nothing is written when empty
  int threads = 0;                  // 0: every core
  std::string max_memory;           // --max-memory: "8G", "512M" (empty: the machine's memory)
  std::string device = "cpu";       // a plan's device: cpu, cuda or auto
};

/// `qcc run`: evaluates the model in fp32 on the CPU, prints a summary of each output, compares
/// with the reference outputs of --test-data when present and writes output_K.pb files.
absl::Status RunCommand(const RunOptions& options);

/// Preprocessing of image data: a JSON file first, then the flags in the order given, as
/// (key, value) with the key as calib::ApplyPreprocessFlag takes it ("resize", ...).
struct PreprocessOptions {
  std::string file;
  std::vector<std::pair<std::string, std::string>> flags;
};

struct CalibrateOptions {
  std::string model;
  std::string data;
  std::string output;  // default: MODEL with .onnx replaced by .calib.json
  PreprocessOptions preprocess;
  int64_t batch = 16;
  int64_t max_samples = 0;
  std::string shard = "0/1";  // "i/N"
  std::string method = "mse";
  std::string device = "auto";
  int threads = 0;
  std::string max_memory;           // --max-memory: "8G", "512M" (empty: the machine's memory)
  std::vector<std::string> shapes;  // --shape NAME=N,D1,...: fix other dynamic extents (GPU runs)
  std::vector<std::string> merge;   // tables to combine into `output` instead of calibrating
};

/// `qcc calibrate`: streams the data through the fused model with observers and writes the
/// calibration table (or, with --merge, combines shard tables), then prints a summary.
absl::Status CalibrateCommand(const CalibrateOptions& options);

struct CompileOptions {
  std::string model;
  std::string calib;   // default: MODEL with .onnx replaced by .calib.json
  std::string output;  // default: MODEL with .onnx replaced by .plan
  bool int8 = false;
  bool fp16 = false;
  bool fp32 = false;        // an unquantized plan: the baseline fp16/int8 plans are timed against
  bool dynamic = false;     // with int8: activations quantized at run time, no table
  bool per_tensor = false;  // --per-channel (the default) or --per-tensor weights
  bool asymmetric = false;
  std::string calib_method;  // empty: the table's method
  std::vector<std::string> exclude;
  std::string target = "cpu";
  std::string batch;                // "MIN:MAX" or "N"; empty: 1:32 for a dynamic batch
  std::vector<std::string> shapes;  // "NAME=N,3,48,192": fixes other dynamic extents (N: batch)
};

/// `qcc compile`: quantizes the fused model with the calibration table and writes a plan.
absl::Status CompileCommand(const CompileOptions& options);

struct ExportOptions {
  std::string model;
  std::string calib;   // default: MODEL with .onnx replaced by .calib.json
  std::string output;  // the QDQ model; default: MODEL with .onnx replaced by .qdq.onnx
  bool qdq = false;    // write the QDQ model (also when no --trt-cache is asked for)
  bool per_tensor = false;
  bool asymmetric = false;  // uint8 activations with a zero point (ONNX Runtime's default form)
  std::string calib_method;
  std::vector<std::string> exclude;
  std::string trt_cache;   // a TensorRT calibration cache to write
  int trt_version = 8601;  // the TensorRT version in its header (8.6.1: 8601)
};

/// `qcc export`: the int8 decisions of `qcc compile --int8` as a QDQ ONNX model and/or a TensorRT
/// calibration cache (tools/cmd_export.cc).
absl::Status ExportCommand(const ExportOptions& options);

struct CompareOptions {
  std::string model;
  std::string plan;
  std::string data;
  PreprocessOptions preprocess;
  std::string labels;  // "NAME LABEL" lines
  bool labels_from_folders = false;
  bool per_layer = false;  // rank every int8 tensor by its SQNR against fp32
  std::string pairs;       // [name, query, document] JSON: retrieval recall@1 of both
  int64_t max_samples = 0;
  std::string shard;  // "i/N": every N-th sample from the i-th on (empty: all)
  int64_t batch = 32;
  int threads = 0;
  std::string max_memory;      // --max-memory: "8G", "512M" (empty: the machine's memory)
  std::string device = "cpu";  // the plan's device: cpu, cuda or auto (fp32 always on the CPU)
};

/// `qcc compare`: the plan against the fp32 model on real data (tools/cmd_compare.cc).
absl::Status CompareCommand(const CompareOptions& options);

struct InspectOptions {
  std::string model;
  bool passes = false;  // run passes::DefaultPipeline() first and report each pass
  bool int8 = false;    // with passes: then the quantized graph of compile --int8
  bool qdq = false;     // with int8: the graph as qcc export writes it (QuantizeLinear/...)
  std::string calib;    // the table for int8 (default: MODEL.calib.json)
};

/// `qcc inspect TABLE.json`: prints a calibration table's settings and, per tensor, its range
/// and the scale each calibration method would pick (tools/cmd_inspect_table.cc).
absl::Status InspectTableCommand(const std::string& path);

/// `qcc inspect MODEL.plan`: prints a plan's steps and memory (tools/cmd_inspect_plan.cc).
absl::Status InspectPlanCommand(const std::string& path);

/// `qcc inspect`: prints the imported IR (after the default pass pipeline with --passes, and
/// then one line per pass) and a summary (ops, parameters, weight bytes by dtype).
absl::Status InspectCommand(const InspectOptions& options);

struct BenchOptions {
  std::string model;
  int batch = 0;  // 0: not given (1 for a dynamic batch)
  int threads = 0;
  std::string max_memory;  // --max-memory: "8G", "512M" (empty: the machine's memory)
  int warmup = 3;
  int iters = 20;
  std::vector<std::string> shapes;  // "NAME=D0,D1,..." for inputs with other dynamic extents
  uint32_t seed = 0;
  std::string device = "cpu";  // a plan's device: cpu, cuda or auto
  bool profile = false;        // --profile: time each step too (CPU only)
};

/// `qcc bench`: times the fp32 CPU evaluator on seeded random inputs and prints median and p90
/// latency, throughput and a machine-readable `bench: ...` line.
absl::Status BenchCommand(const BenchOptions& options);

}  // namespace qcc::tools

#endif  // QCC_TOOLS_COMMANDS_H_
