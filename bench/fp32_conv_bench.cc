// The fp32 convolution kernels on the conv layers of two shared models (Google Benchmark):
// resnet20-cifar10 at batch 32 and squeezenet1.1 at batch 1, each layer through ConvF32 (the
// kernel this CPU dispatches to: AVX-512, else AVX2, microkernel) and through ConvF32Im2col
// (im2col + GemmF32, Eigen's sgemm: the path without either). Weights are packed once, as a plan's
// Conv step does. Each reports GFLOP/s (2 per multiply-add); compare the two at one thread count
// and repetition count (a noisy machine: use --benchmark_repetitions and the median or min).
//
//   build/bench/fp32_conv_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//   build/bench/fp32_conv_bench --benchmark_filter='/squeezenet'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/conv.h"

namespace qcc::cpu {
namespace {

struct Layer {
  const char* model;
  int64_t batch, c, k, hw, kernel, stride, pad;
  int64_t count;       // layers of this shape in the model
  int64_t groups = 1;  // c for a depthwise convolution
};
// squeezenet1.1: conv1, then the squeeze / expand 1x1 / expand 3x3 convs of its fire modules at
// 55x55, 27x27 and 13x13, and conv10.
const Layer kLayers[] = {
    {"resnet20", 32, 3, 16, 32, 3, 1, 1, 1},
    {"resnet20", 32, 16, 16, 32, 3, 1, 1, 6},
    {"resnet20", 32, 16, 32, 32, 3, 2, 1, 1},
    {"resnet20", 32, 32, 32, 16, 3, 1, 1, 5},
    {"resnet20", 32, 32, 64, 16, 3, 2, 1, 1},
    {"resnet20", 32, 64, 64, 8, 3, 1, 1, 5},
    {"squeezenet", 1, 3, 64, 224, 3, 2, 0, 1},
    {"squeezenet", 1, 64, 16, 55, 1, 1, 0, 1},
    {"squeezenet", 1, 128, 16, 55, 1, 1, 0, 1},
    {"squeezenet", 1, 16, 64, 55, 1, 1, 0, 2},
    {"squeezenet", 1, 16, 64, 55, 3, 1, 1, 2},
    {"squeezenet", 1, 128, 32, 27, 1, 1, 0, 1},
    {"squeezenet", 1, 256, 32, 27, 1, 1, 0, 1},
    {"squeezenet", 1, 32, 128, 27, 1, 1, 0, 2},
    {"squeezenet", 1, 32, 128, 27, 3, 1, 1, 2},
    {"squeezenet", 1, 256, 48, 13, 1, 1, 0, 1},
    {"squeezenet", 1, 384, 48, 13, 1, 1, 0, 1},
    {"squeezenet", 1, 48, 192, 13, 1, 1, 0, 2},
    {"squeezenet", 1, 48, 192, 13, 3, 1, 1, 2},
    {"squeezenet", 1, 384, 64, 13, 1, 1, 0, 1},
    {"squeezenet", 1, 512, 64, 13, 1, 1, 0, 1},
    {"squeezenet", 1, 64, 256, 13, 1, 1, 0, 2},
    {"squeezenet", 1, 64, 256, 13, 3, 1, 1, 2},
    {"squeezenet", 1, 512, 1000, 13, 1, 1, 0, 1},
    // efficientnet-lite0 at batch 1: a layer of each kind (expand 1x1, depthwise, project 1x1) at
    // each map size, and the stem and head. Its depthwise convolutions pad "same" on both sides
    // here (the model's Pad nodes pad the end only), which changes neither the output size nor
    // the work.
    {"effnet", 1, 3, 32, 224, 3, 2, 1, 1},
    {"effnet", 1, 32, 32, 112, 3, 1, 1, 1, 32},
    {"effnet", 1, 32, 16, 112, 1, 1, 0, 1},
    {"effnet", 1, 16, 96, 112, 1, 1, 0, 1},
    {"effnet", 1, 96, 96, 112, 3, 2, 1, 1, 96},
    {"effnet", 1, 96, 24, 56, 1, 1, 0, 1},
    {"effnet", 1, 24, 144, 56, 1, 1, 0, 2},
    {"effnet", 1, 144, 144, 56, 3, 1, 1, 1, 144},
    {"effnet", 1, 144, 24, 56, 1, 1, 0, 1},
    {"effnet", 1, 144, 144, 56, 5, 2, 2, 1, 144},
    {"effnet", 1, 40, 240, 28, 1, 1, 0, 2},
    {"effnet", 1, 240, 240, 28, 5, 1, 2, 1, 240},
    {"effnet", 1, 240, 40, 28, 1, 1, 0, 1},
    {"effnet", 1, 240, 240, 28, 3, 2, 1, 1, 240},
    {"effnet", 1, 80, 480, 14, 1, 1, 0, 3},
    {"effnet", 1, 480, 480, 14, 3, 1, 1, 2, 480},
    {"effnet", 1, 480, 80, 14, 1, 1, 0, 2},
    {"effnet", 1, 112, 672, 14, 1, 1, 0, 3},
    {"effnet", 1, 672, 672, 14, 5, 1, 2, 2, 672},
    {"effnet", 1, 672, 112, 14, 1, 1, 0, 2},
    {"effnet", 1, 672, 672, 14, 5, 2, 2, 1, 672},
    {"effnet", 1, 192, 1152, 7, 1, 1, 0, 4},
    {"effnet", 1, 1152, 1152, 7, 5, 1, 2, 3, 1152},
    {"effnet", 1, 1152, 192, 7, 1, 1, 0, 3},
    {"effnet", 1, 1152, 320, 7, 1, 1, 0, 1},
    {"effnet", 1, 320, 1280, 7, 1, 1, 0, 1},
};

int64_t OutHw(const Layer& l) { return (l.hw + 2 * l.pad - l.kernel) / l.stride + 1; }

/// One layer's operands, with a fused ReLU as in the networks.
struct Conv {
  ConvF32Params p;
  std::vector<float> x, w, bias, y, workspace;
  PackedConvF32 packed;

  Conv(const Layer& l, int threads) {
    p.batch = l.batch;
    p.in_channels = l.c;
    p.out_channels = l.k;
    p.groups = l.groups;
    p.in = {1, l.hw, l.hw};
    p.out = {1, OutHw(l), OutHw(l)};
    p.kernel = {1, l.kernel, l.kernel};
    p.stride = {1, l.stride, l.stride};
    p.pad = {0, l.pad, l.pad};
    p.num_threads = threads;
    p.activation.lo = 0.0f;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    x.resize(l.batch * l.c * l.hw * l.hw);
    w.resize(l.k * l.c / l.groups * l.kernel * l.kernel);
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng) * 0.1f;
    bias.assign(l.k, 0.01f);
    y.resize(l.batch * l.k * OutHw(l) * OutHw(l));
    packed = PackConvF32Weights(p, w.data());
  }
  int64_t Macs(const Layer& l) const {
    return l.batch * l.k * OutHw(l) * OutHw(l) * l.c / l.groups * l.kernel * l.kernel;
  }
};

// Args: {layer index, threads}.
template <bool kDispatch>
void BM_Conv(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  Conv conv(l, static_cast<int>(state.range(1)));
  const ConvF32Params& p = conv.p;
  conv.workspace.resize(kDispatch ? ConvF32WithPackedWorkspaceSize(p, conv.packed)
                                  : ConvF32Im2colWorkspaceSize(p));
  for (auto _ : state) {
    if (kDispatch) {
      ConvF32WithPacked(p, conv.x.data(), conv.w.data(), conv.packed, conv.bias.data(),
                        conv.y.data(), conv.workspace.data());
    } else {
      ConvF32Im2col(p, conv.x.data(), conv.w.data(), conv.bias.data(), conv.y.data(),
                    conv.workspace.data());
    }
  }
  state.SetLabel(std::string(l.model) + (kDispatch ? " dispatch" : " sgemm"));
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(conv.Macs(l)) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void LayerArgs(benchmark::internal::Benchmark* b) {
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(kLayers)); ++i) {
    for (int64_t threads : {1, 2}) b->Args({i, threads});
  }
}

BENCHMARK_TEMPLATE(BM_Conv, true)->Apply(LayerArgs)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Conv, false)->Apply(LayerArgs)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qcc::cpu

BENCHMARK_MAIN();
