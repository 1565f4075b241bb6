// Test helpers for the qcc command line: run the built binary, capture stdout, stderr and the
// exit code, and give each test a scratch folder.
#ifndef QCC_TESTS_TOOLS_QCC_RUNNER_H_
#define QCC_TESTS_TOOLS_QCC_RUNNER_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace qcc::testing {

/// What a qcc invocation did.
struct QccResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// The path of the qcc binary of this build.
inline std::string QccBinary() { return std::string(QCC_BINARY_DIR) + "/bin/qcc"; }

/// The shared model folder `name` (e.g. "mnist-8").
inline std::string SharedModelDir(const std::string& name) {
  return std::string(QCC_SHARED_DIR) + "/models/" + name;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Lines of `text` (without the newline characters).
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

/// A test fixture with a fresh scratch folder and a way to run qcc with arguments.
class QccTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("qcc_tools_") + info->test_suite_name() + "_" + info->name() + "_" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(std::filesystem::exists(QccBinary()))
        << QccBinary() << " is missing: build the qcc target";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::string WriteBytes(const std::string& name, const std::string& bytes) const {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  /// Runs qcc with `args` (each passed as one argument), stdin from /dev/null.
  QccResult Qcc(const std::vector<std::string>& args) const {
    std::string cmd = ShellQuote(QccBinary());
    for (const std::string& a : args) cmd += " " + ShellQuote(a);
    const std::string out = Path(".stdout");
    const std::string err = Path(".stderr");
    cmd += " </dev/null >" + ShellQuote(out) + " 2>" + ShellQuote(err);
    QccResult r;
    const int status = std::system(cmd.c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadWholeFile(out);
    r.err = ReadWholeFile(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
  }

  /// Files in the scratch folder's subfolder `sub` (names only).
  std::vector<std::string> FilesIn(const std::string& sub) const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / sub, ec)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

  std::filesystem::path dir_;
};

/// Expects a failed run: exit code `code` and exactly one stderr line
/// "qcc: error: ..." containing every string of `mentions`.
inline void ExpectOneLineError(const QccResult& r, const std::vector<std::string>& mentions,
                               int code = 1) {
  EXPECT_EQ(r.exit_code, code) << "stdout: " << r.out << "\nstderr: " << r.err;
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("qcc: error: ", 0), 0u) << lines[0];
  for (const std::string& m : mentions) {
    EXPECT_NE(lines[0].find(m), std::string::npos) << "'" << m << "' not in: " << lines[0];
  }
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_TOOLS_QCC_RUNNER_H_
