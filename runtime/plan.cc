#include "runtime/plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/memory.h"

namespace qcc::runtime {
namespace {

bool ValidName(absl::string_view name) {
  return name.size() <= kMaxPlanNameBytes && name.find('\0') == absl::string_view::npos;
}

bool ValidDType(DType t) { return t != DType::kUndefined && DTypeSize(t) != 0; }

std::string Quoted(absl::string_view name) { return absl::StrCat("'", name, "'"); }

// Collects the first violation with the plan's source and a way out.
class Checker {
 public:
  explicit Checker(absl::string_view source) : source_(source) {}
  absl::Status Fail(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": invalid plan: ", what));
  }

 private:
  absl::string_view source_;
};

absl::Status CheckBindings(const Plan& plan, bool outputs, const Checker& c) {
  const std::vector<Binding>& bindings = outputs ? plan.outputs : plan.inputs;
  const BufferKind want = outputs ? BufferKind::kOutput : BufferKind::kInput;
  const char* what = outputs ? "output" : "input";
  std::set<absl::string_view> names;
  std::set<int32_t> bound;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding& b = bindings[i];
    const std::string id = absl::StrCat(what, " ", i, " ", Quoted(b.name));
    if (b.name.empty() || !ValidName(b.name)) return c.Fail(absl::StrCat(id, ": invalid name"));
    if (!names.insert(b.name).second) return c.Fail(absl::StrCat(id, ": name bound twice"));
    if (b.buffer < 0 || static_cast<size_t>(b.buffer) >= plan.buffers.size()) {
      return c.Fail(absl::StrCat(id, ": buffer ", b.buffer, " out of range"));
    }
    if (plan.buffers[b.buffer].kind != want) {
      return c.Fail(absl::StrCat(id, ": buffer ", b.buffer, " is an ",
                                 BufferKindName(plan.buffers[b.buffer].kind), " buffer"));
    }
    if (!bound.insert(b.buffer).second) {
      return c.Fail(absl::StrCat(id, ": buffer ", b.buffer, " bound twice"));
    }
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].kind == want && bound.count(static_cast<int32_t>(i)) == 0) {
      return c.Fail(
          absl::StrCat(what, " buffer ", i, " ", Quoted(plan.buffers[i].name), " has no binding"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBuffer(const Plan& plan, size_t i, const Checker& c) {
  const PlanBuffer& b = plan.buffers[i];
  const std::string id = absl::StrCat("buffer ", i, " ", Quoted(b.name));
  if (!ValidName(b.name)) return c.Fail(absl::StrCat(id, ": invalid name"));
  if (!ValidDType(b.dtype)) return c.Fail(absl::StrCat(id, ": invalid dtype"));
  if (b.dims.size() > kMaxPlanRank) return c.Fail(absl::StrCat(id, ": rank over the limit"));
  for (size_t d = 0; d < b.dims.size(); ++d) {
    if (b.dims[d] < (d == 0 ? -1 : 0)) {
      return c.Fail(absl::StrCat(id, ": invalid extent ", b.dims[d], " on axis ", d));
    }
  }
  const std::optional<uint64_t> bytes = BufferBytes(b, plan.batch_max);
  if (!bytes) return c.Fail(absl::StrCat(id, ": size overflows"));
  const bool arena = b.kind == BufferKind::kArena;
  const bool weight = b.kind == BufferKind::kWeight;
  if (!arena && b.arena_offset != -1) return c.Fail(absl::StrCat(id, ": arena offset set"));
  if (!weight && b.weight != -1) return c.Fail(absl::StrCat(id, ": weight index set"));
  switch (b.kind) {
    case BufferKind::kArena: {
      const uint64_t off = static_cast<uint64_t>(b.arena_offset);
      if (b.arena_offset < 0 || off % kPlanAlignment != 0 || off > plan.arena_bytes ||
          *bytes > plan.arena_bytes - off) {
        return c.Fail(absl::StrCat(id, ": arena offset ", b.arena_offset, " + ", *bytes,
                                   " bytes is misaligned or outside the arena (", plan.arena_bytes,
                                   " bytes)"));
      }
      return absl::OkStatus();
    }
    case BufferKind::kInput:
    case BufferKind::kOutput:
      return absl::OkStatus();
    case BufferKind::kWeight: {
      if (b.weight < 0 || static_cast<size_t>(b.weight) >= plan.weights.size()) {
        return c.Fail(absl::StrCat(id, ": weight ", b.weight, " out of range"));
      }
      const PlanWeight& w = plan.weights[b.weight];
      if (!b.dims.empty() && b.dims[0] < 0) return c.Fail(absl::StrCat(id, ": dynamic weight"));
      if (b.dtype != w.dtype || *bytes != w.nbytes) {
        return c.Fail(absl::StrCat(id, ": dtype or size differs from weight ", b.weight));
      }
      return absl::OkStatus();
    }
  }
  return c.Fail(absl::StrCat(id, ": invalid kind"));
}

absl::Status CheckWeight(const Plan& plan, size_t i, const Checker& c) {
  const PlanWeight& w = plan.weights[i];
  const std::string id = absl::StrCat("weight ", i, " ", Quoted(w.name));
  if (!ValidName(w.name)) return c.Fail(absl::StrCat(id, ": invalid name"));
  if (!ValidDType(w.dtype)) return c.Fail(absl::StrCat(id, ": invalid dtype"));
  if (w.dims.size() > kMaxPlanRank) return c.Fail(absl::StrCat(id, ": rank over the limit"));
  const std::optional<uint64_t> bytes = DenseBytes(w.dtype, w.dims);
  if (!bytes || *bytes != w.nbytes) {
    return c.Fail(absl::StrCat(id, ": ", w.nbytes, " bytes do not match its dtype and dims"));
  }
  const uint64_t section = plan.weight_data.size();
  if (w.offset % kPlanAlignment != 0 || w.offset > section || w.nbytes > section - w.offset) {
    return c.Fail(absl::StrCat(id, ": bytes [", w.offset, ", +", w.nbytes,
                               ") misaligned or outside the weights section (", section,
                               " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status CheckStep(const Plan& plan, size_t i, const Checker& c) {
  const PlanStep& s = plan.steps[i];
  const std::string id = absl::StrCat("step ", i, " ", Quoted(s.name));
  if (!ValidName(s.name)) return c.Fail(absl::StrCat(id, ": invalid name"));
  for (int32_t in : s.inputs) {
    if (in < -1 || (in >= 0 && static_cast<size_t>(in) >= plan.buffers.size())) {
      return c.Fail(absl::StrCat(id, ": input buffer ", in, " out of range"));
    }
  }
  for (int32_t out : s.outputs) {
    if (out < 0 || static_cast<size_t>(out) >= plan.buffers.size()) {
      return c.Fail(absl::StrCat(id, ": output buffer ", out, " out of range"));
    }
    const BufferKind kind = plan.buffers[out].kind;
    if (kind != BufferKind::kArena && kind != BufferKind::kOutput) {
      return c.Fail(absl::StrCat(id, ": writes ", BufferKindName(kind), " buffer ", out));
    }
  }
  // A "cuda" plan records a kernel for every step, any other none (the format stores them for
  // "cuda" plans only).
  const bool cuda = plan.target == kCudaTarget;
  if (s.cuda_kernel >= CudaKernel::kNumKernels || (cuda && s.cuda_kernel == CudaKernel::kNone) ||
      (!cuda && s.cuda_kernel != CudaKernel::kNone)) {
    return c.Fail(absl::StrCat(id, ": CUDA kernel ", static_cast<int>(s.cuda_kernel),
                               " in a plan for target ", Quoted(plan.target)));
  }
  return absl::OkStatus();
}

}  // namespace

WeightSection WeightSection::View(std::shared_ptr<const void> owner, const uint8_t* data,
                                  uint64_t size) {
  static const Block kEmpty{};  // a non-null address for an empty view
  WeightSection s;
  s.owner_ = std::move(owner);
  s.view_ = size == 0 ? kEmpty.bytes : data;
  s.view_size_ = size;
  return s;
}

uint64_t WeightSection::Append(const void* bytes, uint64_t nbytes) {
  if (view_ != nullptr) {
    owned_.assign(AlignToPlan(view_size_) / kPlanAlignment, Block{});
    if (view_size_ != 0) std::memcpy(owned_.data(), view_, view_size_);
    owned_size_ = view_size_;
    view_ = nullptr;
    view_size_ = 0;
    owner_.reset();
  }
  const uint64_t offset = AlignToPlan(owned_size_);
  owned_.resize(AlignToPlan(offset + nbytes) / kPlanAlignment, Block{});
  if (nbytes != 0) std::memcpy(reinterpret_cast<uint8_t*>(owned_.data()) + offset, bytes, nbytes);
  owned_size_ = offset + nbytes;
  return offset;
}

int32_t Plan::AddWeight(std::string name, DType dtype, std::vector<int64_t> dims, const void* bytes,
                        uint64_t nbytes) {
  PlanWeight w;
  w.name = std::move(name);
  w.dtype = dtype;
  w.dims = std::move(dims);
  w.offset = weight_data.Append(bytes, nbytes);
  w.nbytes = nbytes;
  weights.push_back(std::move(w));
  return static_cast<int32_t>(weights.size() - 1);
}

absl::Span<const uint8_t> Plan::Weight(int32_t i) const {
  if (i < 0 || static_cast<size_t>(i) >= weights.size()) return {};
  const PlanWeight& w = weights[i];
  const uint64_t section = weight_data.size();
  if (w.offset > section || w.nbytes > section - w.offset) return {};
  return absl::Span<const uint8_t>(weight_data.data() + w.offset, w.nbytes);
}

std::optional<uint64_t> BufferBytes(const PlanBuffer& b, int64_t batch) {
  std::vector<int64_t> dims = b.dims;
  if (!dims.empty() && dims[0] == -1) dims[0] = batch;
  if (!ValidDType(b.dtype)) return std::nullopt;
  return DenseBytes(b.dtype, dims);
}

absl::Status ValidatePlan(const Plan& plan, absl::string_view source) {
  const Checker c(source);
  if (plan.target.empty() || plan.target.size() > 64 || !ValidName(plan.target)) {
    return c.Fail("invalid target name");
  }
  if (plan.batch_min < 1 || plan.batch_min > plan.batch_max || plan.batch_max > kMaxPlanBatch) {
    return c.Fail(absl::StrCat("invalid batch range [", plan.batch_min, ", ", plan.batch_max, "]"));
  }
  if (plan.arena_bytes > kMaxPlanArenaBytes) {
    return c.Fail(absl::StrCat("arena of ", plan.arena_bytes, " bytes is over the limit"));
  }
  for (const auto& [key, value] : plan.metadata) {
    if (key.empty() || !ValidName(key) || value.find('\0') != std::string::npos) {
      return c.Fail(absl::StrCat("invalid metadata entry ", Quoted(key)));
    }
  }
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    if (absl::Status s = CheckWeight(plan, i, c); !s.ok()) return s;
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (absl::Status s = CheckBuffer(plan, i, c); !s.ok()) return s;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (absl::Status s = CheckStep(plan, i, c); !s.ok()) return s;
  }
  if (absl::Status s = CheckBindings(plan, /*outputs=*/false, c); !s.ok()) return s;
  return CheckBindings(plan, /*outputs=*/true, c);
}

std::shared_ptr<uint8_t> AllocatePlanAligned(uint64_t bytes) {
  void* p = std::aligned_alloc(kPlanAlignment, std::max(AlignToPlan(bytes), kPlanAlignment));
  if (p == nullptr) return nullptr;
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

absl::string_view CudaKernelName(CudaKernel kernel) {
  switch (kernel) {
    case CudaKernel::kNone:
      return "none";
    case CudaKernel::kIm2colImma:
      return "im2col-imma";
    case CudaKernel::kImma:
      return "imma";
    case CudaKernel::kDirectQConv:
      return "direct-qconv";
    case CudaKernel::kIm2colGemm:
      return "im2col-gemm";
    case CudaKernel::kIm2colHalfGemm:
      return "im2col-gemm-fp16";
    case CudaKernel::kGemm:
      return "gemm";
    case CudaKernel::kDirectConv:
      return "direct-conv";
    case CudaKernel::kAlias:
      return "alias";
    case CudaKernel::kIndex:
      return "index";
    case CudaKernel::kNumKernels:
      break;
  }
  return "invalid";
}

absl::string_view BufferKindName(BufferKind kind) {
  switch (kind) {
    case BufferKind::kArena:
      return "arena";
    case BufferKind::kInput:
      return "input";
    case BufferKind::kOutput:
      return "output";
    case BufferKind::kWeight:
      return "weight";
  }
  return "invalid";
}

}  // namespace qcc::runtime
