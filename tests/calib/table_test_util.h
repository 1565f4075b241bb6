// Helpers of the calibration table tests: tables over known data, temporary files.
#ifndef QCC_TESTS_CALIB_TABLE_TEST_UTIL_H_
#define QCC_TESTS_CALIB_TABLE_TEST_UTIL_H_

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "calib/calib_table.h"
#include "gtest/gtest.h"

namespace qcc::testing {

/// `n` values of tensor `t` for sample `sample`: Gaussian, ReLU'd for odd tensors, with a NaN in
/// sample 3 of tensor 2; tensor 3 is always zero.
inline std::vector<float> SampleValues(int t, int sample, int n = 300) {
  std::mt19937 rng(1000 * t + sample);
  std::normal_distribution<float> dist(0.0f, 1.0f + t);
  std::vector<float> xs(n);
  for (float& x : xs) {
    x = dist(rng);
    if (t % 2 == 1) x = std::max(x, 0.0f);
    if (t == 3) x = 0.0f;
  }
  if (t == 2 && sample == 3) xs[7] = std::numeric_limits<float>::quiet_NaN();
  return xs;
}

inline const char* TensorName(int t) {
  static const char* const kNames[] = {"conv1/out", "relu \"1\"", "gemm:0", "zeros", "Ünïcode"};
  return kNames[t];
}

/// A table over samples [first, last) taking those with s % shard_count in `shards`.
inline calib::CalibTable MakeTable(int first, int last, int shard_count = 1,
                                   std::vector<int> shards = {0}) {
  calib::CalibTable table;
  table.fingerprint = "0123456789abcdef";
  table.qcc_version = "0.1.0";
  table.preprocessing = R"({"resize": 32, "mean": [0.49, 0.48, 0.45], "layout": "nchw"})";
  table.settings.batch = 4;
  table.settings.shard_count = shard_count;
  table.settings.shards = shards;
  for (int s = first; s < last; ++s) {
    if (std::find(shards.begin(), shards.end(), s % shard_count) == shards.end()) continue;
    ++table.samples;
    for (int t = 0; t < 5; ++t) {
      const std::vector<float> xs = SampleValues(t, s);
      table.tensors[TensorName(t)].Add(xs.data(), static_cast<int64_t>(xs.size()));
    }
  }
  return table;
}

/// A fresh path under the test's temporary folder.
inline std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/qcc_calib_", getpid(), "_", name);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_CALIB_TABLE_TEST_UTIL_H_
