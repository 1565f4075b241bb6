#include "ir/shape_fns/nn_window.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace qcc::ir {

namespace {

absl::Status CheckSize(absl::string_view name, const Ints& v, size_t want) {
  if (v.empty() || v.size() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " [", absl::StrJoin(v, ","), "] has ",
                                                 v.size(), " entries, expected ", want));
}

absl::Status CheckAtLeast(absl::string_view name, const std::vector<int64_t>& v, int64_t lo) {
  for (int64_t x : v) {
    if (x < lo) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " [", absl::StrJoin(v, ","), "] must all be >= ", lo));
    }
  }
  return absl::OkStatus();
}

/// Splits a total padding: `extra_at_end` puts the odd pixel at the end.
void SplitPadding(int64_t total, bool extra_at_end, WindowAxis& w) {
  total = std::max<int64_t>(0, total);
  w.pad_begin = extra_at_end ? total / 2 : total - total / 2;
  w.pad_end = total - w.pad_begin;
}

}  // namespace

absl::StatusOr<WindowSpec> MakeWindowSpec(int64_t spatial_rank, const Ints& kernel,
                                          const Ints& strides, const Ints& dilations,
                                          const Ints& pads, AutoPad auto_pad, bool ceil_mode) {
  const size_t r = static_cast<size_t>(spatial_rank);
  if (kernel.size() != r) {
    return absl::InvalidArgumentError(absl::StrCat("kernel_shape [", absl::StrJoin(kernel, ","),
                                                   "] has ", kernel.size(),
                                                   " entries, the input has ", r, " spatial axes"));
  }
  QCC_RETURN_IF_ERROR(CheckSize("strides", strides, r));
  QCC_RETURN_IF_ERROR(CheckSize("dilations", dilations, r));
  QCC_RETURN_IF_ERROR(CheckSize("pads", pads, 2 * r));
  WindowSpec s;
  s.auto_pad = auto_pad;
  s.ceil_mode = ceil_mode;
  s.kernel = kernel;
  s.strides = strides.empty() ? std::vector<int64_t>(r, 1) : strides;
  s.dilations = dilations.empty() ? std::vector<int64_t>(r, 1) : dilations;
  s.pads_begin.assign(r, 0);
  s.pads_end.assign(r, 0);
  if (!pads.empty()) {
    std::copy(pads.begin(), pads.begin() + r, s.pads_begin.begin());
    std::copy(pads.begin() + r, pads.end(), s.pads_end.begin());
  }
  QCC_RETURN_IF_ERROR(CheckAtLeast("kernel_shape", s.kernel, 1));
  QCC_RETURN_IF_ERROR(CheckAtLeast("strides", s.strides, 1));
  QCC_RETURN_IF_ERROR(CheckAtLeast("dilations", s.dilations, 1));
  QCC_RETURN_IF_ERROR(CheckAtLeast("pads", pads, 0));
  return s;
}

absl::StatusOr<WindowAxis> ForwardWindowAxis(const WindowSpec& spec, int64_t axis, int64_t in) {
  const int64_t s = spec.strides[axis];
  const int64_t k = spec.EffectiveKernel(axis);
  WindowAxis w;
  switch (spec.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower:
      w.out = (in + s - 1) / s;
      SplitPadding((w.out - 1) * s + k - in, spec.auto_pad == AutoPad::kSameUpper, w);
      return w;
    case AutoPad::kValid:
    case AutoPad::kNotSet: {
      if (spec.auto_pad == AutoPad::kNotSet) {
        w.pad_begin = spec.pads_begin[axis];
        w.pad_end = spec.pads_end[axis];
      }
      const int64_t span = in + w.pad_begin + w.pad_end - k;
      if (span < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spatial axis ", axis, ": the window (", k, " with dilation) is larger than the input ",
            in, " plus pads ", w.pad_begin, "+", w.pad_end));
      }
      w.out = (spec.ceil_mode ? (span + s - 1) / s : span / s) + 1;
      // ceil_mode: a last window that would start inside the end padding is dropped.
      if (spec.ceil_mode && (w.out - 1) * s >= in + w.pad_begin) --w.out;
      return w;
    }
  }
  return absl::InternalError("unknown auto_pad");
}

absl::StatusOr<WindowAxis> TransposedWindowAxis(const WindowSpec& spec, int64_t axis, int64_t in,
                                                int64_t output_padding, int64_t requested_out) {
  const int64_t s = spec.strides[axis];
  const int64_t natural = s * (in - 1) + output_padding + spec.EffectiveKernel(axis);
  WindowAxis w;
  if (requested_out >= 0) {
    w.out = requested_out;
    SplitPadding(natural - w.out, spec.auto_pad == AutoPad::kSameUpper, w);
    return w;
  }
  switch (spec.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower:
      w.out = in * s;
      SplitPadding(natural - w.out, spec.auto_pad == AutoPad::kSameUpper, w);
      return w;
    case AutoPad::kValid:
      w.out = natural;
      return w;
    case AutoPad::kNotSet:
      w.pad_begin = spec.pads_begin[axis];
      w.pad_end = spec.pads_end[axis];
      w.out = natural - w.pad_begin - w.pad_end;
      if (w.out < 0) {
        return absl::InvalidArgumentError(absl::StrCat("spatial axis ", axis, ": pads ",
                                                       w.pad_begin, "+", w.pad_end,
                                                       " exceed the output extent ", natural));
      }
      return w;
  }
  return absl::InternalError("unknown auto_pad");
}

}  // namespace qcc::ir
