// Reading and checking a calibration table (the format is described in calib_table.h).
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "calib/calib_table.h"
#include "calib/scale_solvers.h"
#include "support/status.h"

namespace qcc::calib {
namespace {

using nlohmann::json;

// Errors that name the table and the place in it.
class Reader {
 public:
  explicit Reader(absl::string_view source) : source_(source) {}

  absl::Status Error(absl::string_view where, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration table ", source_, ": ", where, where.empty() ? "" : ": ", what));
  }

  absl::StatusOr<const json*> Field(const json& obj, const char* key,
                                    absl::string_view where) const {
    auto it = obj.find(key);
    if (it == obj.end()) return Error(where, absl::StrCat("missing field \"", key, "\""));
    return &*it;
  }

  absl::StatusOr<int64_t> Int(const json& obj, const char* key, absl::string_view where) const {
    QCC_ASSIGN_OR_RETURN(const json* v, Field(obj, key, where));
    if (!v->is_number_integer() ||
        (v->is_number_unsigned() &&
         v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      return Error(where, absl::StrCat("\"", key, "\" must be an integer, not ", v->dump()));
    }
    return v->get<int64_t>();
  }

  absl::StatusOr<int64_t> Count(const json& obj, const char* key, absl::string_view where) const {
    QCC_ASSIGN_OR_RETURN(int64_t v, Int(obj, key, where));
    if (v < 0) return Error(where, absl::StrCat("\"", key, "\" is negative (", v, ")"));
    return v;
  }

  absl::StatusOr<std::string> String(const json& obj, const char* key,
                                     absl::string_view where) const {
    QCC_ASSIGN_OR_RETURN(const json* v, Field(obj, key, where));
    if (!v->is_string()) {
      return Error(where, absl::StrCat("\"", key, "\" must be a string, not ", v->dump()));
    }
    return v->get<std::string>();
  }

  // A float field; NaN when null (FromParts accepts that only for a tensor with no finite value).
  absl::StatusOr<float> Float(const json& obj, const char* key, absl::string_view where) const {
    QCC_ASSIGN_OR_RETURN(const json* v, Field(obj, key, where));
    if (v->is_null()) return std::numeric_limits<float>::quiet_NaN();
    if (!v->is_number()) {
      return Error(where, absl::StrCat("\"", key, "\" must be a number, not ", v->dump()));
    }
    return static_cast<float>(v->get<double>());
  }

  absl::StatusOr<CalibSettings> Settings(const json& root) const {
    QCC_ASSIGN_OR_RETURN(const json* s, Field(root, "settings", ""));
    const std::string where = "settings";
    if (!s->is_object()) return Error(where, "must be an object");
    CalibSettings st;
    QCC_ASSIGN_OR_RETURN(st.method, String(*s, "method", where));
    if (absl::Status ok = ParseCalibMethod(st.method).status(); !ok.ok()) {
      return Error(where, ok.message());
    }
    QCC_ASSIGN_OR_RETURN(st.batch, Count(*s, "batch", where));
    QCC_ASSIGN_OR_RETURN(st.max_samples, Count(*s, "max_samples", where));
    QCC_ASSIGN_OR_RETURN(std::string shard, String(*s, "shard", where));
    const std::vector<std::string> parts = absl::StrSplit(shard, '/');
    const absl::Status bad_shard = Error(
        where, absl::StrCat("\"shard\" \"", shard, "\" is not i/N or i,j,.../N with 0 <= i < N"));
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &st.shard_count) || st.shard_count < 1) {
      return bad_shard;
    }
    st.shards.clear();
    for (absl::string_view p : absl::StrSplit(parts[0], ',')) {
      int i = 0;
      if (!absl::SimpleAtoi(p, &i) || i < 0 || i >= st.shard_count ||
          (!st.shards.empty() && i <= st.shards.back())) {
        return bad_shard;
      }
      st.shards.push_back(i);
    }
    return st;
  }

  // "hist": runs [first, c, c, ...] -> kBins counts.
  absl::StatusOr<std::vector<int64_t>> Histogram(const json& t, const std::string& where) const {
    QCC_ASSIGN_OR_RETURN(const json* h, Field(t, "hist", where));
    if (!h->is_array()) return Error(where, "\"hist\" must be an array of runs");
    std::vector<int64_t> bins(TensorStats::kBins, 0);
    int64_t next_free = 0;
    for (size_t r = 0; r < h->size(); ++r) {
      const json& run = (*h)[r];
      const std::string at = absl::StrCat(where, ": \"hist\" run ", r);
      if (!run.is_array() || run.size() < 2) {
        return Error(at, "must be [first bin, count, ...]");
      }
      for (const json& v : run) {
        if (!v.is_number_integer())
          return Error(at, absl::StrCat("holds a non-integer ", v.dump()));
      }
      const int64_t first = run[0].get<int64_t>();
      const int64_t n = static_cast<int64_t>(run.size()) - 1;
      if (first < next_free || first > TensorStats::kBins - n) {
        return Error(at, absl::StrCat("covers bins ", first, " to ", first + n - 1,
                                      ": runs must be ascending, disjoint, within 0 to ",
                                      TensorStats::kBins - 1));
      }
      for (int64_t k = 0; k < n; ++k) {
        const json& c = run[k + 1];
        if (c.is_number_unsigned() && c.get<uint64_t>() > (uint64_t{1} << 62)) {
          return Error(at, absl::StrCat("bin ", first + k, " count ", c.dump(), " is too large"));
        }
        const int64_t v = c.get<int64_t>();
        if (v < 0) return Error(at, absl::StrCat("bin ", first + k, " has negative count ", v));
        bins[first + k] = v;
      }
      next_free = first + n;
    }
    return bins;
  }

  absl::StatusOr<TensorStats> Tensor(const std::string& name, const json& t) const {
    const std::string where = absl::StrCat("tensor '", name, "'");
    if (!t.is_object()) return Error(where, "must be an object");
    QCC_ASSIGN_OR_RETURN(float mn, Float(t, "min", where));
    QCC_ASSIGN_OR_RETURN(float mx, Float(t, "max", where));
    QCC_ASSIGN_OR_RETURN(int64_t count, Count(t, "count", where));
    QCC_ASSIGN_OR_RETURN(int64_t nan, Count(t, "nan", where));
    QCC_ASSIGN_OR_RETURN(int64_t posinf, Count(t, "posinf", where));
    QCC_ASSIGN_OR_RETURN(int64_t neginf, Count(t, "neginf", where));
    QCC_ASSIGN_OR_RETURN(const json* range, Field(t, "range", where));
    if (!range->is_number()) return Error(where, "\"range\" must be a number");
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> bins, Histogram(t, where));
    absl::StatusOr<TensorStats> stats = TensorStats::FromParts(
        mn, mx, count, nan, posinf, neginf, range->get<double>(), std::move(bins));
    if (!stats.ok()) return Error(where, stats.status().message());
    return stats;
  }

 private:
  std::string source_;
};

}  // namespace

absl::StatusOr<CalibTable> CalibTableFromJson(absl::string_view text, absl::string_view source) {
  Reader r(source);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return r.Error("", absl::StrCat("not valid JSON at byte ", e.byte, " of ", text.size(),
                                    " (truncated or corrupt?): ", e.what()));
  } catch (const json::exception& e) {  // e.g. a number beyond double's range: 1e440
    return r.Error("", absl::StrCat("not a valid table (corrupt?): ", e.what()));
  }
  if (!root.is_object() || !root.contains("format") ||
      root["format"] != std::string(kCalibTableFormat)) {
    return r.Error("", absl::StrCat("not a qcc calibration table (expected \"format\": \"",
                                    kCalibTableFormat, "\")"));
  }
  QCC_ASSIGN_OR_RETURN(int64_t version, r.Int(root, "version", ""));
  if (version != kCalibTableVersion) {
    return r.Error(
        "", absl::StrCat("format version ", version, " is not supported (this qcc ",
                         "reads version ", kCalibTableVersion, "): run qcc calibrate again"));
  }
  QCC_ASSIGN_OR_RETURN(int64_t bins, r.Int(root, "bins", ""));
  if (bins != TensorStats::kBins) {
    return r.Error("", absl::StrCat("histograms of ", bins, " bins are not supported (expected ",
                                    TensorStats::kBins, ")"));
  }
  CalibTable table;
  table.source = std::string(source);
  QCC_ASSIGN_OR_RETURN(table.fingerprint, r.String(root, "fingerprint", ""));
  QCC_ASSIGN_OR_RETURN(table.qcc_version, r.String(root, "qcc_version", ""));
  QCC_ASSIGN_OR_RETURN(const json* pre, r.Field(root, "preprocessing", ""));
  if (!pre->is_object()) return r.Error("preprocessing", "must be a JSON object");
  table.preprocessing = pre->dump();
  QCC_ASSIGN_OR_RETURN(table.settings, r.Settings(root));
  QCC_ASSIGN_OR_RETURN(table.samples, r.Count(root, "samples", ""));
  QCC_ASSIGN_OR_RETURN(const json* tensors, r.Field(root, "tensors", ""));
  if (!tensors->is_object()) return r.Error("tensors", "must be an object");
  for (const auto& [name, t] : tensors->items()) {
    QCC_ASSIGN_OR_RETURN(TensorStats stats, r.Tensor(name, t));
    table.tensors.emplace(name, std::move(stats));
  }
  return table;
}

}  // namespace qcc::calib
