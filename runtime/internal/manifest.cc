#include "runtime/internal/manifest.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace qcc::runtime::internal {
namespace {

// DTypes are stored as ONNX TensorProto.DataType numbers: stable, documented, and independent of
// the order of support/dtype.h's enum.
uint8_t DTypeCode(DType t) {
  switch (t) {
    case DType::kUndefined:
      return 0;
    case DType::kFloat32:
      return 1;
    case DType::kUInt8:
      return 2;
    case DType::kInt8:
      return 3;
    case DType::kUInt16:
      return 4;
    case DType::kInt16:
      return 5;
    case DType::kInt32:
      return 6;
    case DType::kInt64:
      return 7;
    case DType::kBool:
      return 9;
    case DType::kFloat16:
      return 10;
    case DType::kFloat64:
      return 11;
    case DType::kUInt32:
      return 12;
    case DType::kUInt64:
      return 13;
    case DType::kBFloat16:
      return 16;
    case DType::kFloat8E4M3:
      return 17;
  }
  return 0;
}

bool DTypeFromCode(uint8_t code, DType* t) {
  static constexpr DType kAll[] = {
      DType::kFloat32, DType::kUInt8,  DType::kInt8,     DType::kUInt16,    DType::kInt16,
      DType::kInt32,   DType::kInt64,  DType::kBool,     DType::kFloat16,   DType::kFloat64,
      DType::kUInt32,  DType::kUInt64, DType::kBFloat16, DType::kFloat8E4M3};
  for (DType d : kAll) {
    if (DTypeCode(d) == code) {
      *t = d;
      return true;
    }
  }
  return false;
}

// Minimum encoded sizes of one element, for ByteReader::Count.
constexpr size_t kMinString = 4;
constexpr size_t kMinList = 4;
constexpr size_t kMinWeight = kMinString + 1 + kMinList + 8 + 8;
constexpr size_t kMinBuffer = kMinString + 1 + 1 + kMinList + 8 + 4;
constexpr size_t kMinStep = 4 + kMinString + 4 * kMinList;
constexpr size_t kMinBinding = kMinString + 4;

void PutDims(ByteWriter& w, const std::vector<int64_t>& dims) {
  w.U32(static_cast<uint32_t>(dims.size()));
  for (int64_t d : dims) w.I64(d);
}

void PutBindings(ByteWriter& w, const std::vector<Binding>& bindings) {
  w.U32(static_cast<uint32_t>(bindings.size()));
  for (const Binding& b : bindings) {
    w.String(b.name);
    w.I32(b.buffer);
  }
}

bool GetDType(ByteReader& r, DType* t) {
  uint8_t code = 0;
  if (!r.U8(&code)) return false;
  if (!DTypeFromCode(code, t)) return r.Fail(absl::StrCat("unknown dtype code ", code));
  return true;
}

bool GetDims(ByteReader& r, std::vector<int64_t>* dims) {
  uint32_t n = 0;
  if (!r.Count(&n, 8)) return false;
  if (n > kMaxPlanRank) return r.Fail(absl::StrCat("rank ", n, " over the limit"));
  dims->resize(n);
  for (int64_t& d : *dims) {
    if (!r.I64(&d)) return false;
  }
  return true;
}

bool GetI32s(ByteReader& r, std::vector<int32_t>* v) {
  uint32_t n = 0;
  if (!r.Count(&n, 4)) return false;
  v->resize(n);
  for (int32_t& x : *v) {
    if (!r.I32(&x)) return false;
  }
  return true;
}

bool GetBindings(ByteReader& r, std::vector<Binding>* bindings) {
  uint32_t n = 0;
  if (!r.Count(&n, kMinBinding)) return false;
  bindings->resize(n);
  for (Binding& b : *bindings) {
    if (!r.String(&b.name, kMaxPlanNameBytes) || !r.I32(&b.buffer)) return false;
  }
  return true;
}

bool GetWeights(ByteReader& r, std::vector<PlanWeight>* weights) {
  uint32_t n = 0;
  if (!r.Count(&n, kMinWeight)) return false;
  weights->resize(n);
  for (PlanWeight& w : *weights) {
    if (!r.String(&w.name, kMaxPlanNameBytes) || !GetDType(r, &w.dtype) || !GetDims(r, &w.dims) ||
        !r.U64(&w.offset) || !r.U64(&w.nbytes)) {
      return false;
    }
  }
  return true;
}

bool GetBuffers(ByteReader& r, std::vector<PlanBuffer>* buffers) {
  uint32_t n = 0;
  if (!r.Count(&n, kMinBuffer)) return false;
  buffers->resize(n);
  for (PlanBuffer& b : *buffers) {
    uint8_t kind = 0;
    if (!r.String(&b.name, kMaxPlanNameBytes) || !GetDType(r, &b.dtype) || !r.U8(&kind)) {
      return false;
    }
    if (kind > static_cast<uint8_t>(BufferKind::kWeight)) {
      return r.Fail(absl::StrCat("unknown buffer kind ", kind));
    }
    b.kind = static_cast<BufferKind>(kind);
    if (!GetDims(r, &b.dims) || !r.I64(&b.arena_offset) || !r.I32(&b.weight)) return false;
  }
  return true;
}

bool GetSteps(ByteReader& r, std::vector<PlanStep>* steps) {
  uint32_t n = 0;
  if (!r.Count(&n, kMinStep)) return false;
  steps->resize(n);
  for (PlanStep& s : *steps) {
    uint32_t n_ints = 0;
    uint32_t n_floats = 0;
    if (!r.U32(&s.kind) || !r.String(&s.name, kMaxPlanNameBytes) || !GetI32s(r, &s.inputs) ||
        !GetI32s(r, &s.outputs) || !r.Count(&n_ints, 8)) {
      return false;
    }
    s.ints.resize(n_ints);
    for (int64_t& x : s.ints) {
      if (!r.I64(&x)) return false;
    }
    if (!r.Count(&n_floats, 4)) return false;
    s.floats.resize(n_floats);
    for (float& x : s.floats) {
      if (!r.F32(&x)) return false;
    }
  }
  return true;
}

// A "cuda" plan's kernel choices: a u32 count (the number of steps), then one u8 each.
bool GetCudaKernels(ByteReader& r, std::vector<PlanStep>* steps) {
  uint32_t n = 0;
  if (!r.Count(&n, 1)) return false;
  if (n != steps->size()) {
    return r.Fail(absl::StrCat(n, " CUDA kernel choices for ", steps->size(), " steps"));
  }
  for (PlanStep& s : *steps) {
    uint8_t k = 0;
    if (!r.U8(&k)) return false;
    if (k == 0 || k >= static_cast<uint8_t>(CudaKernel::kNumKernels)) {
      return r.Fail(absl::StrCat("invalid CUDA kernel ", k));
    }
    s.cuda_kernel = static_cast<CudaKernel>(k);
  }
  return true;
}

bool GetMetadata(ByteReader& r, std::map<std::string, std::string>* metadata) {
  uint32_t n = 0;
  if (!r.Count(&n, 2 * kMinString)) return false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string key;
    std::string value;
    if (!r.String(&key, kMaxPlanNameBytes) || !r.String(&value, r.remaining())) return false;
    if (!metadata->emplace(std::move(key), std::move(value)).second) {
      return r.Fail("duplicate metadata key");
    }
  }
  return true;
}

}  // namespace

void ByteWriter::F32(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, 4);
  U32(bits);
}

void ByteWriter::String(absl::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  out_.append(s.data(), s.size());
}

bool ByteReader::Fail(absl::string_view what) {
  if (error_.empty()) error_ = absl::StrCat(what, " at manifest byte ", pos_);
  return false;
}

bool ByteReader::Fixed(uint64_t* v, int n) {
  if (!ok()) return false;
  if (remaining() < static_cast<size_t>(n)) return Fail("unexpected end");
  uint64_t x = 0;
  for (int i = 0; i < n; ++i) x |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
  pos_ += n;
  *v = x;
  return true;
}

bool ByteReader::U8(uint8_t* v) {
  uint64_t x = 0;
  if (!Fixed(&x, 1)) return false;
  *v = static_cast<uint8_t>(x);
  return true;
}

bool ByteReader::U32(uint32_t* v) {
  uint64_t x = 0;
  if (!Fixed(&x, 4)) return false;
  *v = static_cast<uint32_t>(x);
  return true;
}

bool ByteReader::U64(uint64_t* v) { return Fixed(v, 8); }

bool ByteReader::I32(int32_t* v) {
  uint32_t x = 0;
  if (!U32(&x)) return false;
  *v = static_cast<int32_t>(x);
  return true;
}

bool ByteReader::I64(int64_t* v) {
  uint64_t x = 0;
  if (!U64(&x)) return false;
  *v = static_cast<int64_t>(x);
  return true;
}

bool ByteReader::F32(float* v) {
  uint32_t bits = 0;
  if (!U32(&bits)) return false;
  std::memcpy(v, &bits, 4);
  return true;
}

bool ByteReader::String(std::string* s, size_t max_bytes) {
  uint32_t n = 0;
  if (!U32(&n)) return false;
  if (n > max_bytes) return Fail(absl::StrCat("string of ", n, " bytes over the limit"));
  if (n > remaining()) return Fail(absl::StrCat("string of ", n, " bytes past the end"));
  s->assign(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return true;
}

bool ByteReader::Count(uint32_t* n, size_t min_element_bytes) {
  if (!U32(n)) return false;
  if (static_cast<uint64_t>(*n) * min_element_bytes > remaining()) {
    return Fail(absl::StrCat("count ", *n, " larger than the remaining ", remaining(), " bytes"));
  }
  return true;
}

std::string EncodeManifest(const Plan& plan) {
  ByteWriter w;
  w.String(plan.target);
  w.I64(plan.batch_min);
  w.I64(plan.batch_max);
  w.U64(plan.arena_bytes);
  w.U32(static_cast<uint32_t>(plan.metadata.size()));
  for (const auto& [key, value] : plan.metadata) {
    w.String(key);
    w.String(value);
  }
  w.U32(static_cast<uint32_t>(plan.weights.size()));
  for (const PlanWeight& x : plan.weights) {
    w.String(x.name);
    w.U8(DTypeCode(x.dtype));
    PutDims(w, x.dims);
    w.U64(x.offset);
    w.U64(x.nbytes);
  }
  w.U32(static_cast<uint32_t>(plan.buffers.size()));
  for (const PlanBuffer& b : plan.buffers) {
    w.String(b.name);
    w.U8(DTypeCode(b.dtype));
    w.U8(static_cast<uint8_t>(b.kind));
    PutDims(w, b.dims);
    w.I64(b.arena_offset);
    w.I32(b.weight);
  }
  w.U32(static_cast<uint32_t>(plan.steps.size()));
  for (const PlanStep& s : plan.steps) {
    w.U32(s.kind);
    w.String(s.name);
    w.U32(static_cast<uint32_t>(s.inputs.size()));
    for (int32_t x : s.inputs) w.I32(x);
    w.U32(static_cast<uint32_t>(s.outputs.size()));
    for (int32_t x : s.outputs) w.I32(x);
    w.U32(static_cast<uint32_t>(s.ints.size()));
    for (int64_t x : s.ints) w.I64(x);
    w.U32(static_cast<uint32_t>(s.floats.size()));
    for (float x : s.floats) w.F32(x);
  }
  PutBindings(w, plan.inputs);
  PutBindings(w, plan.outputs);
  if (plan.target == kCudaTarget) {
    w.U32(static_cast<uint32_t>(plan.steps.size()));
    for (const PlanStep& s : plan.steps) w.U8(static_cast<uint8_t>(s.cuda_kernel));
  }
  return w.Take();
}

absl::Status DecodeManifest(const uint8_t* data, size_t size, absl::string_view source,
                            Plan* plan) {
  ByteReader r(data, size);
  const bool ok = r.String(&plan->target, kMaxPlanNameBytes) && r.I64(&plan->batch_min) &&
                  r.I64(&plan->batch_max) && r.U64(&plan->arena_bytes) &&
                  GetMetadata(r, &plan->metadata) && GetWeights(r, &plan->weights) &&
                  GetBuffers(r, &plan->buffers) && GetSteps(r, &plan->steps) &&
                  GetBindings(r, &plan->inputs) && GetBindings(r, &plan->outputs) &&
                  (plan->target != kCudaTarget || GetCudaKernels(r, &plan->steps)) &&
                  (r.remaining() == 0 || r.Fail("trailing bytes"));
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": corrupt plan manifest (", r.error(),
      "); the file is damaged or was written by a different qcc: recompile the model"));
}

}  // namespace qcc::runtime::internal
