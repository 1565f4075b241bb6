#include "calib/calib_table.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/fingerprint.h"
#include "support/status.h"

namespace qcc::calib {
namespace {

using nlohmann::json;

// Shortest text that reads back to the same value.
template <typename T>
std::string ShortestNumber(T v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

// A JSON string literal; InvalidArgument for text that is not UTF-8.
absl::StatusOr<std::string> Quote(const std::string& s) {
  try {
    return json(s).dump();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write the calibration table: name '", s, "' is not valid UTF-8"));
  }
}

// [[first, c, c, ...], ...]: runs of consecutive non-zero bins.
std::string HistogramRuns(const std::vector<int64_t>& bins) {
  std::string s = "[";
  bool first_run = true;
  for (size_t b = 0; b < bins.size();) {
    if (bins[b] == 0) {
      ++b;
      continue;
    }
    absl::StrAppend(&s, first_run ? "" : ",", "[", b);
    first_run = false;
    for (; b < bins.size() && bins[b] != 0; ++b) absl::StrAppend(&s, ",", bins[b]);
    s += "]";
  }
  return s + "]";
}

std::string TensorLine(const TensorStats& t) {
  const bool finite = t.has_finite();
  return absl::StrCat("{\"min\":", finite ? ShortestNumber(t.min()) : "null",
                      ",\"max\":", finite ? ShortestNumber(t.max()) : "null",
                      ",\"count\":", t.count(), ",\"nan\":", t.nan_count(),
                      ",\"posinf\":", t.posinf_count(), ",\"neginf\":", t.neginf_count(),
                      ",\"range\":", ShortestNumber(t.range()),
                      ",\"hist\":", HistogramRuns(t.bins()), "}");
}

}  // namespace

std::string ShardToString(const CalibSettings& settings) {
  return absl::StrCat(absl::StrJoin(settings.shards, ","), "/", settings.shard_count);
}

absl::StatusOr<std::string> CalibTableToJson(const CalibTable& table) {
  json pre;
  try {
    pre = json::parse(table.preprocessing);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("the preprocessing given for the calibration table is not valid JSON (",
                     e.what(), "): ", table.preprocessing));
  }
  if (!pre.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the preprocessing given for the calibration table is not a JSON object: ",
                     table.preprocessing));
  }
  std::string pre_text;
  try {
    pre_text = pre.dump();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("the preprocessing of the calibration table is not valid UTF-8"));
  }
  const CalibSettings& st = table.settings;
  std::string out = "{\n";
  absl::StrAppend(&out, " \"format\": \"", kCalibTableFormat, "\",\n");
  absl::StrAppend(&out, " \"version\": ", kCalibTableVersion, ",\n");
  const std::pair<const char*, const std::string*> strings[] = {
      {"fingerprint", &table.fingerprint}, {"qcc_version", &table.qcc_version}};
  for (const auto& [key, value] : strings) {
    QCC_ASSIGN_OR_RETURN(std::string quoted, Quote(*value));
    absl::StrAppend(&out, " \"", key, "\": ", quoted, ",\n");
  }
  absl::StrAppend(&out, " \"preprocessing\": ", pre_text, ",\n");
  QCC_ASSIGN_OR_RETURN(std::string method, Quote(st.method));
  absl::StrAppend(&out, " \"settings\": {\"batch\":", st.batch, ",\"max_samples\":", st.max_samples,
                  ",\"method\":", method, ",\"shard\":\"", ShardToString(st), "\"},\n");
  absl::StrAppend(&out, " \"samples\": ", table.samples, ",\n");
  absl::StrAppend(&out, " \"bins\": ", TensorStats::kBins, ",\n");
  out += " \"tensors\": {";
  bool first = true;
  for (const auto& [name, stats] : table.tensors) {
    QCC_ASSIGN_OR_RETURN(std::string key, Quote(name));
    absl::StrAppend(&out, first ? "\n  " : ",\n  ", key, ": ", TensorLine(stats));
    first = false;
  }
  out += first ? "}\n}\n" : "\n }\n}\n";
  return out;
}

absl::Status WriteCalibTable(const std::string& path, const CalibTable& table) {
  QCC_ASSIGN_OR_RETURN(std::string text, CalibTableToJson(table));
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  auto fail = [&](absl::string_view what) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("cannot write calibration table ", path, ": ",
                                                   what, ": ", std::strerror(err)));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write calibration table ", path, ": ", std::strerror(errno)));
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
                     std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (std::fclose(f) != 0 || !wrote) return fail("writing failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename failed");
  return absl::OkStatus();
}

absl::StatusOr<CalibTable> ReadCalibTable(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    const std::string msg = absl::StrCat("cannot read calibration table ", path, ": ",
                                         std::strerror(err), " (run qcc calibrate to make one)");
    return err == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
  }
  std::string text;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, got);
  const bool read_error = std::ferror(f) != 0;
  std::fclose(f);
  if (read_error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read calibration table ", path, ": read error"));
  }
  return CalibTableFromJson(text, path);
}

absl::StatusOr<CalibTable> MergeCalibTables(const CalibTable& a, const CalibTable& b) {
  const std::string names = absl::StrCat(a.source.empty() ? "(first table)" : a.source, " and ",
                                         b.source.empty() ? "(second table)" : b.source);
  if (a.fingerprint != b.fingerprint) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot merge calibration tables ", names, ": they were made for different models ",
        "(fingerprints ", a.fingerprint, " and ", b.fingerprint, ")"));
  }
  if (a.preprocessing != b.preprocessing) {
    return absl::InvalidArgumentError(absl::StrCat("cannot merge calibration tables ", names,
                                                   ": their preprocessing differs (",
                                                   a.preprocessing, " vs ", b.preprocessing, ")"));
  }
  const CalibSettings &sa = a.settings, &sb = b.settings;
  if (sa.shard_count != sb.shard_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot merge calibration tables ", names, ": shards ", ShardToString(sa),
                     " and ", ShardToString(sb), " come from different --shard splits"));
  }
  std::vector<int> shards = sa.shards;
  for (int s : sb.shards) {
    if (sa.shard_count > 1 && std::find(sa.shards.begin(), sa.shards.end(), s) != sa.shards.end()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot merge calibration tables ", names,
                                                     ": both hold shard ", s, "/", sa.shard_count,
                                                     ", so its samples would count twice"));
    }
    shards.push_back(s);
  }
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  CalibTable out = a;
  out.source.clear();
  out.samples = a.samples + b.samples;
  out.settings.shards = shards;
  if (static_cast<int>(shards.size()) == sa.shard_count) {
    out.settings.shard_count = 1;  // every shard: the same as one run over all samples
    out.settings.shards = {0};
  }
  for (const auto& [name, stats] : b.tensors) out.tensors[name].Merge(stats);
  return out;
}

absl::Status CheckFingerprint(const CalibTable& table, const ir::Graph& graph) {
  const std::string fp = ir::Fingerprint(graph);
  if (fp == table.fingerprint) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("calibration table ", table.source.empty() ? "(in memory)" : table.source,
                   " was made for another model (fingerprint ", table.fingerprint, ", this model ",
                   fp, "): run qcc calibrate again"));
}

}  // namespace qcc::calib
