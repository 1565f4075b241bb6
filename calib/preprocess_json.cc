// PreprocessSpec <-> JSON, and the command-line flags that set the same fields.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "calib/preprocess.h"
#include "support/status.h"

namespace qcc::calib {
namespace {

using nlohmann::json;

absl::Status KeyError(absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("preprocessing '", key, "': ", why));
}

// A float as the JSON number with the shortest text that reads back as the same float.
json FloatJson(float v) {
  char buf[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return json(std::strtod(buf, nullptr));
}

json SizeJson(int single, int height, int width) {
  if (height > 0) return json::array({height, width});
  return json(single);
}

absl::StatusOr<int> IntFrom(const json& v, absl::string_view key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 20)) {
    return KeyError(key, "expected a non-negative integer");
  }
  return static_cast<int>(v.get<int64_t>());
}

absl::StatusOr<float> FloatFrom(const json& v, absl::string_view key) {
  if (!v.is_number()) return KeyError(key, "expected a number");
  return v.get<float>();
}

// A size: N (short side / square) or [H, W].
absl::Status SizeFrom(const json& v, absl::string_view key, int* single, int* height, int* width) {
  *single = *height = *width = 0;
  if (v.is_array()) {
    if (v.size() != 2) return KeyError(key, "expected N or [height, width]");
    QCC_ASSIGN_OR_RETURN(*height, IntFrom(v[0], key));
    QCC_ASSIGN_OR_RETURN(*width, IntFrom(v[1], key));
    return absl::OkStatus();
  }
  if (!v.is_number_integer()) return KeyError(key, "expected N or [height, width]");
  QCC_ASSIGN_OR_RETURN(*single, IntFrom(v, key));
  return absl::OkStatus();
}

// 1 or 3 numbers (one number applies to every channel).
absl::Status TripleFrom(const json& v, absl::string_view key, std::array<float, 3>* out) {
  if (v.is_number()) {
    out->fill(v.get<float>());
    return absl::OkStatus();
  }
  if (!v.is_array() || (v.size() != 1 && v.size() != 3)) {
    return KeyError(key, "expected a number or a list of 1 or 3 numbers");
  }
  for (size_t i = 0; i < 3; ++i) {
    QCC_ASSIGN_OR_RETURN((*out)[i], FloatFrom(v[v.size() == 1 ? 0 : i], key));
  }
  return absl::OkStatus();
}

absl::Status EnumFrom(const json& v, absl::string_view key, PreprocessSpec* spec) {
  const std::string text = v.is_string() ? absl::AsciiStrToLower(v.get<std::string>()) : "";
  if (key == "channel_order") {
    if (text == "rgb" || text == "bgr") {
      spec->channel_order = text == "rgb" ? ChannelOrder::kRgb : ChannelOrder::kBgr;
      return absl::OkStatus();
    }
    return KeyError(key, "expected \"rgb\" or \"bgr\"");
  }
  if (text == "nchw" || text == "nhwc") {
    spec->layout = text == "nchw" ? Layout::kNchw : Layout::kNhwc;
    return absl::OkStatus();
  }
  return KeyError(key, "expected \"nchw\" or \"nhwc\"");
}

absl::Status SetField(const std::string& key, const json& v, PreprocessSpec* spec) {
  if (key == "resize") {
    return SizeFrom(v, key, &spec->resize_short, &spec->resize_height, &spec->resize_width);
  }
  if (key == "crop") {
    int single = 0;
    QCC_RETURN_IF_ERROR(SizeFrom(v, key, &single, &spec->crop_height, &spec->crop_width));
    if (single > 0) spec->crop_height = spec->crop_width = single;
    return absl::OkStatus();
  }
  if (key == "size_multiple") {
    QCC_ASSIGN_OR_RETURN(spec->size_multiple, IntFrom(v, key));
    return absl::OkStatus();
  }
  if (key == "scale") {
    QCC_ASSIGN_OR_RETURN(spec->scale, FloatFrom(v, key));
    return absl::OkStatus();
  }
  if (key == "mean") return TripleFrom(v, key, &spec->mean);
  if (key == "std") return TripleFrom(v, key, &spec->stddev);
  if (key == "channel_order" || key == "layout") return EnumFrom(v, key, spec);
  if (key == "grayscale") {
    if (!v.is_boolean()) return KeyError(key, "expected true or false");
    spec->grayscale = v.get<bool>();
    return absl::OkStatus();
  }
  return KeyError(key,
                  "unknown key (known: resize, crop, size_multiple, scale, mean, std, "
                  "channel_order, layout, grayscale)");
}

}  // namespace

std::string PreprocessSpec::ToJson() const {
  json j;
  j["resize"] = SizeJson(resize_short, resize_height, resize_width);
  j["crop"] = SizeJson(0, crop_height, crop_width);
  j["size_multiple"] = size_multiple;
  j["scale"] = FloatJson(scale);
  j["mean"] = json::array({FloatJson(mean[0]), FloatJson(mean[1]), FloatJson(mean[2])});
  j["std"] = json::array({FloatJson(stddev[0]), FloatJson(stddev[1]), FloatJson(stddev[2])});
  j["channel_order"] = channel_order == ChannelOrder::kRgb ? "rgb" : "bgr";
  j["layout"] = layout == Layout::kNchw ? "nchw" : "nhwc";
  j["grayscale"] = grayscale;
  return j.dump(2);
}

absl::StatusOr<PreprocessSpec> PreprocessSpecFromJson(absl::string_view text) {
  json j;
  try {  // nlohmann reports the position of a syntax error only through its exception.
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("preprocessing: not valid JSON: ", e.what()));
  }
  if (!j.is_object()) return absl::InvalidArgumentError("preprocessing: expected a JSON object");
  PreprocessSpec spec;
  for (const auto& [key, value] : j.items()) {
    QCC_RETURN_IF_ERROR(SetField(key, value, &spec));
  }
  QCC_RETURN_IF_ERROR(spec.Validate());
  return spec;
}

absl::StatusOr<PreprocessSpec> PreprocessSpecFromJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open preprocessing file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<PreprocessSpec> spec = PreprocessSpecFromJson(text.str());
  if (!spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", spec.status().message()));
  }
  return spec;
}

absl::Status ApplyPreprocessFlag(absl::string_view flag, absl::string_view value,
                                 PreprocessSpec* spec) {
  const std::string key = absl::StrReplaceAll(flag, {{"-", "_"}});
  const std::string text(absl::StripAsciiWhitespace(value));
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", value, ": ", why));
  };
  json v;
  if (key == "resize" || key == "crop") {
    std::vector<std::string> parts = absl::StrSplit(absl::AsciiStrToLower(text), 'x');
    std::vector<int> sizes;
    for (const std::string& p : parts) {
      int n = 0;
      if (!absl::SimpleAtoi(p, &n) || n < 0) return bad("expected N or HxW, e.g. 224 or 48x192");
      sizes.push_back(n);
    }
    if (sizes.size() > 2) return bad("expected N or HxW, e.g. 224 or 48x192");
    v = sizes.size() == 1 ? json(sizes[0]) : json(sizes);
  } else if (key == "mean" || key == "std") {
    std::vector<float> values;
    for (absl::string_view p : absl::StrSplit(text, ',')) {
      float f = 0;
      if (!absl::SimpleAtof(p, &f)) return bad("expected numbers separated by commas");
      values.push_back(f);
    }
    v = values;
  } else if (key == "scale") {
    // A number, or a fraction such as 1/255.
    std::vector<std::string> parts = absl::StrSplit(text, '/');
    double num = 0, den = 1;
    if (parts.size() > 2 || !absl::SimpleAtod(parts[0], &num) ||
        (parts.size() == 2 && (!absl::SimpleAtod(parts[1], &den) || den == 0))) {
      return bad("expected a number or a fraction such as 1/255");
    }
    v = static_cast<float>(num / den);
  } else if (key == "size_multiple") {
    int n = 0;
    if (!absl::SimpleAtoi(text, &n)) return bad("expected an integer");
    v = n;
  } else if (key == "grayscale") {
    bool b = true;
    if (!text.empty() && !absl::SimpleAtob(text, &b)) return bad("expected true or false");
    v = b;
  } else {
    v = text;
  }
  absl::Status status = SetField(key, v, spec);
  if (!status.ok()) return bad(status.message());
  return absl::OkStatus();
}

}  // namespace qcc::calib
