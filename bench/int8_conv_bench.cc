// int8 against fp32 convolution on the layers of resnet20-cifar10 at batch 32 (Google
// Benchmark): our fp32 conv (ConvF32, AVX-512 where the CPU has it), the int8 reference
// (QConvReference, the contract in scalar C++) and the int8 fast path (QConv: VNNI, else AVX2).
// Layers 6 to 8 are MobileNet-style extras (depthwise 3x3, stride 1 and 2, and a pointwise 1x1),
// layer 9 an ImageNet stem (3 channels in, 3x3 stride 2, on 112x112 to keep batch 32 small),
// layers 10 to 15 efficientnet-lite0's (1x1 convs at 112, 7 and 14; depthwise at 7 and 28),
// 16 squeezenet1.1's conv10 (1x1 at 13x13), 17 and 18 efficientnet-lite0's head and an expand,
// 19 to 21 squeezenet1.1's 3x3 expand convs at 13x13 and 27x27, 22 and 23 efficientnet-lite0's
// 1x1 expands at 14x14 and 56x56.
// Each benchmark reports GOPS (2 ops per multiply-add); the Resnet20Convs* ones run all 19
// convolutions of the network in order, so their ratio is the conv part of the int8 speed-up.
//
//   build-x/bench/int8_conv_bench --benchmark_filter=Resnet20
//   build-x/bench/int8_conv_bench --benchmark_filter='Layer.*/3/'   (one layer, all variants)
//   build-x/bench/int8_conv_bench --benchmark_filter='LayerInt8Fast/11/1/1/'   (threads 1, batch 1)
//   build-x/bench/int8_conv_bench --benchmark_filter='LayerInt8FastAdd/1/'   (with a fused residual
//   Add)
//   build-x/bench/int8_conv_bench --benchmark_filter='LayerInt8Avx2/1/'   (the AVX2 path, which
//   AVX2-only CPUs run, measured on any CPU with AVX2)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/qconv.h"

namespace qcc::cpu {
namespace {

constexpr int64_t kBatch = 32;  // the Resnet20Convs ones; layers run at batch 1 and 32

struct Layer {
  int64_t c, k, hw, stride, count;  // `count` layers of this shape in resnet20
  int64_t kernel = 3, group = 1;    // square kernel, pad kernel / 2
};
const Layer kLayers[] = {{3, 16, 32, 1, 1},
                         {16, 16, 32, 1, 6},
                         {16, 32, 32, 2, 1},
                         {32, 32, 16, 1, 5},
                         {32, 64, 16, 2, 1},
                         {64, 64, 8, 1, 5},
                         {96, 96, 28, 1, 0, 3, 96},
                         {96, 96, 28, 2, 0, 3, 96},
                         {96, 32, 28, 1, 0, 1},
                         {3, 64, 112, 2, 0},
                         {16, 96, 112, 1, 0, 1},
                         {1152, 192, 7, 1, 0, 1},
                         {480, 80, 14, 1, 0, 1},
                         {1152, 1152, 7, 1, 0, 3, 1152},
                         {1152, 1152, 7, 1, 0, 5, 1152},
                         {240, 240, 28, 2, 0, 3, 240},
                         {512, 1000, 13, 1, 0, 1},
                         {320, 1280, 7, 1, 0, 1},
                         {192, 1152, 7, 1, 0, 1},
                         {48, 192, 13, 1, 0},
                         {64, 256, 13, 1, 0},
                         {32, 128, 27, 1, 0},
                         {80, 480, 14, 1, 0, 1},
                         {24, 144, 56, 1, 0, 1}};

int64_t Pad(const Layer& l) { return l.kernel / 2; }
int64_t OutHw(const Layer& l) { return (l.hw + 2 * Pad(l) - l.kernel) / l.stride + 1; }
int64_t Macs(const Layer& l, int64_t batch) {
  return batch * l.k * OutHw(l) * OutHw(l) * l.c / l.group * l.kernel * l.kernel;
}

/// fp32 operands of one layer, ready for ConvF32.
struct F32Conv {
  ConvF32Params p;
  std::vector<float> x, w, bias, y, workspace;

  F32Conv(const Layer& l, int threads, std::mt19937& rng, int64_t batch = kBatch) {
    p.batch = batch;
    p.in_channels = l.c;
    p.out_channels = l.k;
    p.groups = l.group;
    p.in = {1, l.hw, l.hw};
    p.out = {1, OutHw(l), OutHw(l)};
    p.kernel = {1, l.kernel, l.kernel};
    p.stride = {1, l.stride, l.stride};
    p.pad = {0, Pad(l), Pad(l)};
    p.num_threads = threads;
    p.activation.lo = 0.0f;  // a fused ReLU, as in the network
    std::normal_distribution<float> normal;
    x.resize(batch * l.c * l.hw * l.hw);
    w.resize(l.k * l.c / l.group * l.kernel * l.kernel);
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng) * 0.1f;
    bias.assign(l.k, 0.01f);
    y.resize(batch * l.k * OutHw(l) * OutHw(l));
    workspace.resize(ConvF32WorkspaceSize(p));
  }
  void Run() { ConvF32(p, x.data(), w.data(), bias.data(), y.data(), workspace.data()); }
};

/// int8 operands of one layer, weights packed once as the runtime does.
struct Int8Conv {
  QConvParams p;
  std::vector<int8_t> x, w, y;
  std::vector<int32_t> bias;
  std::vector<float> multiplier;
  std::vector<uint8_t> workspace;
  PackedQConvWeights packed;

  Int8Conv(const Layer& l, int threads, std::mt19937& rng, int64_t batch = kBatch,
           QKernelPath path = QKernelPath::kFastest) {
    p.n = batch;
    p.c = l.c;
    p.h = p.w = l.hw;
    p.k = l.k;
    p.r = p.s = l.kernel;
    p.group = l.group;
    p.stride_h = p.stride_w = l.stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = Pad(l);
    p.lo = 0;  // a fused ReLU
    p.num_threads = threads;
    std::uniform_int_distribution<int> byte(-128, 127), weight(-127, 127);
    x.resize(batch * l.c * l.hw * l.hw);
    w.resize(l.k * l.c / l.group * l.kernel * l.kernel);
    for (int8_t& v : x) v = static_cast<int8_t>(byte(rng));
    for (int8_t& v : w) v = static_cast<int8_t>(weight(rng));
    bias.assign(l.k, 100);
    multiplier.assign(l.k, 0.0005f);
    y.resize(batch * l.k * OutHw(l) * OutHw(l));
    p.input = x.data();
    p.weights = w.data();
    p.bias = bias.data();
    p.multiplier = multiplier.data();
    p.output = y.data();
    packed = PackQConvWeights(p, path);
    workspace.resize(QConvWorkspaceBytes(p, packed));
  }
  void Run() { QConv(p, packed, workspace.data()); }
  /// Fuses a residual Add after the conv (a ResNet block's second conv), as QConvAdd steps run.
  void AddResidual(std::mt19937& rng) {
    residual.resize(y.size());
    std::uniform_int_distribution<int> byte(-128, 127);
    for (int8_t& v : residual) v = static_cast<int8_t>(byte(rng));
    p.residual = residual.data();
    p.add = AddS8Params{0, 0.6f, 0, 0.7f, 0, 0, 127};  // zp_a, mult_a, zp_b, mult_b, zp, lo, hi
    workspace.resize(QConvWorkspaceBytes(p, packed));
  }
  std::vector<int8_t> residual;
};

void SetOps(benchmark::State& state, int64_t macs) {
  state.counters["GOPS"] = benchmark::Counter(2.0 * static_cast<double>(macs) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Args: {layer index, threads, batch}.
void BM_LayerF32(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  std::mt19937 rng(1);
  F32Conv conv(l, threads, rng, state.range(2));
  for (auto _ : state) conv.Run();
  SetOps(state, Macs(l, state.range(2)));
}

/// The int8 fast path; with `kResidual`, with a fused residual Add (QConvParams::residual), as
/// a ResNet block's second conv runs.
template <bool kResidual>
void BM_LayerInt8Fast(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  std::mt19937 rng(1);
  Int8Conv conv(l, static_cast<int>(state.range(1)), rng, state.range(2));
  if (conv.packed.layout == PackedQConvWeights::Layout::kReference) {
    state.SkipWithError(
        "no int8 fast path (AVX-512 VNNI or AVX2) on this CPU: QConv runs the reference");
  }
  if (kResidual) conv.AddResidual(rng);
  for (auto _ : state) conv.Run();
  SetOps(state, Macs(l, state.range(2)));
}

/// The AVX2 int8 path (the one AVX2-only CPUs run), also on a CPU with VNNI.
void BM_LayerInt8Avx2(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  std::mt19937 rng(1);
  Int8Conv conv(l, static_cast<int>(state.range(1)), rng, state.range(2), QKernelPath::kAvx2);
  if (conv.packed.layout == PackedQConvWeights::Layout::kReference) {
    state.SkipWithError("no AVX2 on this CPU: QConv runs the reference");
  }
  for (auto _ : state) conv.Run();
  SetOps(state, Macs(l, state.range(2)));
}

void BM_LayerInt8Reference(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  std::mt19937 rng(1);
  Int8Conv conv(l, static_cast<int>(state.range(1)), rng, state.range(2));
  for (auto _ : state) QConvReference(conv.p);
  SetOps(state, Macs(l, state.range(2)));
}

void LayerArgs(benchmark::internal::Benchmark* b) {
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(kLayers)); ++i) {
    for (int64_t batch : {int64_t{1}, kBatch}) {
      for (int64_t threads : {1, 2}) b->Args({i, threads, batch});
    }
  }
}

BENCHMARK(BM_LayerF32)->Apply(LayerArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_LayerInt8Fast, false)
    ->Name("BM_LayerInt8Fast")
    ->Apply(LayerArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_LayerInt8Fast, true)
    ->Name("BM_LayerInt8FastAdd")
    ->Apply(LayerArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerInt8Avx2)->Apply(LayerArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerInt8Reference)
    ->Apply(LayerArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

/// All 19 convolutions of resnet20 (each layer shape `count` times). Arg: threads.
template <typename ConvT>
void BM_Resnet20Convs(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::mt19937 rng(1);
  std::vector<ConvT> convs;
  std::vector<int64_t> counts;
  int64_t macs = 0;
  for (const Layer& l : kLayers) {
    if (l.count == 0) continue;
    convs.emplace_back(l, threads, rng);
    counts.push_back(l.count);
    macs += l.count * Macs(l, kBatch);
  }
  for (auto _ : state) {
    for (size_t i = 0; i < convs.size(); ++i) {
      for (int64_t j = 0; j < counts[i]; ++j) convs[i].Run();
    }
  }
  SetOps(state, macs);
}

BENCHMARK_TEMPLATE(BM_Resnet20Convs, F32Conv)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Resnet20Convs, Int8Conv)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace qcc::cpu

BENCHMARK_MAIN();
