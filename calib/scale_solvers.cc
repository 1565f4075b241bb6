#include "calib/scale_solvers.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace qcc::calib {
namespace {

constexpr int kQuantizedBins = 128;  // int8 symmetric: 128 levels for |x|

// A warning for degenerate data (no finite value, all zero, constant), or nullopt.
std::optional<std::string> DegenerateReason(const TensorStats& s) {
  if (!s.has_finite()) return std::string("no finite value was observed");
  if (s.abs_max() == 0.0f) return std::string("every value is zero");
  if (s.min() == s.max()) return absl::StrCat("constant value ", s.min());
  return std::nullopt;
}

std::string NonFiniteNote(const TensorStats& s) {
  if (s.nan_count() + s.posinf_count() + s.neginf_count() == 0) return "";
  return absl::StrCat(s.nan_count(), " NaN, ", s.posinf_count(), " +inf and ", s.neginf_count(),
                      " -inf values were ignored");
}

std::string JoinWarnings(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return absl::StrCat(a, "; ", b);
}

// The value below which `fraction` of the histogram mass `h` lies (bins of width w from `origin`),
// interpolating linearly inside the bin where the fraction is reached.
double Quantile(const std::vector<int64_t>& h, double origin, double w, double fraction) {
  int64_t total = 0;
  for (int64_t c : h) total += c;
  const double target = fraction * static_cast<double>(total);
  double cum = 0.0;
  for (size_t b = 0; b < h.size(); ++b) {
    if (h[b] == 0) continue;
    if (cum + static_cast<double>(h[b]) >= target) {
      const double frac = std::clamp((target - cum) / static_cast<double>(h[b]), 0.0, 1.0);
      return origin + (static_cast<double>(b) + frac) * w;
    }
    cum += static_cast<double>(h[b]);
  }
  return origin + static_cast<double>(h.size()) * w;
}

// ORT's smooth_distribution: zeros become eps, non-zeros give that mass back, so KL stays finite.
// Returns false when every entry is zero.
bool Smooth(std::vector<double>* p) {
  constexpr double kEps = 1e-4;
  int zeros = 0;
  for (double v : *p) zeros += (v == 0.0);
  const int nonzeros = static_cast<int>(p->size()) - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = kEps * zeros / nonzeros;
  for (double& v : *p) v = v == 0.0 ? kEps : std::max(v - eps1, kEps * 1e-3);
  return true;
}

// KL(p || q) of two unnormalized positive distributions.
double KlDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0.0, sq = 0.0;
  for (size_t j = 0; j < p.size(); ++j) {
    sp += p[j];
    sq += q[j];
  }
  double kl = 0.0;
  for (size_t j = 0; j < p.size(); ++j) {
    const double pn = p[j] / sp, qn = q[j] / sq;
    kl += pn * std::log(pn / qn);
  }
  return kl;
}

// TensorRT's entropy calibration (GTC 2017, "8-bit inference with TensorRT"; ONNX Runtime's
// get_entropy_threshold is the signed-histogram twin) over the |x| histogram h of n used bins:
// for every window of i >= 128 bins, P = h[0, i) with the outliers h[i, n) added to its last bin;
// Q = h[0, i) merged into 128 levels of i/128 bins (the last level also takes the i % 128
// remainder bins), each level's count spread evenly over the bins where P is non-zero; both are
// smoothed as ORT does, and the window minimising KL(P || Q) gives the threshold i * w (ORT's
// edge).
// The first bin takes the count of the second before the search, as NVIDIA's
// pytorch-quantization does for TensorRT-style calibration: after a ReLU most values are exactly
// 0, and that spike, smeared over its level whenever a level merges several bins, would dominate
// KL and always pick the widest window of one bin per level (255 bins), clipping most of the
// range (on resnet20 that cost 18 points of top-1).
constexpr double kMaxEntropyClip = 0.01;

double EntropyThreshold(std::vector<int64_t> h, int n, double w) {
  if (n <= kQuantizedBins) return n * w;
  if (n > 1) h[0] = h[1];
  std::vector<double> suffix(n + 1, 0.0);
  for (int j = n - 1; j >= 0; --j) suffix[j] = suffix[j + 1] + static_cast<double>(h[j]);
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = n;
  std::vector<double> p, q;
  const double total = suffix[0];
  for (int i = kQuantizedBins; i <= n; ++i) {
    // A window that clips more than kMaxEntropyClip of the values is no candidate: when the
    // clipped mass dominates, P collapses onto its last bin, which a Q built from a few
    // in-window bins matches exactly (KL 0) however much is thrown away (a HardSigmoid output
    // in [0.16, 0.97] got 0.165).
    if (suffix[i] > kMaxEntropyClip * total) continue;
    p.assign(h.begin(), h.begin() + i);
    p[i - 1] += suffix[i];
    q.assign(i, 0.0);
    const int merged = i / kQuantizedBins;
    for (int k = 0; k < kQuantizedBins; ++k) {
      const int start = k * merged;
      const int end = k == kQuantizedBins - 1 ? i : start + merged;
      double level = 0.0;
      int nonzero = 0;
      for (int j = start; j < end; ++j) {
        level += static_cast<double>(h[j]);
        nonzero += (p[j] != 0.0);
      }
      if (nonzero == 0) continue;
      for (int j = start; j < end; ++j) q[j] = p[j] != 0.0 ? level / nonzero : 0.0;
    }
    if (!Smooth(&p) || !Smooth(&q)) continue;
    const double kl = KlDivergence(p, q);
    if (kl < best_kl) {
      best_kl = kl;
      best_i = i;
    }
  }
  return best_i * w;
}

inline double Cube(double x) { return x * x * x; }

// Integral over [0, x] of the squared rounding error to the grid delta * Z:
// floor(x / delta) full periods of delta^3 / 12, plus the partial period u = x mod delta where the
// error is t for t < delta / 2 and t - delta above.
double RoundingErrorIntegral(double x, double delta) {
  const double periods = std::floor(x / delta);
  const double u = x - periods * delta, half = delta / 2;
  double g = Cube(std::min(u, half)) / 3;
  if (u > half) g += (Cube(u - delta) + Cube(half)) / 3;
  return periods * delta * delta * delta / 12 + g;
}

// The threshold T = k * w (k = 1..n) minimising the expected squared error of symmetric int8
// quantization with step T / 127, values uniform inside each |x| bin: a bin [a, b) below T costs
// its mean rounding error, a bin above T its mean clipping error (x - T)^2.
double MseThreshold(const std::vector<int64_t>& h, int n, double w) {
  double best_err = std::numeric_limits<double>::infinity();
  int best_k = n;
  for (int k = 1; k <= n; ++k) {
    const double t = k * w, delta = t / 127.0;
    double err = 0.0;
    double prev = 0.0;  // RoundingErrorIntegral at the bin's lower edge
    for (int j = 0; j < n; ++j) {
      const double a = j * w, b = a + w;
      double e;
      if (j < k) {
        const double next = RoundingErrorIntegral(b, delta);
        e = (next - prev) / w;
        prev = next;
      } else {
        e = (Cube(b - t) - Cube(a - t)) / (3 * w);
      }
      err += static_cast<double>(h[j]) * e;
    }
    if (err < best_err) {
      best_err = err;
      best_k = k;
    }
  }
  return best_k * w;
}

// The threshold a histogram method picks, in [w, max |x|] (minmax: max |x|).
double SymmetricThreshold(const TensorStats& s, const CalibMethodSpec& spec) {
  const double amax = s.abs_max();
  if (spec.method == CalibMethod::kMinMax) return amax;
  const std::vector<int64_t> h = s.AbsHistogram();
  const double w = s.bin_width();
  int n = static_cast<int>(h.size());
  while (n > 0 && h[n - 1] == 0) --n;
  double t = amax;
  switch (spec.method) {
    case CalibMethod::kMinMax:
      break;
    case CalibMethod::kPercentile:
      t = Quantile(h, 0.0, w, spec.percentile / 100.0);
      break;
    case CalibMethod::kEntropy:
      t = EntropyThreshold(h, n, w);
      break;
    case CalibMethod::kMse:
      t = MseThreshold(h, n, w);
      break;
  }
  return std::clamp(t, std::min(w, amax), amax);
}

}  // namespace

absl::StatusOr<CalibMethodSpec> ParseCalibMethod(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(text);
  CalibMethodSpec spec;
  if (t == "minmax") {
    spec.method = CalibMethod::kMinMax;
  } else if (t == "entropy") {
    spec.method = CalibMethod::kEntropy;
  } else if (t == "mse") {
    spec.method = CalibMethod::kMse;
  } else if (t == "percentile") {
    spec.method = CalibMethod::kPercentile;
  } else if (absl::StartsWith(t, "percentile=")) {
    spec.method = CalibMethod::kPercentile;
    const std::string value = t.substr(11);
    if (!absl::SimpleAtod(value, &spec.percentile) || !(spec.percentile > 0.0) ||
        !(spec.percentile <= 100.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad calibration method '", text, "': the percentile must be a number in (0, 100]"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown calibration method '", text,
                     "': expected minmax, entropy, mse, percentile or percentile=P"));
  }
  return spec;
}

std::string CalibMethodName(const CalibMethodSpec& spec) {
  switch (spec.method) {
    case CalibMethod::kMinMax:
      return "minmax";
    case CalibMethod::kEntropy:
      return "entropy";
    case CalibMethod::kMse:
      return "mse";
    case CalibMethod::kPercentile:
      return absl::StrCat("percentile=", spec.percentile);
  }
  return "entropy";
}

SymmetricRange SolveSymmetric(const TensorStats& stats, const CalibMethodSpec& spec) {
  SymmetricRange r;
  const std::string note = NonFiniteNote(stats);
  if (std::optional<std::string> reason = DegenerateReason(stats)) {
    r.degenerate = true;
    r.amax = stats.abs_max() > 0.0f ? stats.abs_max() : 1.0f;
    r.warning = JoinWarnings(*reason, note);
    return r;
  }
  r.amax = static_cast<float>(SymmetricThreshold(stats, spec));
  r.warning = note;
  return r;
}

AsymmetricRange SolveAsymmetric(const TensorStats& stats, const CalibMethodSpec& spec) {
  AsymmetricRange r;
  const std::string note = NonFiniteNote(stats);
  if (std::optional<std::string> reason = DegenerateReason(stats)) {
    r.degenerate = true;
    if (stats.abs_max() > 0.0f) {
      r.lo = std::min(stats.min(), 0.0f);
      r.hi = std::max(stats.max(), 0.0f);
    }
    r.warning = JoinWarnings(*reason, note);
    return r;
  }
  const double mn = stats.min(), mx = stats.max(), w = stats.bin_width();
  double lo = mn, hi = mx;
  if (spec.method == CalibMethod::kPercentile) {
    const double q = spec.percentile / 100.0;
    lo = Quantile(stats.bins(), -stats.range(), w, 1.0 - q);
    hi = Quantile(stats.bins(), -stats.range(), w, q);
  } else if (spec.method != CalibMethod::kMinMax) {
    const double t = SymmetricThreshold(stats, spec);
    lo = -t;
    hi = t;
  }
  lo = std::min(std::max(lo, mn), 0.0);
  hi = std::max(std::min(hi, mx), 0.0);
  // At least one bin wide, on the side where the data is (min < max, so one side has room).
  if (hi - lo < w) {
    if (mx > 0) hi = std::max(hi, std::min(mx, lo + w));
    if (hi - lo < w && mn < 0) lo = std::min(lo, std::max(mn, hi - w));
  }
  r.lo = static_cast<float>(lo);
  r.hi = static_cast<float>(hi);
  r.warning = note;
  return r;
}

}  // namespace qcc::calib
