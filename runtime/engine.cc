#include "runtime/engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "runtime/batch_slices.h"
#include "runtime/plan_format.h"
#include "runtime/step_exec.h"
#include "runtime/steps.h"
#include "support/float16.h"
#include "support/memory.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

std::string Describe(DType dtype, absl::Span<const int64_t> dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "N" : absl::StrCat(d));
  return absl::StrCat(DTypeName(dtype), " [", absl::StrJoin(parts, ","), "]");
}

/// fp16 plans store their float weights as f16; the CPU computes in fp32 from that storage, so
/// every f16 weight buffer is widened to f32 once, here (the steps then see f32 weights). The
/// widened copies are appended to the plan's weight section (a mapped section is copied first).
absl::Status WidenHalfWeights(Plan& plan) {
  for (PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::kWeight || b.dtype != DType::kFloat16) continue;
    const absl::Span<const uint8_t> bytes = plan.Weight(b.weight);
    const size_t n = bytes.size() / 2;
    std::vector<float> wide(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      wide[i] = HalfToFloat(h);
    }
    const PlanWeight& old = plan.weights[b.weight];
    b.weight = plan.AddWeight(old.name + ":f32", DType::kFloat32, old.dims, wide.data(),
                              n * sizeof(float));
    b.dtype = DType::kFloat32;
  }
  return absl::OkStatus();
}

}  // namespace

Engine::Engine() = default;
Engine::~Engine() = default;

absl::StatusOr<std::shared_ptr<const Engine>> Engine::Create(Plan plan, EngineOptions options) {
  return CreateFrom(std::move(plan), options, "plan");
}

absl::StatusOr<std::shared_ptr<const Engine>> Engine::Load(const std::string& path,
                                                           EngineOptions options) {
  QCC_ASSIGN_OR_RETURN(Plan plan, ReadPlan(path));
  return CreateFrom(std::move(plan), options, path);
}

absl::StatusOr<std::shared_ptr<const Engine>> Engine::CreateFrom(Plan plan, EngineOptions options,
                                                                 const std::string& source) {
  QCC_RETURN_IF_ERROR(ValidatePlan(plan, source));
  // The manifest says how large an arena every context needs: refuse before anyone allocates it.
  QCC_RETURN_IF_ERROR(
      CheckMemory(plan.arena_bytes, 0, options.max_memory,
                  absl::StrCat(source, ": the plan's arena at batch ", plan.batch_max)));
  std::shared_ptr<Engine> engine(new Engine);
  engine->max_memory_ = options.max_memory;
  engine->plan_ = std::move(plan);
  const Plan& p = engine->plan_;
  int threads = options.num_threads;
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  engine->num_threads_ = std::clamp(threads, 1, cpu::kMaxParallelThreads);
  if (options.slice_images == 0) {
    engine->slice_images_ = SliceImages(p);
  } else if (options.slice_images > 0 && p.batch_max > 1 && ImagesIndependent(p)) {
    engine->slice_images_ = std::min(options.slice_images, p.batch_max);
  }

  QCC_RETURN_IF_ERROR(WidenHalfWeights(engine->plan_));
  engine->weight_addresses_.assign(p.buffers.size(), nullptr);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].kind == BufferKind::kWeight) {
      engine->weight_addresses_[i] = const_cast<uint8_t*>(p.Weight(p.buffers[i].weight).data());
    }
  }
  for (const auto& [bindings, infos] : {std::make_pair(&p.inputs, &engine->inputs_),
                                        std::make_pair(&p.outputs, &engine->outputs_)}) {
    for (const Binding& b : *bindings) {
      const PlanBuffer& buffer = p.buffers[b.buffer];
      infos->push_back({b.name, buffer.dtype, buffer.dims});
    }
  }

  const StepRegistry& registry = CpuStepRegistry();
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& step = p.steps[i];
    const PrepareStepFn prepare = registry.Find(step.kind);
    if (prepare == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": step ", i, " '", step.name, "' has unknown kind ", step.kind,
          " (this runtime knows kinds 0 to ", static_cast<uint32_t>(StepKind::kNumStepKinds) - 1,
          "; the plan may come from a newer qcc: recompile it with this version)"));
    }
    absl::StatusOr<std::unique_ptr<PreparedStep>> prepared =
        prepare(StepPrepareContext(p, i, engine->num_threads_));
    if (!prepared.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", prepared.status().message()));
    }
    engine->steps_.push_back(std::move(*prepared));
    if (step.kind == static_cast<uint32_t>(StepKind::kGather)) {
      const PlanBuffer& data = p.buffers[step.inputs[0]];
      const int64_t rank = static_cast<int64_t>(data.dims.size());
      int64_t axis = step.ints.empty() ? 0 : step.ints[0];  // prepared: in [-rank, rank)
      if (axis < 0) axis += rank;
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        if (p.inputs[k].buffer == step.inputs[1] && data.dims[axis] >= 0) {
          engine->index_checks_.push_back({k, data.dims[axis], step.name});
        }
      }
    }
  }
  return std::shared_ptr<const Engine>(std::move(engine));
}

std::unique_ptr<ExecutionContext> Engine::CreateContext() const {
  return std::make_unique<ExecutionContext>(shared_from_this());
}

uint64_t Engine::ArenaBytesAt(int64_t batch) const {
  uint64_t end = 0;
  for (const PlanBuffer& b : plan_.buffers) {
    if (b.kind != BufferKind::kArena) continue;
    end = std::max(end, static_cast<uint64_t>(b.arena_offset) + BufferBytes(b, batch).value_or(0));
  }
  return std::min<uint64_t>(end, plan_.arena_bytes);
}

absl::StatusOr<int64_t> Engine::CheckInputs(absl::Span<const Tensor> inputs) const {
  if (inputs.size() != inputs_.size()) {
    std::vector<std::string> names;
    for (const TensorInfo& info : inputs_) names.push_back(absl::StrCat("'", info.name, "'"));
    return absl::InvalidArgumentError(absl::StrCat("expected ", inputs_.size(), " inputs (",
                                                   absl::StrJoin(names, ", "), "), got ",
                                                   inputs.size()));
  }
  int64_t batch = -1;
  size_t batch_from = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = inputs_[i];
    const Tensor& t = inputs[i];
    const bool dynamic = !info.dims.empty() && info.dims[0] == -1;
    bool match = t.dtype() == info.dtype && t.dims().size() == info.dims.size();
    for (size_t a = dynamic ? 1 : 0; match && a < info.dims.size(); ++a) {
      match = t.dims()[a] == info.dims[a];
    }
    const std::string expected = absl::StrCat(
        "expected ", Describe(info.dtype, info.dims),
        dynamic ? absl::StrCat(" (batch in [", batch_min(), ", ", batch_max(), "])") : "");
    if (!match) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " '", info.name, "': ", expected,
                                                     ", got ", Describe(t.dtype(), t.dims())));
    }
    if (!dynamic) continue;
    const int64_t b = t.dims()[0];
    if (b < batch_min() || b > batch_max()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " '", info.name, "': batch ", b,
                                                     " is outside the plan's range: ", expected,
                                                     ", got ", Describe(t.dtype(), t.dims())));
    }
    if (batch != -1 && b != batch) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " '", info.name, "' has batch ", b, " but input ", batch_from,
                       " '", inputs_[batch_from].name, "' has batch ", batch,
                       ": every input must have the same batch"));
    }
    batch = b;
    batch_from = i;
  }
  for (const IndexCheck& check : index_checks_) {
    const Tensor& t = inputs[check.input];
    for (int64_t j = 0; j < t.numel(); ++j) {
      const int64_t id = t.GetAsInt64(j);
      if (id < -check.extent || id >= check.extent) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", check.input, " '", inputs_[check.input].name, "': id ", id,
                         " at element ", j, " is outside the table of ", check.extent,
                         " rows that step '", check.step, "' looks it up in"));
      }
    }
  }
  return batch == -1 ? batch_max() : batch;
}

Dims Engine::OutputDims(size_t i, int64_t batch) const {
  return DimsAtBatch(plan_.buffers[plan_.outputs[i].buffer], batch);
}

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine)
    : engine_(std::move(engine)) {}

ExecutionContext::~ExecutionContext() = default;

absl::StatusOr<std::vector<Tensor>> ExecutionContext::Run(absl::Span<const Tensor> inputs) {
  QCC_ASSIGN_OR_RETURN(const int64_t batch, engine_->CheckInputs(inputs));
  std::vector<Tensor> outputs;
  outputs.reserve(engine_->outputs().size());
  for (size_t i = 0; i < engine_->outputs().size(); ++i) {
    outputs.emplace_back(engine_->outputs()[i].dtype, engine_->OutputDims(i, batch));
  }
  QCC_RETURN_IF_ERROR(Execute(inputs, absl::MakeSpan(outputs), batch));
  return outputs;
}

absl::Status ExecutionContext::RunInto(absl::Span<const Tensor> inputs,
                                       absl::Span<Tensor> outputs) {
  QCC_ASSIGN_OR_RETURN(const int64_t batch, engine_->CheckInputs(inputs));
  const std::vector<TensorInfo>& infos = engine_->outputs();
  if (outputs.size() != infos.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", infos.size(), " output tensors, got ", outputs.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Dims want = engine_->OutputDims(i, batch);
    if (outputs[i].dtype() != infos[i].dtype || outputs[i].dims() != want ||
        outputs[i].raw() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " '", infos[i].name, "': expected a tensor of ",
                       Describe(infos[i].dtype, want), ", got ",
                       Describe(outputs[i].dtype(), outputs[i].dims())));
    }
  }
  return Execute(inputs, outputs, batch);
}

absl::Status ExecutionContext::Reserve(std::shared_ptr<uint8_t>& storage, uint64_t& capacity,
                                       uint64_t bytes) {
  if (storage != nullptr && bytes <= capacity) return absl::OkStatus();
  const uint64_t held = arena_capacity_ + scratch_capacity_ - capacity;
  QCC_RETURN_IF_ERROR(
      CheckMemory(bytes, held, engine_->max_memory_, "the execution context's memory"));
  storage = AllocatePlanAligned(bytes);
  capacity = storage == nullptr ? 0 : bytes;
  if (storage == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of execution context memory"));
  }
  return absl::OkStatus();
}

absl::Status ExecutionContext::Execute(absl::Span<const Tensor> inputs, absl::Span<Tensor> outputs,
                                       int64_t batch) {
  const int64_t slice = engine_->slice_images_;
  if (slice == 0 || batch <= slice || observer_) return ExecuteImages(inputs, outputs, 0, batch);
  // Slices of equal size (32 by at most 12: 11 + 11 + 10), each run on the arena it leaves in
  // cache; ImagesIndependent says that they compute those rows of the batch's outputs.
  const int64_t slices = (batch + slice - 1) / slice;
  for (int64_t i = 0; i < slices; ++i) {
    const int64_t first = i * batch / slices;
    QCC_RETURN_IF_ERROR(ExecuteImages(inputs, outputs, first, (i + 1) * batch / slices - first));
  }
  return absl::OkStatus();
}

absl::Status ExecutionContext::ExecuteImages(absl::Span<const Tensor> inputs,
                                             absl::Span<Tensor> outputs, int64_t first,
                                             int64_t batch) {
  const Engine& engine = *engine_;
  const Plan& plan = engine.plan_;
  QCC_RETURN_IF_ERROR(Reserve(arena_, arena_capacity_, engine.ArenaBytesAt(batch)));
  buffers_ = engine.weight_addresses_;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].kind == BufferKind::kArena) {
      buffers_[i] = arena_.get() + plan.buffers[i].arena_offset;
    }
  }
  // A binding without a batch (a plan that is never sliced) starts at its first byte.
  const auto image = [first](const PlanBuffer& b, const Tensor& t) {
    return static_cast<uint8_t*>(const_cast<void*>(t.raw())) +
           (first == 0 ? 0 : first * static_cast<int64_t>(BufferBytes(b, 1).value_or(0)));
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int32_t id = plan.inputs[i].buffer;
    buffers_[id] = image(plan.buffers[id], inputs[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int32_t id = plan.outputs[i].buffer;
    buffers_[id] = image(plan.buffers[id], outputs[i]);
  }

  StepRunContext ctx;
  ctx.plan = &plan;
  ctx.buffers = &buffers_;
  ctx.batch = batch;
  ctx.num_threads = engine.num_threads_;
  for (size_t i = 0; i < engine.steps_.size(); ++i) {
    ctx.step = &plan.steps[i];
    ctx.scratch = nullptr;
    const int64_t scratch = engine.steps_[i]->ScratchBytes(ctx);
    if (scratch > 0) {
      QCC_RETURN_IF_ERROR(Reserve(scratch_, scratch_capacity_, static_cast<uint64_t>(scratch)));
      ctx.scratch = scratch_.get();
    }
    engine.steps_[i]->Run(ctx);
    if (observer_) {
      for (int32_t id : plan.steps[i].outputs) {
        const PlanBuffer& b = plan.buffers[id];
        Dims dims(b.dims.begin(), b.dims.end());
        if (!dims.empty() && dims[0] < 0) dims[0] = batch;
        // A non-owning view: the storage's deleter does nothing.
        std::shared_ptr<uint8_t> view(static_cast<uint8_t*>(buffers_[id]), [](uint8_t*) {});
        observer_(i, id, Tensor(b.dtype, std::move(dims), std::move(view)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace qcc::runtime
