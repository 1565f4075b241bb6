// The nn op group on the CPU: registration and the helpers its adapters share. The adapters
// themselves are in nn_conv.cc, nn_pool.cc, nn_norm.cc and nn_dense.cc.
#include <cstdlib>
#include <memory>
#include <new>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/nn_internal.h"

namespace qcc::cpu {

namespace nn {

absl::Status RequireF32Inputs(const OpContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != DType::kFloat32) {
      return ctx.Unsupported(absl::StrCat("no CPU kernel for ", DTypeName(ctx.input(i).dtype()),
                                          " input ", i, " (only f32, f16 and bf16)"));
    }
  }
  return absl::OkStatus();
}

float* ScratchF32(int64_t n) {
  // Page-aligned, so that the kernels' 64-byte vectors of it (im2col bands, Winograd tiles,
  // split inputs) never straddle a cache line. A std::vector's 16-byte alignment left that to
  // the heap: squeezenet1.1 at batch 1 ran 3-6% slower or faster (its Winograd layers 16%) as
  // an earlier layer's scratch grew by 600 bytes.
  constexpr size_t kAlign = 4096;
  struct Buffer {
    std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
    int64_t size = 0;
  };
  thread_local Buffer buffer;
  if (buffer.size < n) {
    buffer.data.reset();
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
    buffer.data.reset(static_cast<float*>(std::aligned_alloc(kAlign, bytes)));
    if (buffer.data == nullptr) throw std::bad_alloc();
    buffer.size = n;
  }
  return buffer.data.get();
}

absl::StatusOr<std::array<int64_t, 3>> Spatial3(const OpContext& ctx, const std::vector<int64_t>& v,
                                                int64_t fill) {
  if (v.size() > 3) {
    return ctx.Unsupported(absl::StrCat(v.size(), " spatial axes (the CPU kernels take 1 to 3)"));
  }
  std::array<int64_t, 3> out{fill, fill, fill};
  std::copy(v.begin(), v.end(), out.begin() + (3 - v.size()));
  return out;
}

std::vector<int64_t> SpatialDims(const Tensor& t) {
  return std::vector<int64_t>(t.dims().begin() + 2, t.dims().end());
}

absl::StatusOr<std::vector<ir::WindowAxis>> ForwardWindows(const OpContext& ctx,
                                                           const ir::WindowSpec& spec,
                                                           const std::vector<int64_t>& in) {
  std::vector<ir::WindowAxis> axes;
  for (size_t i = 0; i < in.size(); ++i) {
    auto w = ir::ForwardWindowAxis(spec, static_cast<int64_t>(i), in[i]);
    if (!w.ok()) return ctx.Error(w.status().message());
    axes.push_back(*w);
  }
  return axes;
}

}  // namespace nn

void RegisterNnOps(OpRegistry& registry) {
  nn::RegisterConvOps(registry);
  nn::RegisterPoolOps(registry);
  nn::RegisterNormOps(registry);
  nn::RegisterDenseOps(registry);
}

}  // namespace qcc::cpu
