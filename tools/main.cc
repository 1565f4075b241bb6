// The qcc command line: parses arguments and dispatches to one function per command.
//
// Parsing uses CLI11 (Debian libcli11-dev, header-only): a well-kept library with subcommands,
// typed options with validators, generated --help and clear error text, so this file only
// declares the options.
//
// Every failure prints one line "qcc: error: <message>" to stderr. Exit status: 0 on success,
// 1 for a failed command, 2 for a usage error found by the parser.

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backend_cuda/cuda_info.h"
#include "tools/commands.h"
#include "tools/tool_io.h"

namespace qcc::tools {

std::string VersionText() {
  std::string cuda = "not built";
  if (cuda::BuiltWithCuda()) {
    std::vector<std::string> archs;
    for (absl::string_view a :
         absl::StrSplit(cuda::CompiledArchitectures(), absl::ByAnyChar(",;"), absl::SkipEmpty())) {
      archs.push_back(absl::StrCat("sm_", a));
    }
    cuda = absl::StrCat("built for ", absl::StrJoin(archs, ","),
                        "; devices found: ", cuda::DeviceCount());
  }
  return absl::StrCat("qcc ", QCC_VERSION, "\nCUDA: ", cuda);
}

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

void PrintError(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "qcc: error: %s\n", OneLine(message).c_str());
}

/// The int8 flags `compile` and `export` share: weight granularity, activations, the table, its
/// method and the nodes kept in float.
void AddInt8Flags(CLI::App* cmd, const std::string& asymmetric_help, bool* per_tensor,
                  bool* asymmetric, std::string* calib, std::string* calib_method,
                  std::vector<std::string>* exclude) {
  cmd->add_flag("--per-channel", "Per-output-channel weight scales (the default)");
  cmd->add_flag("--per-tensor", *per_tensor, "One weight scale per tensor");
  cmd->add_flag("--asymmetric", *asymmetric, asymmetric_help);
  cmd->add_option("--calib", *calib,
                  "The calibration table (default: MODEL with .onnx replaced by .calib.json)")
      ->type_name("TABLE.json");
  cmd->add_option("--calib-method", *calib_method,
                  "minmax, entropy, percentile[=P] or mse (default: the table's)")
      ->type_name("METHOD");
  cmd->add_option("--exclude", *exclude,
                  "Node names or op types that stay in float (comma-separated, repeatable)")
      ->delimiter(',')
      ->type_name("NAME,...");
}

// A CLI11 check for "NAME=VALUE" arguments.
CLI::Validator NameEqualsValue(const std::string& example) {
  return CLI::Validator(
      [example](std::string& arg) -> std::string {
        const size_t eq = arg.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
          return "'" + arg + "' is not NAME=VALUE (e.g. " + example + ")";
        }
        return "";
      },
      "");
}

// The image preprocessing options of a command that reads a data folder: --preprocess FILE and
// one flag per field, each handed to calib::ApplyPreprocessFlag under its own name.
class PreprocessFlags {
 public:
  explicit PreprocessFlags(CLI::App* cmd) : cmd_(cmd) {
    cmd->add_option("--preprocess", options_.file,
                    "Preprocessing as a JSON file (keys as the flags below); flags override it")
        ->type_name("FILE.json");
    for (Flag& flag : flags_) {
      cmd->add_option(absl::StrCat("--", flag.key), flag.value, flag.help)->type_name(flag.type);
    }
    cmd->add_flag("--grayscale", grayscale_, "Decode images to one grey channel");
  }

  /// The file and the flags given, after parsing.
  PreprocessOptions Collect() {
    for (const Flag& flag : flags_) {
      if (cmd_->count(absl::StrCat("--", flag.key)) > 0) {
        options_.flags.emplace_back(flag.key, flag.value);
      }
    }
    if (grayscale_) options_.flags.emplace_back("grayscale", "true");
    return options_;
  }

 private:
  struct Flag {
    const char* key;
    const char* type;
    const char* help;
    std::string value;
  };
  CLI::App* cmd_;
  PreprocessOptions options_;
  bool grayscale_ = false;
  Flag flags_[8] = {
      {"resize", "N|HxW", "Resize the short side to N (aspect kept), or to exactly HxW", {}},
      {"crop", "N|HxW", "Centre crop to NxN or HxW", {}},
      {"size-multiple", "N", "Round H and W to a multiple of N after the crop", {}},
      {"scale", "F", "Multiply the 0..255 pixel values by F (e.g. 0.00392156862745098)", {}},
      {"mean", "a,b,c", "Subtract per channel, after --scale, in the model's channel order", {}},
      {"std", "a,b,c", "Divide per channel, after --mean", {}},
      {"channel-order", "rgb|bgr", "Colour channel order of the model input", {}},
      {"layout", "nchw|nhwc", "Channels first or last", {}},
  };
};

int Main(int argc, char** argv) {
  CLI::App app{"qcc: a post-training quantization compiler for ONNX models", "qcc"};
  app.set_version_flag("--version", std::function<std::string()>(VersionText),
                       "Print the version and the CUDA build, then exit");
  app.require_subcommand(0, 1);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a model (fp32, CPU evaluator) or a plan (runtime) and write its outputs");
  run_cmd->add_option("model", run.model, "ONNX model or compiled plan")
      ->required()
      ->type_name("MODEL.onnx|MODEL.plan");
  run_cmd
      ->add_option("--input", run.inputs,
                   "A model input from a .npy or ONNX TensorProto .pb file (repeatable)")
      ->type_name("NAME=FILE")
      ->check(NameEqualsValue("--input Input3=digit.npy"))
      ->allow_extra_args(false);
  run_cmd
      ->add_option("--test-data", run.test_data,
                   "ONNX test_data_set_N folder: input_K.pb feeds graph input K; output_K.pb "
                   "are compared with the results")
      ->type_name("DIR");
  run_cmd
      ->add_option("--output-dir", run.output_dir, "Folder for output_K.pb (created when missing)")
      ->type_name("DIR");
  run_cmd->add_option("--device", run.device, "a plan's device: cpu, cuda or auto (default cpu)");
  run_cmd
      ->add_option("--max-memory", run.max_memory,
                   "Most memory the model's tensors may take at once, e.g. 8G or 512M (default: "
                   "the machine's memory); a model asking for more is an error, not a crash")
      ->type_name("BYTES");
  run_cmd->add_option("--threads", run.threads, "CPU threads (0: every core)")
      ->check(CLI::Range(0, 4096));

  CalibrateOptions calibrate;
  CLI::App* calibrate_cmd = app.add_subcommand(
      "calibrate", "Stream real inputs through the fused fp32 model and write a calibration table");
  calibrate_cmd->add_option("model", calibrate.model, "ONNX model file")->type_name("MODEL.onnx");
  calibrate_cmd
      ->add_option("data", calibrate.data,
                   "Folder of images (.jpg/.png), .npy or ONNX .pb tensors; one sub-folder per "
                   "input for multi-input models")
      ->type_name("DATA");
  calibrate_cmd
      ->add_option("-o,--output", calibrate.output,
                   "The table to write (default: MODEL with .onnx replaced by .calib.json)")
      ->type_name("TABLE.json");
  PreprocessFlags calibrate_preprocess(calibrate_cmd);
  calibrate_cmd->add_option("--batch", calibrate.batch, "Samples per inference (default 16)")
      ->check(CLI::Range(1, 1 << 16));
  calibrate_cmd
      ->add_option("--max-samples", calibrate.max_samples,
                   "Use only the first N samples in sorted file order (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  calibrate_cmd
      ->add_option("--shard", calibrate.shard,
                   "Calibrate every N-th sample from the i-th on (merge the N tables with --merge)")
      ->type_name("i/N");
  calibrate_cmd
      ->add_option("--calib-method", calibrate.method,
                   "The method compile uses by default: minmax, entropy, percentile[=P] or mse "
                   "(default mse; the table keeps histograms, so compile can pick another)")
      ->type_name("METHOD");
  calibrate_cmd->add_option("--device", calibrate.device, "auto, cpu or cuda (default auto)")
      ->type_name("DEVICE");
  calibrate_cmd
      ->add_option("--max-memory", calibrate.max_memory,
                   "Most memory the model's tensors may take at once, e.g. 8G or 512M (default: "
                   "the machine's memory); a model asking for more is an error, not a crash")
      ->type_name("BYTES");
  calibrate_cmd
      ->add_option("--shape", calibrate.shapes,
                   "Fix an input's other dynamic extents, N keeping the batch (repeatable; the "
                   "GPU runs plans, which need them)")
      ->type_name("NAME=N,D1,...")
      ->check(NameEqualsValue("--shape x=N,3,48,192"))
      ->allow_extra_args(false);
  calibrate_cmd->add_option("--threads", calibrate.threads, "CPU threads (0: every core)")
      ->check(CLI::Range(0, 4096));
  calibrate_cmd
      ->add_option("--merge", calibrate.merge,
                   "Combine shard tables into -o instead of calibrating (MODEL, when given, is "
                   "checked against them)")
      ->type_name("TABLE.json ...");

  CompileOptions compile;
  CLI::App* compile_cmd =
      app.add_subcommand("compile", "Quantize a model with its calibration table and write a plan");
  compile_cmd->add_option("model", compile.model, "ONNX model file")
      ->required()
      ->type_name("MODEL.onnx");
  compile_cmd->add_flag("--int8", compile.int8, "int8 weights and activations");
  compile_cmd->add_flag("--fp16", compile.fp16, "fp16 weights and activations, fp32 accumulation");
  compile_cmd->add_flag("--fp32", compile.fp32, "no quantization: the fp32 baseline plan");
  compile_cmd->add_flag("--dynamic", compile.dynamic,
                        "With --int8: dynamic quantization, no calibration table: int8 weights of "
                        "every MatMul/Gemm, their activations quantized at run time (one symmetric "
                        "scale per row, i.e. per token), everything else in fp32");
  AddInt8Flags(compile_cmd, "Asymmetric activations (zero point from min/max, ONNX Runtime style)",
               &compile.per_tensor, &compile.asymmetric, &compile.calib, &compile.calib_method,
               &compile.exclude);
  compile_cmd
      ->add_option("--target", compile.target,
                   "cpu or cuda (default cpu): the backend whose kernels the plan records")
      ->type_name("TARGET");
  compile_cmd
      ->add_option("--batch", compile.batch,
                   "Batch range of the plan, N or MIN:MAX (default 1:32 for a dynamic batch)")
      ->type_name("MIN:MAX");
  compile_cmd
      ->add_option("--shape", compile.shapes,
                   "Fix an input's other dynamic extents, N keeping the batch (repeatable)")
      ->type_name("NAME=N,D1,...")
      ->check(NameEqualsValue("--shape x=N,3,48,192"))
      ->allow_extra_args(false);
  compile_cmd->add_option("-o,--output", compile.output, "The plan (default: MODEL.plan)")
      ->type_name("MODEL.plan");

  ExportOptions exp;
  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "Write the int8 quantization compile would use as a QDQ ONNX model (for TensorRT or ONNX "
      "Runtime) and/or a TensorRT calibration cache");
  export_cmd->add_option("model", exp.model, "ONNX model file")
      ->required()
      ->type_name("MODEL.onnx");
  export_cmd->add_flag("--qdq", exp.qdq,
                       "Write the QDQ model (the default unless only --trt-cache is given)");
  AddInt8Flags(export_cmd,
               "uint8 activations with zero points (ONNX Runtime's default); int8 symmetric "
               "otherwise (TensorRT's form)",
               &exp.per_tensor, &exp.asymmetric, &exp.calib, &exp.calib_method, &exp.exclude);
  export_cmd
      ->add_option("--trt-cache", exp.trt_cache,
                   "Also write a TensorRT calibration cache (the implicit int8 path of TensorRT "
                   "<= 10)")
      ->type_name("FILE");
  export_cmd
      ->add_option("--trt-version", exp.trt_version,
                   "TensorRT version in the cache header, as TensorRT numbers it (default 8601: "
                   "8.6.1; 10.3.0 is 100300)")
      ->check(CLI::Range(1, 1 << 30));
  export_cmd->add_option("-o,--output", exp.output, "The QDQ model (default: MODEL.qdq.onnx)")
      ->type_name("MODEL.qdq.onnx");

  CompareOptions compare;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "Measure a plan's accuracy against the fp32 model on real data");
  compare_cmd->add_option("model", compare.model, "ONNX model file")
      ->required()
      ->type_name("MODEL.onnx");
  compare_cmd->add_option("plan", compare.plan, "The plan compiled from it")
      ->required()
      ->type_name("MODEL.plan");
  compare_cmd->add_option("data", compare.data, "Folder of images, .npy or .pb samples")
      ->required()
      ->type_name("DATA");
  PreprocessFlags compare_preprocess(compare_cmd);
  auto* labels_file = compare_cmd
                          ->add_option("--labels", compare.labels,
                                       "Labels as 'NAME LABEL' lines (NAME: path under DATA or "
                                       "file name)")
                          ->type_name("FILE");
  compare_cmd
      ->add_flag("--labels-from-folders", compare.labels_from_folders,
                 "The label of DATA/<class>/<file> is <class>'s position among DATA's sorted "
                 "sub-folders")
      ->excludes(labels_file);
  compare_cmd->add_flag("--per-layer", compare.per_layer,
                        "Rank every int8 tensor by its SQNR against fp32, worst first");
  auto* pairs_option = compare_cmd->add_option(
      "--pairs", compare.pairs,
      "Retrieval on an embedding model: a JSON list of [name, query, document]; DATA's "
      "samples are the query then the document of each pair, in order. Prints recall@1 of "
      "fp32 and of the plan, and how often their nearest documents agree");
  pairs_option->type_name("FILE.json");
  compare_cmd
      ->add_option("--max-samples", compare.max_samples,
                   "Use only the first N samples in sorted file order (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  compare_cmd
      ->add_option("--shard", compare.shard,
                   "Compare on every N-th sample from the i-th on (e.g. the samples a calibrate "
                   "--shard did not see)")
      ->type_name("i/N")
      ->excludes(pairs_option);
  compare_cmd->add_option("--batch", compare.batch, "Samples per inference (default 32)")
      ->check(CLI::Range(1, 1 << 16));
  compare_cmd->add_option(
      "--device", compare.device,
      "the plan's device: cpu, cuda or auto (default cpu; fp32 runs on the CPU)");
  compare_cmd
      ->add_option("--max-memory", compare.max_memory,
                   "Most memory the model's tensors may take at once, e.g. 8G or 512M (default: "
                   "the machine's memory); a model asking for more is an error, not a crash")
      ->type_name("BYTES");
  compare_cmd->add_option("--threads", compare.threads, "CPU threads (0: every core)")
      ->check(CLI::Range(0, 4096));

  InspectOptions inspect;
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect",
      "Print a model's IR, a calibration table's ranges and scales, or a plan's steps and memory");
  inspect_cmd->add_option("model", inspect.model, "ONNX model, calibration table or plan")
      ->required()
      ->type_name("MODEL.onnx|TABLE.json|MODEL.plan");
  inspect_cmd->add_flag("--passes", inspect.passes,
                        "Run the default pass pipeline first and print what each pass changed");
  inspect_cmd->add_flag("--int8", inspect.int8,
                        "With --passes: then the quantized graph compile --int8 lowers (int8 "
                        "tensors with their scales, qcc.Quantize/qcc.Dequantize, qcc.QConv, ...)");
  inspect_cmd->add_flag("--qdq", inspect.qdq,
                        "With --int8: print it as qcc export writes it instead "
                        "(QuantizeLinear/DequantizeLinear nodes around float ops)");
  inspect_cmd
      ->add_option("--calib", inspect.calib,
                   "The calibration table for --int8 (default: MODEL.calib.json; a QDQ "
                   "model uses its own scales)")
      ->type_name("TABLE.json");

  BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Time a model's fused fp32 graph or a plan on seeded random inputs");
  bench_cmd->add_option("model", bench.model, "ONNX model or compiled plan")
      ->required()
      ->type_name("MODEL.onnx|MODEL.plan");
  bench_cmd
      ->add_option("--batch", bench.batch, "Batch size for a dynamic leading extent (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  bench_cmd->add_option("--device", bench.device,
                        "a plan's device: cpu, cuda or auto (default cpu)");
  bench_cmd
      ->add_option("--max-memory", bench.max_memory,
                   "Most memory the model's tensors may take at once, e.g. 8G or 512M (default: "
                   "the machine's memory); a model asking for more is an error, not a crash")
      ->type_name("BYTES");
  bench_cmd->add_option("--threads", bench.threads, "CPU threads (0: every core)")
      ->check(CLI::Range(0, 4096));
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs first")
      ->check(CLI::Range(0, 1 << 20));
  bench_cmd->add_option("--iters", bench.iters, "Timed runs")->check(CLI::Range(1, 1 << 20));
  bench_cmd
      ->add_option("--shape", bench.shapes,
                   "The shape of an input with other dynamic extents (repeatable)")
      ->type_name("NAME=D0,D1,...")
      ->check(NameEqualsValue("--shape x=1,3,640,640"))
      ->allow_extra_args(false);
  bench_cmd->add_option("--seed", bench.seed, "Seed of the random inputs");
  bench_cmd->add_flag("--profile", bench.profile,
                      "Then as many runs again timing each step: the slowest steps and the time "
                      "per step kind (CPU runtime and evaluator)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    PrintError(absl::StrCat(e.what(), " (run 'qcc --help' for usage)"));
    return kExitUsage;
  }

  absl::Status status;
  if (run_cmd->parsed()) {
    status = RunCommand(run);
  } else if (calibrate_cmd->parsed()) {
    calibrate.preprocess = calibrate_preprocess.Collect();
    status = CalibrateCommand(calibrate);
  } else if (compile_cmd->parsed()) {
    if (compile_cmd->count("--per-channel") > 0 && compile.per_tensor) {
      PrintError("--per-channel and --per-tensor exclude each other");
      return kExitUsage;
    }
    status = CompileCommand(compile);
  } else if (export_cmd->parsed()) {
    if (export_cmd->count("--per-channel") > 0 && exp.per_tensor) {
      PrintError("--per-channel and --per-tensor exclude each other");
      return kExitUsage;
    }
    status = ExportCommand(exp);
  } else if (compare_cmd->parsed()) {
    compare.preprocess = compare_preprocess.Collect();
    status = CompareCommand(compare);
  } else if (inspect_cmd->parsed()) {
    status = InspectCommand(inspect);
  } else if (bench_cmd->parsed()) {
    status = BenchCommand(bench);
  } else {
    PrintError(
        "a command is required: calibrate, compile, export, compare, run, inspect or bench (run "
        "'qcc "
        "--help' "
        "for usage)");
    return kExitUsage;
  }
  if (!status.ok()) {
    PrintError(std::string(status.message()));
    return kExitFailure;
  }
  return 0;
}

}  // namespace
}  // namespace qcc::tools

int main(int argc, char** argv) {
  try {
    return qcc::tools::Main(argc, argv);
  } catch (const std::exception& e) {
    // Our code reports errors as absl::Status; this only catches library exceptions such as
    // std::bad_alloc, so that the user still gets one line and no abort.
    qcc::tools::PrintError(std::string("unexpected failure: ") + e.what());
    return 1;
  }
}
