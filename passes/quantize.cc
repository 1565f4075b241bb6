// Precision assignment and quantization: see passes/quantize.h.
#include "passes/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/qlut.h"
#include "passes/fuse_util.h"
#include "passes/quantizable.h"
#include "support/quantize.h"
#include "support/status.h"

namespace qcc::passes {

QuantParams ParamsForRange(const TensorRange& range, bool asymmetric) {
  float lo = std::min(range.lo, 0.0f);
  float hi = std::max(range.hi, 0.0f);
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -1.0f, hi = 1.0f;
  QuantParams p;
  if (!asymmetric) {
    const float amax = std::max(-lo, hi);
    p.scale = amax > 0.0f ? amax / 127.0f : 1.0f / 127.0f;
    return p;
  }
  if (hi - lo <= 0.0f) lo = -1.0f, hi = 1.0f;
  p.scale = (hi - lo) / 255.0f;
  if (!(p.scale > 0.0f) || !std::isfinite(p.scale)) p.scale = 1.0f / 127.0f;
  p.zero_point = Saturate(-128.0f - lo / p.scale, 0, kInt8Min, kInt8Max);
  return p;
}

namespace {

using ir::OpKind;

/// Ops whose int8 output has their input's parameters: those that only move elements, and
/// MaxPool, which picks one of its window's.
bool IsPassThrough(OpKind k) {
  return ir::Int8FormOf(k) == ir::Int8Form::kMovement || k == OpKind::kMaxPool;
}

bool IsLut(OpKind k) { return ir::Int8FormOf(k) == ir::Int8Form::kLut; }

/// The fused activation of a Conv/Gemm/Add, if it is one an int8 clamp can do.
template <typename Attrs>
bool ClampableActivation(const Attrs& a) {
  return a.activation == ir::Activation::kNone || a.activation == ir::Activation::kRelu ||
         a.activation == ir::Activation::kClip;
}

bool IsStaticRank(const ir::Value* v, size_t rank) {
  return v->type().has_rank() && v->type().dims->size() == rank;
}

/// A Clip's [min, max] (an absent bound is infinite), or nullopt when a bound is not a constant.
std::optional<std::pair<float, float>> ClipBounds(const ir::Node& clip) {
  std::pair<float, float> bounds = {-std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::infinity()};
  for (int i = 1; i < std::min(clip.num_inputs(), 3); ++i) {
    if (!clip.input(i)) continue;
    std::optional<float> v = fuse::ScalarF32(clip.input(i));
    if (!v) return std::nullopt;
    (i == 1 ? bounds.first : bounds.second) = *v;
  }
  return bounds;
}

/// Why `node` cannot run in int8 in its own right (empty when it can), apart from ranges.
std::string Int8Blocker(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  switch (node.kind()) {
    case OpKind::kConv: {
      const auto& a = node.attrs<ir::ConvAttrs>();
      if (!IsStaticRank(x, 4)) return "only 2-D convolutions run in int8";
      if (!fuse::ConstantF32(node.input(1))) return "the weights are not constant";
      if (node.input(2) && !fuse::ConstantF32(node.input(2))) return "the bias is not constant";
      if (!ClampableActivation(a)) return "a fused LeakyRelu is not an int8 clamp";
      return "";
    }
    case OpKind::kGemm: {
      const auto& a = node.attrs<ir::GemmAttrs>();
      if (a.transA != 0) return "transA is not lowered to int8";
      std::optional<Tensor> b = fuse::ConstantF32(node.input(1));
      if (!b || b->rank() != 2) return "the weights are not a constant matrix";
      if (node.input(2)) {
        std::optional<Tensor> c = fuse::ConstantF32(node.input(2));
        const int64_t n = a.transB ? b->dim(0) : b->dim(1);
        if (!c || (c->numel() != n && c->numel() != 1)) return "the bias is not a constant vector";
      }
      if (!ClampableActivation(a)) return "a fused LeakyRelu is not an int8 clamp";
      return "";
    }
    case OpKind::kMatMul: {
      std::optional<Tensor> b = fuse::ConstantF32(node.input(1));
      if (!b || b->rank() != 2) return "the second operand is not a constant matrix";
      if (!x->type().has_rank() || x->type().dims->size() < 2) return "the input is not a matrix";
      return "";
    }
    case OpKind::kAdd: {
      if (fuse::ConstantData(node.input(0)) || fuse::ConstantData(node.input(1))) {
        return "an Add of a constant stays in float";
      }
      if (!(node.input(0)->type() == node.input(1)->type())) {
        return "an int8 Add needs two inputs of the same shape";
      }
      if (!ClampableActivation(node.attrs<ir::AddAttrs>())) {
        return "a fused LeakyRelu is not an int8 clamp";
      }
      return "";
    }
    case OpKind::kMaxPool:
      if (node.num_outputs() > 1 && !node.output(1)->uses().empty()) return "indices are used";
      return IsStaticRank(x, 4) ? "" : "only 2-D pooling runs in int8";
    case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool:
      return IsStaticRank(x, 4) ? "" : "only 2-D pooling runs in int8";
    case OpKind::kClip:
      return ClipBounds(node) ? "" : "Clip bounds not constant";
    case OpKind::kPad:
      if (node.attrs<ir::PadAttrs>().mode != ir::PadMode::kConstant) return "only constant Pad";
      for (int i = 1; i < node.num_inputs(); ++i) {
        if (node.input(i) && !fuse::ConstantData(node.input(i))) return "Pad inputs not constant";
      }
      // The fill is the pad value quantized with the input's parameters (0: the zero point).
      if (node.input(2) && !fuse::ScalarF32(node.input(2))) return "the Pad value is not a scalar";
      return "";
    case OpKind::kSlice:
      for (int i = 1; i < node.num_inputs(); ++i) {
        if (node.input(i) && !fuse::ConstantData(node.input(i))) return "Slice bounds not constant";
      }
      return "";
    case OpKind::kResize: {
      // Nearest picks input elements: exact on int8 data. Interpolating modes stay in float.
      const auto& a = node.attrs<ir::ResizeAttrs>();
      if (a.mode != ir::ResizeMode::kNearest) return "only a nearest Resize runs in int8";
      if (a.coordinate_transformation_mode == ir::CoordTransform::kTfCropAndResize) {
        return "tf_crop_and_resize extrapolates: it stays in float";
      }
      return "";
    }
    default:
      return IsQuantizable(node.kind()) ? "" : "no int8 form";
  }
}

/// The table of a node whose int8 form is a LUT (ops.def): its unary function in fp32, as the
/// fp32 kernels compute it, from int8 `in` to int8 `out`. Clip's bounds are its constant inputs
/// (Int8Blocker has checked that they are).
QuantDecision::Lut BuildTable(const ir::Node& node, const QuantParams& in, const QuantParams& out) {
  UnaryCall call = *ir::UnaryCallOf(node);
  if (call.fn == UnaryFn::kClip) std::tie(call.alpha, call.beta) = *ClipBounds(node);
  const cpu::Int8Lut table =
      cpu::BuildLut(call, in.scale, in.zero_point, out.scale, out.zero_point);
  return {call, std::vector<int8_t>(table.begin(), table.end())};
}

/// The largest |folded bias| a row of `cols` weights may have: int32 less room for the worst
/// accumulation sum(q_x * q_w) (|q_x| <= 128, |q_w| <= 127) on either side, so acc + bias never
/// overflows in the kernels.
double BiasLimit(int64_t cols) {
  const double accumulation = 128.0 * 127.0 * static_cast<double>(cols);
  return std::max(static_cast<double>(std::numeric_limits<int32_t>::max()) - 2.0 * accumulation,
                  static_cast<double>(1 << 24));
}

/// Quantizes a Conv's [K, ...] or a Gemm's [N, K] weights (rows = output channels) with `bias`
/// (per row, may be empty).
///
/// The int32 bias is round(b / (s_in * s_w)). A row whose weights are tiny next to its bias (a
/// channel that batch norm all but switched off: weights ~1e-8, bias ~0.1) would need more than
/// 32 bits; its weight scale is widened to |b| / (s_in * limit) (ONNX Runtime's quantizer does
/// the same). The row's weights then round to few or no levels, an error of at most s_w / 2 per
/// weight, times |x| <= 128 s_in: 64 |b| / limit per product, where limit is close to 2^31 for
/// any row shorter than 10^4. With per-tensor weights the one scale widens for every row.
/// `widened` counts the rows that needed it.
QuantizedWeights QuantizeRows(const Tensor& w, const std::vector<float>& bias,
                              const QuantParams& in, const QuantParams& out, bool per_channel,
                              const std::vector<float>* given, int* widened) {
  const int64_t rows = w.dim(0);
  const int64_t cols = w.numel() / rows;
  const float* src = w.data<float>();
  const double limit = BiasLimit(cols);
  // The scale of each row, and the smallest one its bias fits with.
  std::vector<float> scales(rows);
  std::vector<double> needed(rows);
  float tensor_amax = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(src[r * cols + c]));
    scales[r] = given ? (*given)[given->size() == 1 ? 0 : r] : WeightScale(amax);
    tensor_amax = std::max(tensor_amax, amax);
    const double b = bias.empty() ? 0.0 : bias[r];
    needed[r] = std::fabs(b) / (static_cast<double>(in.scale) * limit);
  }
  // Rounding `needed` to float must not shrink it: one part in 10^6 more.
  auto widen = [](float s, double need) {
    return static_cast<double>(s) < need ? static_cast<float>(need * (1.0 + 1e-6)) : s;
  };
  // Per tensor, one scale wide enough for every row.
  // (Given scales are used as they are: per channel, or one for every row.)
  if (given) per_channel = true;
  float tensor_scale = WeightScale(tensor_amax);
  for (int64_t r = 0; r < rows; ++r) tensor_scale = widen(tensor_scale, needed[r]);
  QuantizedWeights q;
  if (!bias.empty()) q.real_bias = Tensor::FromVector<float>(DType::kFloat32, {rows}, bias);
  q.weights = Tensor(DType::kInt8, w.dims());
  q.bias = Tensor(DType::kInt32, {rows});
  q.multiplier = Tensor(DType::kFloat32, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    const float base = per_channel ? scales[r] : WeightScale(tensor_amax);
    if (static_cast<double>(base) < needed[r]) ++*widened;
    const float s_w = per_channel ? widen(scales[r], needed[r]) : tensor_scale;
    q.weight_scales.push_back(s_w);
    int64_t sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int8_t v = QuantizeWeight(src[r * cols + c], s_w);
      q.weights.data<int8_t>()[r * cols + c] = v;
      sum += v;
    }
    // |round(b / (s_in * s_w))| <= limit, and the zero-point correction adds at most 128 * 127 *
    // cols, which BiasLimit left room for.
    q.bias.data<int32_t>()[r] = FoldedBias(bias.empty() ? 0.0f : bias[r], in, s_w, sum);
    q.multiplier.data<float>()[r] = RequantMultiplier(in.scale, s_w, out.scale);
  }
  return q;
}

/// The weights of an int8 Conv/Gemm/MatMul as rows of output channels, and the float bias.
void WeightRows(const ir::Node& node, Tensor* w, std::vector<float>* bias) {
  *w = *fuse::ConstantF32(node.input(1));
  const int64_t k = node.kind() == OpKind::kConv ? w->dim(0) : 0;
  if (node.kind() != OpKind::kConv) {
    const bool trans_b = node.kind() == OpKind::kGemm && node.attrs<ir::GemmAttrs>().transB;
    const float alpha = node.kind() == OpKind::kGemm ? node.attrs<ir::GemmAttrs>().alpha : 1.0f;
    const int64_t n = trans_b ? w->dim(0) : w->dim(1);
    const int64_t kk = trans_b ? w->dim(1) : w->dim(0);
    Tensor rows(DType::kFloat32, {n, kk});
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < kk; ++j) {
        const float v = trans_b ? w->data<float>()[i * kk + j] : w->data<float>()[j * n + i];
        rows.data<float>()[i * kk + j] = alpha * v;
      }
    }
    *w = rows;
  }
  bias->clear();
  if (node.input(2)) {
    Tensor b = *fuse::ConstantF32(node.input(2));
    const float beta = node.kind() == OpKind::kGemm ? node.attrs<ir::GemmAttrs>().beta : 1.0f;
    const int64_t rows = node.kind() == OpKind::kConv ? k : w->dim(0);
    for (int64_t r = 0; r < rows; ++r) {
      bias->push_back(beta * b.data<float>()[b.numel() == 1 ? 0 : r]);
    }
  }
}

/// Node names closest to `name` (sharing the longest prefix), for an --exclude typo.
std::string ClosestNames(const ir::Graph& graph, const std::string& name) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& n : graph.nodes()) {
    size_t common = 0;
    while (common < name.size() && common < n->name().size() && name[common] == n->name()[common]) {
      ++common;
    }
    scored.emplace_back(common, n->name());
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < std::min<size_t>(3, scored.size()); ++i) names.push_back(scored[i].second);
  return absl::StrJoin(names, ", ");
}

/// The float bias row of `add` when it adds a constant to `v` that broadcasts along the last
/// axis of `v`'s [.., n] shape; nullopt otherwise.
std::optional<std::vector<float>> BiasRow(const ir::Node& add, const ir::Value* v, int64_t n) {
  if (add.kind() != OpKind::kAdd || add.attrs<ir::AddAttrs>().activation != ir::Activation::kNone) {
    return std::nullopt;
  }
  const ir::Value* other = add.input(0) == v ? add.input(1) : add.input(0);
  std::optional<Tensor> c = fuse::ConstantF32(other);
  if (!c || !(add.output(0)->type() == v->type())) return std::nullopt;
  for (int64_t i = 0; i + 1 < c->rank(); ++i) {
    if (c->dim(i) != 1) return std::nullopt;
  }
  if (c->numel() != n && c->numel() != 1) return std::nullopt;
  std::vector<float> row(n);
  for (int64_t i = 0; i < n; ++i) row[i] = c->data<float>()[c->numel() == 1 ? 0 : i];
  return row;
}

/// MatMuls that give an fp32 result when they run in int8: a Linear layer on activations of
/// rank > 2 (a constant [K, N] weight; [.., tokens, K] inputs) whose every consumer stays in
/// float whatever the ranges: an Add of a constant (its bias) or an op with no int8 form.
absl::flat_hash_set<const ir::Node*> FloatResultCandidates(const ir::Graph& graph) {
  absl::flat_hash_set<const ir::Node*> out;
  for (const auto& owned : graph.nodes()) {
    const ir::Node& node = *owned;
    if (node.kind() != OpKind::kMatMul || node.input(0)->type().rank() <= 2) continue;
    std::optional<Tensor> w = fuse::ConstantF32(node.input(1));
    if (!w || w->rank() != 2) continue;
    bool float_consumers = !node.output(0)->uses().empty();
    for (const ir::Use& u : node.output(0)->uses()) {
      const bool constant_add =
          u.node->kind() == OpKind::kAdd &&
          (fuse::ConstantData(u.node->input(0)) || fuse::ConstantData(u.node->input(1)));
      float_consumers &= constant_add || !IsQuantizable(u.node->kind());
    }
    if (float_consumers) out.insert(&node);
  }
  return out;
}

/// Fills QuantDecision::float_result for the int8 `candidates` (FloatResultCandidates): their
/// multipliers become s_in * s_w, a following bias Add is folded in, their output loses its
/// QuantParams.
void AssignFloatResults(const ir::Graph& graph,
                        const absl::flat_hash_set<const ir::Node*>& candidates, QuantDecision& d) {
  for (const auto& owned : graph.nodes()) {
    const ir::Node& node = *owned;
    if (!candidates.contains(&node) || !d.runs_int8(&node)) continue;
    const ir::Value* y = node.output(0);
    QuantizedWeights& w = d.weights.at(&node);
    const float s_in = d.params.at(node.input(0)).scale;
    const int64_t n = w.weights.dim(0);
    for (int64_t r = 0; r < n; ++r) {
      w.multiplier.data<float>()[r] = s_in * w.weight_scales[r];
    }
    const ir::Node* bias_add = nullptr;
    const bool graph_output =
        std::find(graph.outputs().begin(), graph.outputs().end(), y) != graph.outputs().end();
    if (y->uses().size() == 1 && !graph_output) {
      if (std::optional<std::vector<float>> row = BiasRow(*y->uses()[0].node, y, n)) {
        bias_add = y->uses()[0].node;
        w.float_bias = Tensor(DType::kFloat32, {n});
        std::copy(row->begin(), row->end(), w.float_bias.data<float>());
        d.folded_bias[bias_add] = &node;
      }
    }
    d.float_result[&node] = bias_add;
    d.params.erase(y);
  }
}

}  // namespace

int32_t FoldedBias(float b, const QuantParams& in, float s_w, int64_t weight_sum) {
  const double bias_scale = static_cast<double>(in.scale * s_w);
  return static_cast<int32_t>(std::nearbyint(static_cast<double>(b) / bias_scale) -
                              static_cast<double>(in.zero_point) * weight_sum);
}

std::optional<std::pair<float, float>> SaturationInterval(const ir::Graph& graph,
                                                          const ir::Value& v) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (v.uses().empty()) return std::nullopt;
  for (const ir::Value* out : graph.outputs()) {
    if (out == &v) return std::nullopt;
  }
  float lo = kInf, hi = -kInf;  // the union of the consumers' sensitive intervals
  for (const ir::Use& use : v.uses()) {
    const ir::Node& node = *use.node;
    if (use.index != 0) return std::nullopt;
    float a = -kInf, b = kInf;
    switch (node.kind()) {
      case OpKind::kHardSwish:  // x * clip(x / 6 + 1/2, 0, 1): 0 below -3, linear above 3
        a = -3.0f;
        break;
      case OpKind::kHardSigmoid: {  // clip(alpha x + beta, 0, 1)
        const auto& attrs = node.attrs<ir::HardSigmoidAttrs>();
        if (!(attrs.alpha != 0.0f) || !std::isfinite(attrs.alpha)) return std::nullopt;
        a = -attrs.beta / attrs.alpha;
        b = (1.0f - attrs.beta) / attrs.alpha;
        if (a > b) std::swap(a, b);
        break;
      }
      case OpKind::kRelu:
        a = 0.0f;
        break;
      case OpKind::kClip: {
        std::optional<std::pair<float, float>> bounds = ClipBounds(node);
        if (!bounds) return std::nullopt;
        std::tie(a, b) = *bounds;
        break;
      }
      default:
        return std::nullopt;
    }
    if (!(a <= b)) return std::nullopt;
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  }
  return std::make_pair(lo, hi);
}

namespace {

/// True when `node` is named by an --exclude entry: its name or its op (the fused attention
/// answers to ONNX's name for it, "Attention", too).
bool IsExcluded(const absl::flat_hash_set<std::string>& excluded, const ir::Node& node) {
  if (excluded.contains(node.name()) || excluded.contains(std::string(ir::OpName(node.kind())))) {
    return true;
  }
  return node.kind() == OpKind::kAttention && excluded.contains("Attention");
}

/// Fused attention runs its two products in int8 unless excluded (both modes: its scales are
/// computed at run time).
void AssignAttention(const ir::Graph& graph, const absl::flat_hash_set<std::string>& excluded,
                     QuantDecision* d) {
  for (const auto& owned : graph.nodes()) {
    if (owned->kind() != OpKind::kAttention) continue;
    if (IsExcluded(excluded, *owned)) {
      d->notes.push_back(absl::StrCat("node '", owned->name(), "' (", ir::OpName(owned->kind()),
                                      ") stays in float: excluded by --exclude"));
    } else {
      d->int8_attention.insert(owned.get());
    }
  }
}

/// The --exclude names (CheckExclude'd).
absl::StatusOr<absl::flat_hash_set<std::string>> Excluded(const ir::Graph& graph,
                                                          const QuantizeOptions& options) {
  QCC_RETURN_IF_ERROR(CheckExclude(graph, options.exclude));
  return absl::flat_hash_set<std::string>(options.exclude.begin(), options.exclude.end());
}

}  // namespace

absl::Status CheckExclude(const ir::Graph& graph, const std::vector<std::string>& exclude) {
  for (const std::string& e : exclude) {
    bool found = false;
    for (const auto& n : graph.nodes()) {
      found = found || IsExcluded({e}, *n);
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("--exclude '", e,
                                                     "' matches no node name and no op; closest "
                                                     "node names: ",
                                                     ClosestNames(graph, e)));
    }
  }
  return absl::OkStatus();
}

int PrecisionReport::Count(NodePrecision precision) const {
  int n = 0;
  for (const NodeReport& node : nodes) n += node.precision == precision ? 1 : 0;
  return n;
}

PrecisionReport ReportDecision(const ir::Graph& graph, const QuantDecision& decision) {
  PrecisionReport r;
  for (const auto& owned : graph.nodes()) {
    const ir::Node* n = owned.get();
    PrecisionReport::NodeReport node;
    node.name = n->name();
    node.kind = n->kind();
    node.precision = decision.runs_int8(n)                 ? NodePrecision::kInt8
                     : decision.dynamic.contains(n)        ? NodePrecision::kDynamic
                     : decision.int8_attention.contains(n) ? NodePrecision::kInt8Attention
                                                           : NodePrecision::kFloat;
    node.float_result = decision.float_result.contains(n);
    node.int8_weights = decision.weights.contains(n);
    r.nodes.push_back(std::move(node));
  }
  for (const auto& [v, params] : decision.params) {
    r.int8_tensors[v->name()] = params;
    r.int8_activations += v->constant() == nullptr ? 1 : 0;
  }
  r.notes = decision.notes;
  r.widened_channels = decision.widened_channels;
  r.widened_nodes = decision.widened_nodes;
  return r;
}

absl::StatusOr<QuantDecision> AssignDynamic(const ir::Graph& graph,
                                            const QuantizeOptions& options) {
  QCC_ASSIGN_OR_RETURN(const absl::flat_hash_set<std::string> excluded, Excluded(graph, options));
  QuantDecision d;
  for (const auto& owned : graph.nodes()) {
    const ir::Node& node = *owned;
    if (node.kind() != OpKind::kMatMul && node.kind() != OpKind::kGemm) continue;
    const std::string where =
        absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), ") stays in float: ");
    if (IsExcluded(excluded, node)) {
      d.notes.push_back(where + "excluded by --exclude");
      continue;
    }
    std::string blocker = Int8Blocker(node);
    if (blocker.empty() && node.kind() == OpKind::kGemm &&
        node.attrs<ir::GemmAttrs>().activation != ir::Activation::kNone) {
      blocker = "a fused activation is not applied by the dynamic int8 GEMM";
    }
    if (!blocker.empty()) {
      d.notes.push_back(where + blocker);
      continue;
    }
    Tensor w;
    std::vector<float> bias;
    WeightRows(node, &w, &bias);
    int widened = 0;
    QuantizedWeights q =
        QuantizeRows(w, {}, QuantParams{}, QuantParams{}, options.per_channel, nullptr, &widened);
    const int64_t n = w.dim(0);
    const ir::Node* bias_add = nullptr;
    if (!bias.empty()) {
      q.float_bias = Tensor(DType::kFloat32, {n});
      std::copy(bias.begin(), bias.end(), q.float_bias.data<float>());
    } else {
      const ir::Value* y = node.output(0);
      const bool graph_output =
          std::find(graph.outputs().begin(), graph.outputs().end(), y) != graph.outputs().end();
      if (y->uses().size() == 1 && !graph_output) {
        if (std::optional<std::vector<float>> row = BiasRow(*y->uses()[0].node, y, n)) {
          bias_add = y->uses()[0].node;
          q.float_bias = Tensor(DType::kFloat32, {n});
          std::copy(row->begin(), row->end(), q.float_bias.data<float>());
          d.folded_bias[bias_add] = &node;
        }
      }
    }
    d.dynamic[&node] = std::move(q);
    d.dynamic_bias_add[&node] = bias_add;
  }
  AssignAttention(graph, excluded, &d);
  return d;
}

absl::StatusOr<QuantDecision> AssignPrecision(const ir::Graph& graph,
                                              const std::map<std::string, TensorRange>& ranges,
                                              const QuantizeOptions& options) {
  QCC_ASSIGN_OR_RETURN(const absl::flat_hash_set<std::string> excluded, Excluded(graph, options));
  QuantDecision d;
  absl::flat_hash_set<const ir::Node*> float_results = FloatResultCandidates(graph);
  // A QDQ model gives its tensors' parameters in the graph (absorb-qdq) and decides for itself.
  const bool qdq_model = options.qdq_model;
  if (qdq_model) {
    // In a QDQ model, such a GEMM gives an fp32 result when its input and weights are
    // dequantized and its result is not quantized (DQ -> MatMul -> Add, what `qcc export`
    // writes for it, and ONNX Runtime runs as MatMulIntegerToFloat).
    absl::flat_hash_set<const ir::Node*> given;
    for (const ir::Node* n : float_results) {
      if (n->input(0)->given_quant() != nullptr && n->input(1)->given_weight_scales() != nullptr &&
          n->output(0)->given_quant() == nullptr) {
        given.insert(n);
      }
    }
    float_results = std::move(given);
  }
  // An activation such a GEMM reads gets a zero point from its range even in symmetric mode:
  // the GEMM folds it into its int32 bias at no cost, and a transformer's GELU, LayerNorm and
  // attention outputs are far from symmetric (a symmetric grid leaves levels unused). Every
  // int8 step takes zero points, so other int8 readers of the tensor are unaffected.
  auto gemm_input = [&](const ir::Value* v) {
    for (const ir::Use& u : v->uses()) {
      if (u.index == 0 && float_results.contains(u.node)) return true;
    }
    return false;
  };
  // A tensor that only an int8-capable Concat reads is quantized with the Concat's output
  // parameters (TensorRT's concat scale unification): the Concat then copies it unchanged, or
  // not at all when it is computed in its slice of the output (the CPU lowering's
  // ConcatSlices), and its producer rounds once, to the grid the Concat would have requantized
  // it to. The Concat's range contains its inputs' (min/max of the joined values), so nothing
  // that was in range saturates; where the Concat would stay in float it is left alone.
  absl::flat_hash_set<const ir::Value*> graph_outputs(graph.outputs().begin(),
                                                      graph.outputs().end());
  auto range_source = [&](const ir::Value* v) {
    for (int hops = 0; !qdq_model && hops < 64; ++hops) {
      const ir::Node* concat = nullptr;
      int readers = 0;
      for (const ir::Use& u : v->uses()) {
        if (u.node->kind() == OpKind::kObserve) continue;
        ++readers;
        concat = u.node;
      }
      if (readers != 1 || concat->kind() != OpKind::kConcat || v->producer() == nullptr ||
          graph_outputs.contains(v) || IsExcluded(excluded, *concat) ||
          !Int8Blocker(*concat).empty() || ranges.count(concat->output(0)->name()) == 0) {
        break;
      }
      bool ranged = true;
      for (const ir::Value* in : concat->inputs()) {
        ranged &= in != nullptr && ranges.count(in->name()) > 0;
      }
      if (!ranged) break;
      v = concat->output(0);
    }
    return v;
  };
  auto params_of = [&](const ir::Value* v) -> std::optional<QuantParams> {
    auto known = d.params.find(v);
    if (known != d.params.end()) return known->second;
    if (const QuantParams* given = v->given_quant()) return *given;
    if (const ir::Value* joined = range_source(v); joined != v) {
      auto it = d.params.find(joined);
      if (it != d.params.end()) return it->second;
      v = joined;
    }
    const bool zero_point = gemm_input(v);
    auto it = ranges.find(v->name());
    if (it == ranges.end()) return std::nullopt;
    TensorRange range = it->second;
    if (auto a = options.asymmetric_ranges.find(v->name());
        zero_point && a != options.asymmetric_ranges.end()) {
      range = a->second;
    }
    // No levels where every consumer is constant (a HardSwish input below -3): those values
    // saturate to the edge of the range, where the consumers give what they would have.
    if (auto interval = SaturationInterval(graph, *v)) {
      range.lo = std::min(std::max(range.lo, interval->first), 0.0f);
      range.hi = std::max(std::min(range.hi, interval->second), 0.0f);
      d.saturation[v] = *interval;
    }
    return ParamsForRange(range, options.asymmetric || zero_point);
  };
  for (const auto& owned : graph.nodes()) {
    const ir::Node& node = *owned;
    if (node.kind() == OpKind::kObserve || !IsQuantizable(node.kind())) continue;
    const std::string where =
        absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), ") stays in float: ");
    if (IsExcluded(excluded, node)) {
      d.notes.push_back(where + "excluded by --exclude");
      continue;
    }
    const std::string blocker = Int8Blocker(node);
    if (!blocker.empty()) {
      d.notes.push_back(where + blocker);
      continue;
    }
    const ir::Value* x = node.input(0);
    const ir::Value* y = node.output(0);
    if (IsPassThrough(node.kind())) {
      // int8 when its input already is: same scale and zero point out as in (exact for data
      // movement and max).
      if (x->producer() == nullptr || !d.runs_int8(x->producer())) continue;
      // A QDQ model may quantize the output with other parameters than the input: that is a
      // requantization, which data movement in int8 cannot do.
      const QuantParams* given = y->given_quant();
      const QuantParams& in_params = d.params.at(x);
      if (given != nullptr &&
          (given->scale != in_params.scale || given->zero_point != in_params.zero_point)) {
        d.notes.push_back(where +
                          "the model quantizes its output with other parameters than its input");
        continue;
      }
      d.int8[&node] = true;
      // A copy first: inserting y may rehash the map and move x's entry.
      const QuantParams in = d.params.at(x);
      d.params[y] = in;
      continue;
    }
    // Every non-constant float input and the output need a range.
    std::vector<const ir::Value*> data;
    for (const ir::Value* v : node.inputs()) {
      if (v != nullptr && IsFloat(v->dtype()) && fuse::ConstantData(v) == nullptr) {
        data.push_back(v);
      }
    }
    data.push_back(y);
    // An fp32-result GEMM of a QDQ model has no parameters for its result, and needs none.
    const bool unquantized_result = qdq_model && float_results.contains(&node) && !params_of(y);
    if (unquantized_result) data.pop_back();
    bool missing = false;
    for (const ir::Value* v : data) {
      if (!params_of(v)) {
        d.notes.push_back(where + absl::StrCat(ranges.empty() && qdq_model
                                                   ? "the model has no Q/DQ pair on '"
                                                   : "no calibration range for '",
                                               v->name(), "'"));
        missing = true;
        break;
      }
    }
    if (missing) continue;
    // An Add with no input computed in int8 stays in float: it would quantize both inputs only
    // to add them (a transformer's residual Adds between float LayerNorms and fp32-result
    // GEMMs). Models with Q/DQ pairs decide for themselves.
    if (node.kind() == OpKind::kAdd && !qdq_model) {
      bool int8_input = false;
      for (const ir::Value* v : node.inputs()) {
        int8_input |= v != nullptr && v->producer() != nullptr && d.runs_int8(v->producer());
      }
      if (!int8_input) {
        d.notes.push_back(where + "no input is computed in int8");
        continue;
      }
    }
    const QuantParams in = *params_of(x);
    // (AssignFloatResults replaces the multipliers an fp32 result's `out` gives.)
    const QuantParams out = unquantized_result ? QuantParams{} : *params_of(y);
    if (node.kind() == OpKind::kConv || node.kind() == OpKind::kGemm ||
        node.kind() == OpKind::kMatMul) {
      Tensor w;
      std::vector<float> bias;
      WeightRows(node, &w, &bias);
      int widened = 0;
      const std::vector<float>* given = node.input(1)->given_weight_scales();
      if (given != nullptr &&
          !(given->size() == 1 || static_cast<int64_t>(given->size()) == w.dim(0))) {
        given = nullptr;
      }
      d.weights[&node] = QuantizeRows(w, bias, in, out, options.per_channel, given, &widened);
      if (widened > 0) {
        d.widened_channels += widened;
        ++d.widened_nodes;
      }
    } else if (IsLut(node.kind())) {
      d.luts[&node] = BuildTable(node, in, out);
    }
    d.int8[&node] = true;
    for (const ir::Value* v : data) d.params[v] = *params_of(v);
  }
  AssignFloatResults(graph, float_results, d);
  // A QDQ model decides what is quantized: its attention stays as it wrote it, in float.
  if (!qdq_model) AssignAttention(graph, excluded, &d);
  return d;
}

}  // namespace qcc::passes
