// Fresh folders for a test binary's files: under gtest's TempDir, named after the binary's pid
// and a counter, and removed with everything in them when the binary exits normally (a test that
// crashes leaves its folders behind, for a look).
#ifndef QCC_TESTS_TESTING_TEMP_DIR_H_
#define QCC_TESTS_TESTING_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace qcc::testing {

/// A new, empty folder `<TempDir>/<prefix>_<pid>_<n>`, removed at exit.
inline std::string NewTestDir(const std::string& prefix) {
  // Destroyed at exit, after the tests: removes every folder handed out.
  struct Registry {
    std::mutex mu;
    std::vector<std::string> dirs;
    int counter = 0;
    ~Registry() {
      for (const std::string& d : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    }
  };
  static Registry registry;
  std::string base = ::testing::TempDir();
  if (!base.empty() && base.back() == '/') base.pop_back();
  std::lock_guard<std::mutex> lock(registry.mu);
  const std::string dir = base + "/" + prefix + "_" + std::to_string(getpid()) + "_" +
                          std::to_string(registry.counter++);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  registry.dirs.push_back(dir);
  return dir;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_TESTING_TEMP_DIR_H_
