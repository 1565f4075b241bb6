// Runs the ONNX backend test data shipped by Debian's libonnx-testdata through the importer and
// the CPU evaluator, and compares every output with the expected one.
//
// Each case is a folder <suite>/<case>/ with model.onnx and test_data_set_*/{input,output}_K.pb.
// A case is "unsupported" when anything on its path returns kUnimplemented, "failed" on any other
// error or a mismatch, and "passed" otherwise. The outcome of every case is pinned: the test
// fails on any failure not listed in known_failures.txt, on a listed case that no longer fails,
// on an unsupported case not listed in unsupported.txt (a case that passed must not silently
// become unsupported), on a listed one that passes now (shrink the list), and when fewer than
// kMinPassed pass. QCC_CONFORMANCE_FILTER=<substring> runs only the matching cases (no count or
// completeness checks then); QCC_CONFORMANCE_WRITE_UNSUPPORTED=<file> writes the unsupported
// list of this run (to review and check in when support changes on purpose).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/op_kind.h"
#include "onnx/onnx_pb.h"
#include "tests/testing/tensor_compare.h"

namespace qcc {
namespace {

namespace fs = std::filesystem;

/// The issue's bar: at least this many cases must pass.
constexpr int kMinPassed = 550;
/// Tolerances for float outputs: |actual - expected| <= kAtol + kRtol * |expected|.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
/// The test-data suites walked, under QCC_ONNX_TESTDATA_DIR.
constexpr const char* kSuites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

enum class Outcome { kPassed, kFailed, kUnsupported };

struct CaseResult {
  Outcome outcome = Outcome::kPassed;
  std::string reason;                    // failed or unsupported: what went wrong
  std::vector<std::string> unsupported;  // unsupported: the op types to blame
};

// The case being run, printed if a kernel crashes so the crash names its case.
char g_current_case[512];

void OnCrash(int sig) {
  const char prefix[] = "\nonnx conformance: crashed (signal) while running case ";
  ssize_t ignored = write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  ignored = write(STDERR_FILENO, g_current_case, strlen(g_current_case));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Collects the op types of `graph` and of every subgraph (If/Loop/Scan bodies); ops outside the
/// default ONNX domain are written "domain:Op".
void CollectOpTypes(const onnx::GraphProto& graph, std::set<std::string>* ops) {
  for (const onnx::NodeProto& node : graph.node()) {
    const std::string& d = node.domain();
    ops->insert(d.empty() || d == "ai.onnx" ? node.op_type()
                                            : absl::StrCat(d, ":", node.op_type()));
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CollectOpTypes(a.g(), ops);
      for (const onnx::GraphProto& g : a.graphs()) CollectOpTypes(g, ops);
    }
  }
}

/// What the blame for an unsupported case is read from: the model file, via the ONNX protobuf.
struct ModelFacts {
  std::set<std::string> op_types;
  int64_t opset = -1;  // the default-domain opset, -1 when none is imported
};

ModelFacts ReadModelFacts(const std::string& path) {
  ModelFacts facts;
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return facts;
  CollectOpTypes(model.graph(), &facts.op_types);
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") facts.opset = id.version();
  }
  return facts;
}

/// What to blame for a kUnimplemented case: "opset N" when the model's opset is outside the
/// importer's range; else the op types qcc's op table does not know; else, when the graph was
/// imported, those without a CPU kernel; else every op type of the model, marked "(mode)": a
/// known op whose dtype or attribute mode is not supported.
std::vector<std::string> BlameOps(const std::string& model_path, const ir::Graph* graph) {
  const ModelFacts facts = ReadModelFacts(model_path);
  if (facts.opset >= 0 &&
      (facts.opset < frontend::kMinOpset || facts.opset > frontend::kMaxOpset)) {
    return {absl::StrCat("opset ", facts.opset)};
  }
  std::set<std::string> blamed;
  for (const std::string& op : facts.op_types) {
    if (!ir::OpKindFromName(op).has_value()) blamed.insert(op);
  }
  if (blamed.empty() && graph != nullptr) {
    for (const ir::Node* n : cpu::UnsupportedNodes(*graph)) {
      blamed.insert(std::string(ir::OpName(n->kind())));
    }
  }
  if (blamed.empty()) {
    for (const std::string& op : facts.op_types) blamed.insert(op + " (mode)");
  }
  return {blamed.begin(), blamed.end()};
}

/// Sorted folders under `dir` whose names start with `prefix`.
std::vector<fs::path> SubDirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Reads `<dir>/<stem>_0.pb`, `<stem>_1.pb`, ... until one is missing.
absl::StatusOr<std::vector<Tensor>> ReadNumbered(const fs::path& dir, const std::string& stem) {
  std::vector<Tensor> tensors;
  for (int k = 0;; ++k) {
    fs::path p = dir / absl::StrCat(stem, "_", k, ".pb");
    if (!fs::exists(p)) break;
    auto t = frontend::ReadTensorProtoFile(p.string());
    if (!t.ok()) return t.status();
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

/// The test data of this libonnx-testdata release stores bf16 tensors as uint16 holding the bf16
/// bits; reinterprets such a tensor as bf16 when the graph says bf16 (`want`).
Tensor FixBf16(const Tensor& t, DType want) {
  if (want != DType::kBFloat16 || t.dtype() != DType::kUInt16) return t;
  Tensor bf16(DType::kBFloat16, t.dims());
  std::memcpy(bf16.raw(), t.raw(), t.nbytes());
  return bf16;
}

CaseResult Fail(std::string reason) { return {Outcome::kFailed, std::move(reason), {}}; }

/// Imports, prepares and runs one case on every data set.
CaseResult RunCase(const fs::path& dir) {
  const std::string model_path = (dir / "model.onnx").string();
  std::unique_ptr<ir::Graph> graph;
  auto classify = [&](const absl::Status& s, absl::string_view stage) {
    // The case name is printed beside the message, so drop the file path from it.
    std::string message = absl::StrReplaceAll(
        s.message(),
        {{model_path + ": ", ""}, {model_path, "model.onnx"}, {dir.string() + "/", ""}});
    if (s.code() == absl::StatusCode::kUnimplemented) {
      return CaseResult{Outcome::kUnsupported, message, BlameOps(model_path, graph.get())};
    }
    return Fail(absl::StrCat(stage, ": ", absl::StatusCodeToString(s.code()), ": ", message));
  };
  auto imported = frontend::ImportOnnxFile(model_path);
  if (!imported.ok()) return classify(imported.status(), "import");
  graph = *std::move(imported);
  cpu::EvalOptions options;
  options.num_threads = 1;
  auto evaluator = cpu::Evaluator::Create(*graph, options);
  if (!evaluator.ok()) return classify(evaluator.status(), "evaluator");

  std::vector<fs::path> sets = SubDirs(dir, "test_data_set_");
  if (sets.empty()) return Fail("no test_data_set_* folder");
  for (const fs::path& set : sets) {
    const std::string where = set.filename().string();
    auto inputs = ReadNumbered(set, "input");
    if (!inputs.ok()) return classify(inputs.status(), where + " inputs");
    auto expected = ReadNumbered(set, "output");
    if (!expected.ok()) return classify(expected.status(), where + " outputs");
    for (size_t i = 0; i < inputs->size() && i < graph->inputs().size(); ++i) {
      (*inputs)[i] = FixBf16((*inputs)[i], graph->inputs()[i]->dtype());
    }
    for (size_t k = 0; k < expected->size() && k < graph->outputs().size(); ++k) {
      (*expected)[k] = FixBf16((*expected)[k], graph->outputs()[k]->dtype());
    }
    auto outputs = (*evaluator)->Run(*inputs);
    if (!outputs.ok()) return classify(outputs.status(), where + " run");
    if (outputs->size() != expected->size()) {
      return Fail(
          absl::StrCat(where, ": ", outputs->size(), " outputs, expected ", expected->size()));
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      std::string diff = testing::CompareTensors((*outputs)[k], (*expected)[k], kRtol, kAtol);
      if (!diff.empty()) {
        return Fail(
            absl::StrCat(where, " output ", k, " (", graph->outputs()[k]->name(), "): ", diff));
      }
    }
  }
  return {};
}

/// Reads a case list (known_failures.txt, unsupported.txt): "<suite>/<case>  # reason" per line.
/// An entry without a reason is reported in `errors`.
std::map<std::string, std::string> LoadCaseList(const std::string& path,
                                                std::vector<std::string>* errors) {
  std::map<std::string, std::string> known;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    size_t hash = text.find('#');
    absl::string_view name = absl::StripAsciiWhitespace(text.substr(0, hash));
    absl::string_view reason =
        hash == absl::string_view::npos ? "" : absl::StripAsciiWhitespace(text.substr(hash + 1));
    if (reason.empty()) {
      errors->push_back(absl::StrCat(fs::path(path).filename().string(), ": ", name,
                                     ": give a reason after '#'"));
    }
    known[std::string(name)] = std::string(reason);
  }
  return known;
}

TEST(Conformance, OnnxBackendTestData) {
  // Every kernel output starts as 0xff bytes (NaN for floats), so a kernel that relies on
  // zeroed outputs fails here (backend_cpu/evaluator.cc, BufferPool).
  setenv("QCC_EVAL_POISON", "1", /*overwrite=*/1);
  const fs::path root = QCC_ONNX_TESTDATA_DIR;
  ASSERT_TRUE(fs::is_directory(root / "node"))
      << "ONNX test data not found at " << root << ": install libonnx-testdata (scripts/setup)";
  const char* filter_env = std::getenv("QCC_CONFORMANCE_FILTER");
  const std::string filter = filter_env != nullptr ? filter_env : "";
  std::vector<std::string> list_errors;
  const std::string lists = std::string(QCC_SOURCE_DIR) + "/tests/conformance/";
  const std::map<std::string, std::string> known =
      LoadCaseList(lists + "known_failures.txt", &list_errors);
  const std::map<std::string, std::string> pinned_unsupported =
      LoadCaseList(lists + "unsupported.txt", &list_errors);
  std::map<std::string, std::string> now_unsupported;  // this run's, for the list writer
  constexpr int kCrashSignals[] = {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL};
  for (int sig : kCrashSignals) std::signal(sig, OnCrash);

  const auto start = std::chrono::steady_clock::now();
  int passed = 0;
  std::vector<std::string> failed, unexpected;
  std::map<std::string, int> unsupported_ops;
  std::map<std::string, std::string> example;  // op -> "case: message"
  int unsupported = 0;
  std::set<std::string> seen;
  for (const char* suite : kSuites) {
    for (const fs::path& dir : SubDirs(root / suite, "test_")) {
      const std::string name = absl::StrCat(suite, "/", dir.filename().string());
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      seen.insert(name);
      snprintf(g_current_case, sizeof(g_current_case), "%s", name.c_str());
      CaseResult r = RunCase(dir);
      auto it = known.find(name);
      const bool pinned = pinned_unsupported.count(name) > 0;
      switch (r.outcome) {
        case Outcome::kPassed:
          ++passed;
          if (it != known.end())
            unexpected.push_back(name + ": now passes, remove from known_failures");
          if (pinned) {
            unexpected.push_back(name + ": now passes, remove it from unsupported.txt");
          }
          break;
        case Outcome::kUnsupported:
          ++unsupported;
          for (const std::string& op : r.unsupported) {
            ++unsupported_ops[op];
            example.emplace(op, absl::StrCat(name, ": ", r.reason.substr(0, 160)));
          }
          now_unsupported[name] = absl::StrJoin(r.unsupported, ", ");
          if (it != known.end()) {
            unexpected.push_back(name +
                                 ": now unsupported, not failing; remove from known_failures");
          }
          if (!pinned) {
            unexpected.push_back(absl::StrCat(
                name, ": unsupported (", now_unsupported[name], ") but not in unsupported.txt: a ",
                "case that passed stopped passing, or a new case; fix it or list it"));
          }
          break;
        case Outcome::kFailed:
          failed.push_back(absl::StrCat(name, ": ", r.reason.substr(0, 300),
                                        it != known.end() ? "  [known: " + it->second + "]" : ""));
          if (it == known.end()) unexpected.push_back(failed.back());
          if (pinned) unexpected.push_back(name + ": fails now, no longer unsupported");
          break;
      }
    }
  }
  for (int sig : kCrashSignals) std::signal(sig, SIG_DFL);
  for (const auto& [name, reason] : known) {
    if (seen.count(name) == 0 && filter.empty()) {
      list_errors.push_back(name + ": no such case, remove from known_failures");
    }
  }
  for (const auto& [name, reason] : pinned_unsupported) {
    if (seen.count(name) == 0 && filter.empty()) {
      list_errors.push_back(name + ": no such case, remove from unsupported.txt");
    }
  }
  if (const char* out = std::getenv("QCC_CONFORMANCE_WRITE_UNSUPPORTED")) {
    std::ofstream list(out);
    list << "# ONNX conformance cases qcc does not support yet, one per line: \"<suite>/<case>  #"
            " what is missing\".\n# Written by QCC_CONFORMANCE_WRITE_UNSUPPORTED=<file> "
            "build/tests/conformance_test; the test fails\n# when a case not listed here is "
            "unsupported and when a listed one passes (then remove it).\n";
    for (const auto& [name, ops] : now_unsupported) list << name << "  # " << ops << "\n";
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<std::pair<std::string, int>> by_count(unsupported_ops.begin(), unsupported_ops.end());
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  printf("onnx conformance: %d passed, %zu failed, %d unsupported (%.1f s)\n", passed,
         failed.size(), unsupported, seconds);
  if (!by_count.empty()) printf("unsupported op types (cases; '(mode)': known op, dtype/attr):\n");
  for (const auto& [op, count] : by_count) {
    printf("  %-36s %4d   e.g. %s\n", op.c_str(), count, example[op].c_str());
  }
  if (!failed.empty()) printf("failed cases:\n");
  for (const std::string& f : failed) printf("  %s\n", f.c_str());
  fflush(stdout);

  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected results:\n  "
                                  << absl::StrJoin(unexpected, "\n  ");
  EXPECT_TRUE(list_errors.empty())
      << "known_failures.txt:\n  " << absl::StrJoin(list_errors, "\n  ");
  if (filter.empty()) {
    EXPECT_GE(passed, kMinPassed) << "fewer ONNX conformance cases pass than the bar";
  }
}

}  // namespace
}  // namespace qcc
