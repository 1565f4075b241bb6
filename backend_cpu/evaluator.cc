#include "backend_cpu/evaluator.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/eval_slices.h"
#include "backend_cpu/tensor_convert.h"
#include "ir/printer.h"
#include "ir/shape_fns/nn_window.h"
#include "ir/shape_inference.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/qelementwise.h"  // ConvertF16ToF32, ConvertF32ToF16
#include "kernels/cpu/thread_pool.h"
#include "support/memory.h"
#include "support/status.h"

namespace qcc::cpu {

std::vector<const ir::Node*> UnsupportedNodes(const ir::Graph& graph) {
  std::vector<const ir::Node*> missing;
  for (const auto& n : graph.nodes()) {
    if (DefaultOpRegistry().Find(n->kind()) == nullptr) missing.push_back(n.get());
  }
  return missing;
}

Evaluator::Evaluator(const ir::Graph& graph, EvalOptions options)
    : graph_(graph), options_(options), arena_(std::make_unique<internal::EvalArena>()) {
  for (const auto& node : graph_.nodes()) {
    const OpEntry* entry = registry_.Find(node->kind());
    if (entry == nullptr || entry->float_policy == FloatPolicy::kAsIs) continue;
    for (const ir::Value* v : node->inputs()) {
      const Tensor* c = v != nullptr ? v->constant() : nullptr;
      if (c != nullptr && IsReducedFloat(c->dtype()) && !widened_constants_.contains(v)) {
        widened_constants_.emplace(v, WidenToF32(*c, options_.num_threads));
      }
    }
    if (node->kind() == ir::OpKind::kConv) PackConvWeights(*node);
  }
  absl::flat_hash_set<const ir::Value*> graph_outputs(graph_.outputs().begin(),
                                                      graph_.outputs().end());
  for (const auto& node : graph_.nodes()) {
    if (node->kind() != ir::OpKind::kConcat) continue;
    for (int i = 0; i < node->num_inputs(); ++i) {
      const ir::Value* v = node->input(i);
      if (v == nullptr || v->producer() == nullptr || graph_outputs.contains(v)) continue;
      // Read by this Concat once, and otherwise only by calibration taps (Observe), which
      // read it where it is.
      int other_reads = 0;
      for (const ir::Use& use : v->uses()) {
        other_reads += use.node != node.get() && use.node->kind() != ir::OpKind::kObserve;
        other_reads += use.node == node.get() && use.index != i;
      }
      if (other_reads == 0) concat_slots_.emplace(v, ConcatSlot{node.get(), i});
    }
  }
  if (!options_.on_value) FindResidualAdds(graph_outputs);
  for (const auto& node : graph_.nodes()) value_count_ += node->num_inputs() + node->num_outputs();
  if (!options_.on_value && !options_.on_node_done) {
    if (options_.slice_images == 0) {
      slice_images_ = EvalSliceImages(graph_);
      small_slice_images_ = EvalSliceImages(graph_, kEvalSmallSliceBytes);
    } else if (options_.slice_images > 0 && GraphImagesIndependent(graph_)) {
      slice_images_ = small_slice_images_ = options_.slice_images;
    }
  }
}

void Evaluator::FindResidualAdds(const absl::flat_hash_set<const ir::Value*>& graph_outputs) {
  for (const auto& node : graph_.nodes()) {
    if (node->kind() != ir::OpKind::kConv || node->num_outputs() != 1 ||
        node->attrs<ir::ConvAttrs>().activation != ir::Activation::kNone) {
      continue;
    }
    const ir::Value* y = node->output(0);
    if (y == nullptr || y->uses().size() != 1 || graph_outputs.contains(y)) continue;
    const ir::Node* add = y->uses()[0].node;
    if (add->kind() != ir::OpKind::kAdd || add->num_inputs() != 2 || add->num_outputs() != 1 ||
        residual_adds_.contains(add) || concat_slots_.contains(add->output(0))) {
      continue;
    }
    const ir::Value* r = add->input(1 - y->uses()[0].index);
    if (r == nullptr || r == y) continue;
    const ir::TensorType& t = y->type();
    if (t.dtype != DType::kFloat32 || !t.has_rank() || !(r->type() == t) ||
        !(add->output(0)->type() == t)) {
      continue;
    }
    residual_adds_.emplace(add, ResidualAdd{node.get(), r});
    residual_convs_.insert(node.get());
  }
}

namespace {

/// Fills p's spatial extents, strides, pads and dilations (right aligned, as the Conv kernel
/// has them) for the input's static extents, through the window geometry the shape functions and
/// the Conv kernel use (ir/shape_fns/nn_window.h); false when an input extent is not static (or
/// the attributes are bad: the kernel reports that when it runs).
bool StaticConvExtents(const ir::Node& node, ConvF32Params& p) {
  const ir::TensorType& x = node.input(0)->type();
  if (!x.has_rank() || x.rank() < 3 || x.rank() > 5) return false;
  const int64_t spatial = x.rank() - 2;
  const ir::ConvAttrs& a = node.attrs<ir::ConvAttrs>();
  ir::Ints kernel(p.kernel.end() - spatial, p.kernel.end());
  const absl::StatusOr<ir::WindowSpec> spec =
      ir::MakeWindowSpec(spatial, a.kernel_shape.empty() ? kernel : a.kernel_shape, a.strides,
                         a.dilations, a.pads, a.auto_pad, false);
  if (!spec.ok()) return false;
  for (int64_t i = 0; i < spatial; ++i) {
    const ir::Dim in = (*x.dims)[2 + i];
    if (!ir::IsKnown(in)) return false;
    const absl::StatusOr<ir::WindowAxis> axis = ir::ForwardWindowAxis(*spec, i, in);
    if (!axis.ok()) return false;
    const int64_t at = 3 - spatial + i;
    p.in[at] = in;
    p.out[at] = axis->out;
    p.stride[at] = spec->strides[i];
    p.dilation[at] = spec->dilations[i];
    p.pad[at] = axis->pad_begin;
  }
  return true;
}

}  // namespace

void Evaluator::PackConvWeights(const ir::Node& node) {
  const ir::Value* wv = node.num_inputs() > 1 ? node.input(1) : nullptr;
  if (wv == nullptr || wv->constant() == nullptr) return;
  auto widened = widened_constants_.find(wv);
  const Tensor& w = widened != widened_constants_.end() ? widened->second : *wv->constant();
  if (w.dtype() != DType::kFloat32 || w.rank() < 3 || w.rank() > 5) return;
  // The packing reads channels, groups, the kernel's extents, strides and dilations only
  // (PackConvF32Weights), except where ConvF32PackingDependsOnExtents: those convolutions pack on
  // each run, with their extents.
  const ir::ConvAttrs& attrs = node.attrs<ir::ConvAttrs>();
  const int64_t group = attrs.group;
  if (group < 1 || w.dim(0) % group != 0) return;  // the kernel reports the error
  ConvF32Params p;
  p.out_channels = w.dim(0);
  p.in_channels = w.dim(1) * group;
  p.groups = group;
  p.winograd = !options_.on_observe;  // as the Conv op sets it (ops/nn_conv.cc)
  p.kernel = {1, 1, 1};
  const int64_t spatial = w.rank() - 2;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t at = 3 - spatial + i;  // right aligned, as the kernel has them
    p.kernel[at] = w.dim(2 + i);
    // Attributes of the wrong length: left at 1 (the kernel reports them when it runs).
    if (static_cast<int64_t>(attrs.strides.size()) == spatial) p.stride[at] = attrs.strides[i];
    if (static_cast<int64_t>(attrs.dilations.size()) == spatial) {
      p.dilation[at] = attrs.dilations[i];
    }
  }
  const bool for_extents = ConvF32PackingDependsOnExtents(p);
  if (for_extents && !StaticConvExtents(node, p)) return;  // packed on each run
  cpu::PackedConvF32 packed = PackConvF32Weights(p, w.data<float>());
  if (packed.empty()) return;
  packed_conv_weights_.emplace(&node, std::move(packed));
  if (for_extents) packed_conv_extents_.emplace(&node, std::make_pair(p.in, p.out));
}

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(const ir::Graph& graph,
                                                             EvalOptions options) {
  std::vector<const ir::Node*> missing = UnsupportedNodes(graph);
  if (!missing.empty()) {
    const ir::Node* n = missing.front();
    return absl::UnimplementedError(absl::StrCat("node '", n->name(), "': op ",
                                                 ir::OpName(n->kind()), " (opset ", graph.opset(),
                                                 ") has no CPU kernel yet"));
  }
  if (options.num_threads <= 0) {
    options.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  auto ev = std::unique_ptr<Evaluator>(new Evaluator(graph, options));
  return ev;
}

absl::Status Evaluator::CheckInputs(absl::Span<const Tensor> inputs,
                                    absl::flat_hash_map<ir::Dim, int64_t>& symbols) const {
  const auto& graph_inputs = graph_.inputs();
  if (inputs.size() != graph_inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", graph_inputs.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *graph_inputs[i];
    const Tensor& t = inputs[i];
    if (t.dtype() != v.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", v.name(), "' must be ", DTypeName(v.dtype()), ", got ", DTypeName(t.dtype())));
    }
    if (!v.type().has_rank()) continue;
    const auto& dims = *v.type().dims;
    bool ok = static_cast<int64_t>(dims.size()) == t.rank();
    for (size_t a = 0; ok && a < dims.size(); ++a) {
      if (ir::IsKnown(dims[a])) {
        ok = dims[a] == t.dim(a);
      } else if (ir::IsSymbol(dims[a])) {
        auto [it, inserted] = symbols.emplace(dims[a], t.dim(a));
        ok = inserted || it->second == t.dim(a);
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("input '", v.name(), "' must have shape ",
                                                     ir::TypeToString(graph_, v.type()), ", got ",
                                                     DimsToString(t.dims())));
    }
  }
  return absl::OkStatus();
}

namespace {

/// With the environment variable QCC_EVAL_POISON=1, node outputs come filled with 0xff bytes (NaN
/// for floats) instead of uninitialised, which the conformance test uses to prove that no kernel
/// relies on zeroed outputs: every kernel writes all of its outputs.
bool PoisonRequested() {
  const char* env = std::getenv("QCC_EVAL_POISON");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Evaluator::Run(absl::Span<const Tensor> inputs) const {
  absl::flat_hash_map<ir::Dim, int64_t> symbols;
  QCC_RETURN_IF_ERROR(CheckInputs(inputs, symbols));
  const int64_t batch = inputs.empty() || inputs[0].rank() == 0 ? 0 : inputs[0].dim(0);
  // Observers (calibration) report into the statistics of the thread that runs the batch, so
  // their slices run one after another on it, each step on every thread; other runs take small
  // slices, several at a time, each on one thread (no join between its steps).
  const bool observed = static_cast<bool>(options_.on_observe);
  const int64_t size = observed ? slice_images_ : small_slice_images_;
  if (size == 0 || batch <= size) return RunWhole(inputs, std::move(symbols));
  const int threads = observed ? 1 : options_.num_threads;
  int64_t slices = (batch + size - 1) / size;
  slices = std::min(batch, (slices + threads - 1) / threads * threads);
  // The outputs' dims: the graph's, the batch bound (GraphImagesIndependent: static after it).
  const ir::Dim symbol = (*graph_.inputs()[0]->type().dims)[0];
  std::vector<Tensor> outputs;
  for (const ir::Value* v : graph_.outputs()) {
    Dims dims(v->type().dims->begin(), v->type().dims->end());
    dims[0] = batch;
    outputs.emplace_back(v->dtype(), std::move(dims));
  }
  // Slice i: images [i * batch / slices, (i + 1) * batch / slices), run whole; its outputs are
  // those rows of the batch's (GraphImagesIndependent).
  const auto run_slice = [&](int64_t i) -> absl::Status {
    const int64_t first = i * batch / slices, count = (i + 1) * batch / slices - first;
    std::vector<Tensor> slice(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      Dims dims = inputs[k].dims();
      const size_t image = inputs[k].nbytes() / batch;
      dims[0] = count;
      const uint8_t* from = static_cast<const uint8_t*>(inputs[k].raw()) + first * image;
      if (reinterpret_cast<uintptr_t>(from) % 64 == 0) {
        // A view into the caller's tensor (tensors are 64-byte aligned).
        slice[k] =
            Tensor(inputs[k].dtype(), std::move(dims),
                   std::shared_ptr<uint8_t>(inputs[k].storage(), const_cast<uint8_t*>(from)));
      } else {
        slice[k] = Tensor(inputs[k].dtype(), std::move(dims));
        std::memcpy(slice[k].raw(), from, count * image);
      }
    }
    absl::flat_hash_map<ir::Dim, int64_t> slice_symbols = symbols;
    slice_symbols[symbol] = count;
    QCC_ASSIGN_OR_RETURN(std::vector<Tensor> part, RunWhole(slice, std::move(slice_symbols)));
    for (size_t o = 0; o < part.size(); ++o) {
      const size_t image = outputs[o].nbytes() / batch;
      if (part[o].nbytes() != count * image) {
        return absl::InternalError(absl::StrCat("a slice's output ", o, " has ", part[o].nbytes(),
                                                " bytes, not ", count * image));
      }
      std::memcpy(static_cast<uint8_t*>(outputs[o].raw()) + first * image, part[o].raw(),
                  part[o].nbytes());
    }
    return absl::OkStatus();
  };
  std::vector<absl::Status> statuses(slices);
  // Nested in a piece, the kernels' own parallel loops run on the piece's thread
  // (thread_pool.h).
  ParallelFor(threads, slices, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) statuses[i] = run_slice(i);
  });
  for (const absl::Status& status : statuses) QCC_RETURN_IF_ERROR(status);
  return outputs;
}

absl::StatusOr<std::vector<Tensor>> Evaluator::RunWhole(
    absl::Span<const Tensor> inputs, absl::flat_hash_map<ir::Dim, int64_t> symbols) const {
  // Remaining uses per value, so intermediate tensors are freed as soon as they are dead.
  std::vector<Dims> input_dims;
  for (const Tensor& t : inputs) input_dims.push_back(t.dims());
  std::unique_ptr<internal::RunAllocator> memory = arena_->Begin(input_dims, PoisonRequested());
  absl::flat_hash_map<const ir::Value*, Tensor> live;
  // fp16 values as the fp32 ops that read them see them: the fp32 result an op computed,
  // rounded to fp16 in place (widen(narrow(y)), the values widening the fp16 tensor gives), and
  // what movers made of those. Ops computing in fp32 read these instead of widening the fp16
  // tensor again for every use; the fp16 tensor itself (in `live`) is made only for a reader
  // that needs it (an op that sees tensors as they are, a graph output, on_value).
  absl::flat_hash_map<const ir::Value*, Tensor> widened;
  absl::flat_hash_map<const ir::Value*, int> remaining;
  remaining.reserve(value_count_);
  live.reserve(value_count_);
  for (const auto& n : graph_.nodes()) {
    for (const ir::Value* v : n->inputs()) {
      if (v != nullptr) ++remaining[v];
    }
  }
  for (const ir::Value* v : graph_.outputs()) ++remaining[v];
  for (size_t i = 0; i < inputs.size(); ++i) live[graph_.inputs()[i]] = inputs[i];
  // The input of `node` whose storage its output 0 (of dtype `dt` and shape `dims`) can take
  // over, or -1: one of that dtype and shape whose value dies at this node (its last use, not a
  // graph output) and whose storage only `in` and the live or widened map hold (no view,
  // observer or caller keeps it).
  auto in_place_input = [&](const ir::Node& node, const std::vector<Tensor>& in, DType dt,
                            const Dims& dims) -> int {
    for (size_t i = 0; i < in.size(); ++i) {
      const ir::Value* v = node.input(static_cast<int>(i));
      if (v == nullptr || remaining[v] != 1 || !in[i].defined()) continue;
      auto holds = [&](const absl::flat_hash_map<const ir::Value*, Tensor>& map) {
        auto it = map.find(v);
        return it != map.end() && it->second.storage() == in[i].storage();
      };
      if (!holds(widened) && !holds(live)) continue;
      if (in[i].storage().use_count() != 2) continue;
      if (in[i].dtype() == dt && in[i].dims() == dims) return static_cast<int>(i);
    }
    return -1;
  };
  auto lookup = [&](const ir::Value* v) -> Tensor {
    if (v == nullptr) return Tensor();
    if (const Tensor* c = v->constant()) return *c;
    auto it = live.find(v);
    return it == live.end() ? Tensor() : it->second;
  };

  // A tensor in the arena for what `what()` names of `node` ("output 0 f32[...]"), checked
  // against the memory cap before it is allocated: a model may ask for any size (InferNode
  // refused overflows). The names are built only for an error (they were a tenth of a small
  // model's time in this function).
  auto allocate = [&](const ir::Node& node, DType dt, Dims dims,
                      const auto& what) -> absl::StatusOr<Tensor> {
    auto where = [&] {
      return absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), "): ", what());
    };
    const uint64_t bytes = DenseBytes(dt, dims).value_or(UINT64_MAX);
    const uint64_t held = static_cast<uint64_t>(memory->held());
    if (!CheckMemory(bytes, held, options_.max_memory, "").ok()) {
      return CheckMemory(bytes, held, options_.max_memory, where());
    }
    absl::StatusOr<Tensor> t = memory->Allocate(dt, std::move(dims));
    if (!t.ok())
      return absl::ResourceExhaustedError(absl::StrCat(where(), ": ", t.status().message()));
    return t;
  };

  // Concats computed in place (concat_slots_): the output of each, allocated when the first of
  // its inputs is computed, and where each input's elements go in it.
  struct ConcatPlace {
    bool usable = false;
    Dims out_dims;
    std::vector<Dims> in_dims;
    std::vector<int64_t> offset;  // elements of the output before input i's
    Tensor buffer;
  };
  absl::flat_hash_map<const ir::Node*, ConcatPlace> concat_places;
  // `type`'s extents in this run (its symbols bound by the inputs), or nullopt.
  auto extents = [&](const ir::TensorType& type) -> std::optional<Dims> {
    if (!type.has_rank()) return std::nullopt;
    Dims dims;
    for (const ir::Dim d : *type.dims) {
      if (ir::IsKnown(d)) {
        dims.push_back(d);
      } else if (auto s = symbols.find(d); s != symbols.end()) {
        dims.push_back(s->second);
      } else {
        return std::nullopt;
      }
    }
    return dims;
  };
  // Whether `concat`'s inputs are contiguous slices of its output in this run (every extent
  // before the axis is 1: a channel concat at batch 1), each of whole 64-byte lines of `dt`
  // but the last, so that a slice starts as aligned as a tensor of its own and no input's
  // padding lies in another's slice.
  auto place_concat = [&](const ir::Node& concat, DType dt, ConcatPlace& place) {
    std::optional<Dims> out = extents(concat.output(0)->type());
    if (!out.has_value() || out->empty()) return false;
    const int64_t rank = static_cast<int64_t>(out->size());
    int64_t axis = concat.attrs<ir::AxisAttrs>().axis;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    for (int64_t a = 0; a < axis; ++a) {
      if ((*out)[a] != 1) return false;
    }
    int64_t along = 0, offset = 0;
    for (int i = 0; i < concat.num_inputs(); ++i) {
      std::optional<Dims> in = extents(concat.input(i)->type());
      if (!in.has_value() || in->size() != out->size()) return false;
      for (int64_t a = 0; a < rank; ++a) {
        if (a != axis && (*in)[a] != (*out)[a]) return false;
      }
      const int64_t numel = NumElements(*in);
      const bool last = i + 1 == concat.num_inputs();
      if (!last && numel * static_cast<int64_t>(DTypeSize(dt)) % 64 != 0) return false;
      along += (*in)[axis];
      place.in_dims.push_back(*std::move(in));
      place.offset.push_back(offset);
      offset += numel;
    }
    if (along != (*out)[axis]) return false;
    place.out_dims = *std::move(out);
    return true;
  };
  // Output `v` of `node` (of dtype `dt` and shape `dims`) as its slice of the output of the
  // Concat it is computed for, or an undefined tensor: it is computed on its own (and copied).
  auto in_concat = [&](const ir::Node& node, const ir::Value* v, DType dt,
                       const Dims& dims) -> absl::StatusOr<Tensor> {
    auto slot = concat_slots_.find(v);
    if (slot == concat_slots_.end()) return Tensor();
    const ir::Node& concat = *slot->second.concat;
    auto [it, first] = concat_places.try_emplace(&concat);
    ConcatPlace& place = it->second;
    if (first) place.usable = place_concat(concat, dt, place);
    if (!place.usable) return Tensor();
    if (!place.buffer.defined()) {
      QCC_ASSIGN_OR_RETURN(place.buffer, allocate(node, dt, place.out_dims, [&] {
                             return absl::StrCat("output of '", concat.name(), "' (Concat) ",
                                                 DTypeName(dt), DimsToString(place.out_dims));
                           }));
    }
    const int i = slot->second.index;
    if (place.buffer.dtype() != dt || place.in_dims[i] != dims) return Tensor();
    const std::shared_ptr<uint8_t>& storage = place.buffer.storage();
    return Tensor(
        dt, dims,
        std::shared_ptr<uint8_t>(storage, storage.get() + place.offset[i] * DTypeSize(dt)));
  };

  // The fp32 form of an fp16 value (the per-run one an op made, or a widened constant), or
  // nullptr.
  auto wide_form = [&](const ir::Value* v) -> const Tensor* {
    if (v == nullptr) return nullptr;
    if (auto w = widened.find(v); w != widened.end()) return &w->second;
    if (auto c = widened_constants_.find(v); c != widened_constants_.end()) return &c->second;
    return nullptr;
  };
  // `v` as the graph types it: an fp16 value that lives in its fp32 form only gets its fp16
  // tensor now (exact: the values are fp16's), in the arena for `node` (nullptr: a graph output),
  // kept for the readers after this one.
  auto typed = [&](const ir::Node* node, const ir::Value* v) -> absl::StatusOr<Tensor> {
    Tensor t = lookup(v);
    if (t.defined() || v == nullptr) return t;
    auto w = widened.find(v);
    if (w == widened.end()) return t;
    if (node == nullptr) {
      t = NarrowFromF32(w->second, DType::kFloat16, options_.num_threads);
    } else {
      QCC_ASSIGN_OR_RETURN(t, allocate(*node, DType::kFloat16, w->second.dims(),
                                       [&] { return absl::StrCat("fp16 of '", v->name(), "'"); }));
      ConvertF32ToF16(t.numel(), w->second.data<float>(), t.data<uint16_t>(), options_.num_threads);
    }
    if (remaining[v] > 0) live[v] = t;
    return t;
  };

  // The context `node`'s kernel runs in: its operands, and a Conv's weights packed once.
  auto context_for = [&](const ir::Node& node, const std::vector<Tensor>& ins,
                         std::vector<Tensor>& outs) {
    OpContext ctx{node, absl::MakeConstSpan(ins), absl::MakeSpan(outs), options_.num_threads,
                  options_.on_observe ? &options_.on_observe : nullptr};
    if (auto packed = packed_conv_weights_.find(&node); packed != packed_conv_weights_.end()) {
      ctx.packed_conv_weights = &packed->second;
      if (auto e = packed_conv_extents_.find(&node); e != packed_conv_extents_.end()) {
        ctx.packed_conv_in = &e->second.first;
        ctx.packed_conv_out = &e->second.second;
      }
    }
    return ctx;
  };

  // The inputs of each Conv that runs in its Add's place (residual_adds_), from the Conv's
  // place to the Add's.
  absl::flat_hash_map<const ir::Node*, std::vector<Tensor>> deferred;
  // Drops one use of each input of `node`; a value with none left is freed.
  auto release_inputs = [&](const ir::Node& node) {
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr || --remaining[v] != 0) continue;
      live.erase(v);  // frees its storage, or its bytes in the arena, unless a view holds it
      widened.erase(v);
    }
  };

  // A node's operands, cleared for each (their capacity kept: a small model's nodes cost the
  // evaluator less than their allocations did).
  std::vector<Tensor> in, out;
  std::vector<ir::TensorType> in_types;
  std::vector<const Tensor*> in_values;
  int32_t step = 0;
  for (const auto& node : graph_.nodes()) {
    memory->SetStep(step++);
    if (auto fused = residual_adds_.find(node.get()); fused != residual_adds_.end()) {
      // The Add of a residual fusion: its Conv, with the residual, into the Add's output.
      const ir::Node& conv = *fused->second.conv;
      auto conv_in = deferred.find(node.get());
      const Tensor residual = lookup(fused->second.residual);
      if (conv_in == deferred.end() || !residual.defined()) {
        return absl::InternalError(absl::StrCat(
            "node '", node->name(), "': the Conv or residual it adds was not computed"));
      }
      out.clear();
      QCC_ASSIGN_OR_RETURN(Tensor y, allocate(*node, DType::kFloat32, residual.dims(), [&] {
                             return absl::StrCat("output 0 f32", DimsToString(residual.dims()));
                           }));
      out.push_back(std::move(y));
      OpContext ctx = context_for(conv, conv_in->second, out);
      ctx.residual = &residual;
      ctx.residual_add = node.get();
      QCC_RETURN_IF_ERROR(registry_.Find(ir::OpKind::kConv)->run(ctx));
      deferred.erase(conv_in);
      const ir::Value* v = node->output(0);
      if (remaining[v] > 0) live[v] = std::move(out[0]);
      out.clear();
      release_inputs(*node);
      if (options_.on_node_done) options_.on_node_done(*node);
      continue;
    }
    const OpEntry& entry = *registry_.Find(node->kind());
    const bool upcast = entry.float_policy == FloatPolicy::kComputeInF32;
    // An op that moves elements without reading them runs on the fp32 forms when every fp16
    // input has one (a graph input in fp16 has none until an fp32 op widens it).
    bool move_wide = false;
    if (entry.float_policy == FloatPolicy::kMovesElements) {
      bool all = true;
      for (const ir::Value* v : node->inputs()) {
        if (v == nullptr) continue;
        if (wide_form(v) != nullptr) {
          move_wide = true;
        } else if (const Tensor t = lookup(v); t.defined() && t.dtype() == DType::kFloat16) {
          all = false;
        }
      }
      move_wide = move_wide && all;
    }
    in.clear();
    in_types.clear();
    in_values.clear();
    for (const ir::Value* v : node->inputs()) {
      const Tensor* wide = upcast || move_wide ? wide_form(v) : nullptr;
      if (wide != nullptr) {
        in.push_back(*wide);
        in_types.push_back(ir::TensorType(
            DType::kFloat16, std::vector<ir::Dim>(wide->dims().begin(), wide->dims().end())));
        continue;
      }
      QCC_ASSIGN_OR_RETURN(Tensor t, typed(node.get(), v));
      if (v != nullptr && !t.defined()) {
        return absl::InternalError(absl::StrCat("node '", node->name(), "': input '", v->name(),
                                                "' has not been computed"));
      }
      in_types.push_back(
          t.defined()
              ? ir::TensorType(t.dtype(), std::vector<ir::Dim>(t.dims().begin(), t.dims().end()))
              : ir::TensorType());
      in.push_back(std::move(t));
    }
    if (residual_convs_.contains(node.get())) {
      // Runs in its Add's place (residual_adds_); its inputs are held until then.
      deferred[node->output(0)->uses()[0].node] = std::move(in);
      in.clear();  // moved from: empty again
      release_inputs(*node);
      if (options_.on_node_done) options_.on_node_done(*node);
      continue;
    }
    for (const Tensor& t : in) in_values.push_back(t.defined() ? &t : nullptr);
    QCC_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types,
                         ir::InferNode(*node, in_types, in_values));
    if (upcast) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].defined() || !IsReducedFloat(in[i].dtype())) continue;
        const ir::Value* v = node->input(static_cast<int>(i));
        if (in[i].dtype() == DType::kFloat16 && v != nullptr && v->constant() == nullptr) {
          // An fp16 value with no fp32 form yet (a graph input, or an op's that ran on fp16):
          // widened once, into the arena, for this reader and the ones after it.
          QCC_ASSIGN_OR_RETURN(Tensor wide, allocate(*node, DType::kFloat32, in[i].dims(), [&] {
                                 return absl::StrCat("fp32 input ", i);
                               }));
          ConvertF16ToF32(in[i].numel(), in[i].data<uint16_t>(), wide.data<float>(),
                          options_.num_threads);
          in[i] = widened[v] = std::move(wide);
        } else {
          in[i] = WidenToF32(in[i], options_.num_threads);
        }
      }
    }
    out.clear();
    for (size_t i = 0; i < out_types.size(); ++i) {
      const ir::TensorType& tt = out_types[i];
      if (!tt.IsStatic()) {
        return absl::InternalError(absl::StrCat("node '", node->name(), "' (",
                                                ir::OpName(node->kind()),
                                                "): output shape could not be computed"));
      }
      const DType dt =
          (upcast && IsReducedFloat(tt.dtype)) || (move_wide && tt.dtype == DType::kFloat16)
              ? DType::kFloat32
              : tt.dtype;
      Dims dims = tt.StaticDims();
      if (node->kind() == ir::OpKind::kConcat) {
        // The output its inputs were computed in (or some of them: the kernel copies the
        // others), released here in any case.
        if (auto place = concat_places.find(node.get()); place != concat_places.end()) {
          Tensor buffer = std::move(place->second.buffer);
          const bool fits = place->second.out_dims == dims;
          concat_places.erase(place);
          if (buffer.defined() && buffer.dtype() == dt && fits) {
            out.push_back(std::move(buffer));
            continue;
          }
        }
      }
      QCC_ASSIGN_OR_RETURN(Tensor slice,
                           in_concat(*node, node->output(static_cast<int>(i)), dt, dims));
      if (slice.defined()) {
        out.push_back(std::move(slice));
        continue;
      }
      const int reuse = i == 0 && entry.may_run_in_place ? in_place_input(*node, in, dt, dims) : -1;
      if (reuse >= 0) {
        out.push_back(Tensor(dt, std::move(dims), in[reuse].storage()));
        continue;
      }
      auto what = [&] {
        return absl::StrCat("output ", i, " ", DTypeName(dt), DimsToString(tt.StaticDims()));
      };
      QCC_ASSIGN_OR_RETURN(Tensor t, allocate(*node, dt, std::move(dims), what));
      out.push_back(std::move(t));
    }
    OpContext ctx = context_for(*node, in, out);
    ctx.round_to_f16 = upcast && !out.empty() && out[0].dtype() == DType::kFloat32 &&
                       out_types[0].dtype == DType::kFloat16;
    QCC_RETURN_IF_ERROR(entry.run(ctx));
    for (size_t i = 0; i < out.size(); ++i) {
      const ir::Value* v = node->output(static_cast<int>(i));
      if (out[i].dtype() == DType::kFloat32 && out_types[i].dtype == DType::kFloat16) {
        // An fp16 value in its fp32 form: an fp32 op's result rounded to fp16 in place (a
        // mover's is already), its fp16 tensor made only for a reader that needs it.
        if (remaining[v] == 0 && !options_.on_value) continue;
        if (upcast && !(i == 0 && ctx.rounded_to_f16)) {
          RoundF32ToF16InPlace(out[i].numel(), out[i].data<float>(), options_.num_threads);
        }
        widened[v] = std::move(out[i]);
        if (options_.on_value) {
          QCC_ASSIGN_OR_RETURN(const Tensor half, typed(node.get(), v));
          options_.on_value(*v, half);
        }
        if (remaining[v] == 0) widened.erase(v);
        continue;
      }
      if (out[i].dtype() != out_types[i].dtype) {
        out[i] = NarrowFromF32(out[i], out_types[i].dtype, options_.num_threads);
      }
      if (options_.on_value) options_.on_value(*v, out[i]);
      if (remaining[v] > 0) live[v] = std::move(out[i]);
    }
    in.clear();
    out.clear();
    release_inputs(*node);
    if (options_.on_node_done) options_.on_node_done(*node);
  }

  std::vector<Tensor> results;
  for (const ir::Value* v : graph_.outputs()) {
    QCC_ASSIGN_OR_RETURN(Tensor t, typed(nullptr, v));
    if (!t.defined()) {
      return absl::InternalError(absl::StrCat("graph output '", v->name(), "' was not computed"));
    }
    results.push_back(t);
  }
  live.clear();
  widened.clear();
  arena_->Finish(std::move(memory));
  return results;
}

}  // namespace qcc::cpu
