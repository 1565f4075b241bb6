// Every pass qcc has, and the pipelines built from them. One pass per file in passes/.
#ifndef QCC_PASSES_PASSES_H_
#define QCC_PASSES_PASSES_H_

#include <memory>

#include "passes/pass.h"

namespace qcc::passes {

// Clean-up (passes/fold_constants.cc, passes/eliminate_dead_code.cc, passes/remove_identity.cc).
/// Evaluates nodes whose inputs are all known (constants, Constant nodes, Shape of a static
/// shape) with the CPU kernels and replaces their outputs by constants.
std::unique_ptr<Pass> CreateFoldConstantsPass();
/// Removes nodes whose outputs nothing uses, and unused constants.
std::unique_ptr<Pass> CreateEliminateDeadCodePass();
/// Gives a Reshape whose target is computed from Shape ops a constant target when every element
/// is a constant, an extent the Reshape keeps (0, copy) or the one it can infer (-1).
std::unique_ptr<Pass> CreateResolveReshapePass();
/// Removes Identity and inference-mode Dropout by forwarding their input.
std::unique_ptr<Pass> CreateRemoveIdentityPass();

// Fusions (passes/fuse_*.cc).
/// Folds an inference BatchNormalization that follows a Conv into the Conv's weights and bias.
std::unique_ptr<Pass> CreateFuseConvBatchNormPass();
/// Folds an Add of a per-channel constant ([C,1,1], [1,C,1,1] or a scalar) after a Conv into
/// the Conv's bias (old exporters write conv bias that way).
std::unique_ptr<Pass> CreateFuseConvAddPass();
/// Folds a zero constant Pad of the spatial axes into the pads of the Conv reading it (the
/// TensorFlow-style "same" padding exporters write as an explicit Pad).
std::unique_ptr<Pass> CreateFusePadConvPass();
/// merge-slices: a Slice of a Slice with constant parameters -> one Slice (torch.onnx.export
/// writes x[:, :, ::2, ::2] as two; passes/merge_slices.cc).
std::unique_ptr<Pass> CreateMergeSlicesPass();
/// Folds a BatchNormalization after a Gemm into the Gemm's weights and bias.
std::unique_ptr<Pass> CreateFuseGemmBatchNormPass();
/// decompose-batchnorm: an inference BatchNormalization no fusion folded -> Mul and Add with
/// per-channel constants (decompose_batchnorm.cc).
std::unique_ptr<Pass> CreateDecomposeBatchNormPass();
/// Rewrites MatMul (2-D weight constant) + Add (bias constant) into Gemm with bias.
std::unique_ptr<Pass> CreateFuseMatMulAddPass();
/// Rewrites x * Clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x) into HardSwish.
std::unique_ptr<Pass> CreateFuseHardSwishPass();
/// fuse-layernorm: LayerNorm written out (ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add) -> one
/// LayerNormalization (passes/fuse_layernorm.cc).
std::unique_ptr<Pass> CreateFuseLayerNormPass();
/// fuse-gelu: x * 0.5 * (1 + Erf(x / sqrt(2))) -> one Gelu (passes/fuse_gelu.cc).
std::unique_ptr<Pass> CreateFuseGeluPass();
/// fold-attention-scale: MatMul(Q, K^T) / sqrt(d) with the scale folded into the weights and
/// bias of the Linear layer making Q or K (passes/fold_attention_scale.cc).
std::unique_ptr<Pass> CreateFoldAttentionScalePass();
/// fuse-attention: Q·Kᵀ (scaled), + mask, Softmax, ·V with the head split and merge around it ->
/// one qcc.Attention (passes/fuse_attention.cc).
std::unique_ptr<Pass> CreateFuseAttentionPass();
/// Fuses Relu, Clip (constant bounds) and LeakyRelu into the Conv, Gemm or Add producing their
/// input, when that output has no other use.
std::unique_ptr<Pass> CreateFuseActivationPass();

// The quantized graph of an int8 compile (passes/cancel_qdq.cc, passes/fold_scales.cc; the
// assign-precision pass and the pipelines of an int8 compile are in passes/realize_int8.h, with
// the types they take).
/// cancel-qdq: removes Quantize(Dequantize(x)) onto x's own grid (same scale, zero point, type
/// and saturation): its uses read x.
std::unique_ptr<Pass> CreateCancelQdqPass();
/// fold-scales: gives every qcc.QConv and qcc.QGemm still in its scale form (x int8, W int8 with
/// per-channel scales, optional fp32 bias b) its integer form: the int32 bias
/// round(b / (s_x * s_w[k])) - zp_x * sum(W[k]) and the multipliers s_x * s_w[k] / s_y; an
/// fp32-result QGemm gets s_x * s_w[k] and keeps b as the fp32 bias added after scaling.
std::unique_ptr<Pass> CreateFoldScalesPass();

// Calibration (passes/insert_observers.cc).
/// Adds an Observe node (observer_id 0, 1, ... in order of TensorsToObserve) on every tensor
/// an int8 compile needs a range for: the non-constant float inputs and outputs of quantizable
/// ops (passes/quantizable.h). Tensors that already have one are left alone.
std::unique_ptr<Pass> CreateInsertObserversPass();

/// The fp32 pipeline run before calibration and compilation: clean-up, fusions, clean-up.
Pipeline DefaultPipeline();
/// DefaultPipeline without the fusions into qcc's own ops (fuse-attention): every op of the
/// result has an ONNX form. `qcc export` writes it; `qcc calibrate` observes it, so a table has
/// the ranges of both graphs (the fused attention's output keeps the merged tensor's name) and
/// TensorRT's cache gets the attention tensors' scales.
Pipeline OnnxFormPipeline();

}  // namespace qcc::passes

#endif  // QCC_PASSES_PASSES_H_
