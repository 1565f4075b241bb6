#!/usr/bin/env python3
"""Writes small ONNX models in the shape-arithmetic patterns torch.onnx.export (1.13, opset 13)
writes for a model exported with a dynamic batch, with inputs and ONNX Runtime references.

Issue 12: qcc must compile these with a dynamic batch and no --shape flag. Each pattern NAME gets

    OUT/NAME/model.onnx       opset 13, input x: f32[N,C,H,W] (dim_param "N"), one output y
    OUT/NAME/calib/NNNN.npy   32 calibration samples, f32[1,C,H,W]
    OUT/NAME/batch1.npy       f32[1,C,H,W], equal to sample 0 of batch7.npy
    OUT/NAME/batch7.npy       f32[7,C,H,W]
    OUT/NAME/ref_batch1.npy   ONNX Runtime's fp32 output on batch1.npy (CPUExecutionProvider)
    OUT/NAME/ref_batch7.npy   ... on batch7.npy

The patterns (node names, Constant nodes and int64 shape tensors as the exporter writes them):

    dynamic_flatten        x.view(x.size(0), -1) before the classifier (EfficientNet's head):
                           Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape -> Gemm
    computed_pads          efficientnet-lite's Conv2dStaticSamePadding: F.pad with a constant pad
                           list turned into ONNX pads by ConstantOfShape/Concat/Reshape/Slice
                           (reversed)/Transpose/Reshape/Cast, then Pad and a Conv with pads 0
    computed_resize        F.interpolate(scale_factor=2, mode="nearest", recompute_scale_factor=
                           True) and F.interpolate(size=(h * 2, w * 2), mode="bilinear"): Resize
                           with empty roi and scales and `sizes` computed from Shape
    reshape_shape_math     ShuffleNet's channel shuffle: Reshape to [N, g, C / g, H, W] (Div on
                           shape values), Transpose, Reshape to [0, -1, H, W]
    batch_dependent_shape  a learned [1, C, 1, 1] term .expand(x.size(0), -1, x.size(2),
                           x.size(3)) (Where/Equal/ConstantOfShape turn -1 into 1) added to a conv

and one paddle2onnx pattern:

    paddle_det_head        PP-OCR's DB detector head (ppocr-det-v3): a ConvTranspose (group 2) with
                           no bias, the bias as an Add of a [1, C, 1, 1] constant, a
                           BatchNormalization no Conv precedes, Relu, a second ConvTranspose
                           (pads, output_padding, bias input), an Add and a Sigmoid

plus `unresolvable_shape` (model.onnx and batch1.npy only): a Reshape whose target holds a value
computed from the data (Cast of a ReduceMax), which no compiler can know before run time.

Deterministic (fixed seeds): He-normal conv weights, then rescaled per output channel as a folded
BatchNormalization leaves a trained model's (so that int8 ranges are as in a real network), and
low-frequency images in about [-1, 1].
Does nothing when OUT holds the output of this script (a stamp file holds the script's hash and
the onnx/onnxruntime/numpy versions). Several processes may run it at once (a lock file).
Run it with the project venv:

    .venv/bin/python tests/exporter_patterns/make_models.py --out build/exporter_patterns
"""
import argparse
import fcntl
import hashlib
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 7  # what torch 1.13 writes at opset 13
CALIB_SAMPLES = 32
EVAL_BATCH = 7
INT64_MIN_PLUS_1 = -9223372036854775807  # the "to the start" end of a reversed Slice


class Exporter:
    """Builds a graph the way torch.onnx.export names it: node "<scope>/<Op>[_k]", output
    "<node>_output_0", shape constants as Constant nodes, parameters as initializers."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.counts = {}
        self.anonymous = 0  # torch's unscoped constants: "Constant_<k>" -> "onnx::<User>_<k>"

    def op(self, op_type, inputs, scope="", **attrs):
        key = (scope, op_type)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = f"{scope}/{op_type}" + (f"_{k}" if k else "")
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def const(self, value, scope="", dtype=np.int64):
        """A Constant node holding `value` (a scalar stays a 0-d tensor, as torch writes it)."""
        array = np.array(value, dtype=dtype)
        return self.op("Constant", [], scope, value=numpy_helper.from_array(array, ""))

    def axes0(self, user):
        """The Unsqueeze axes [0] torch writes without a scope ("onnx::Unsqueeze_<k>")."""
        self.anonymous += 1
        out = f"onnx::{user}_{900 + self.anonymous}"
        self.nodes.append(
            helper.make_node("Constant", [], [out], name=f"Constant_{400 + self.anonymous}",
                             value=numpy_helper.from_array(np.array([0], np.int64), "")))
        return out

    def param(self, name, array):
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(self, x, scope, cin, cout, k, stride=1, pad=None, group=1):
        """Conv with He-normal weights (fan-in) and a small random bias (both rescaled later by
        fold_batch_norm_like)."""
        pad = k // 2 if pad is None else pad
        fan_in = cin // group * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        b = self.rng.normal(0.0, 0.1, (cout,))
        return self.op("Conv", [x, self.param(f"{scope[1:]}.weight", w),
                                self.param(f"{scope[1:]}.bias", b)], scope,
                       dilations=[1, 1], group=group, kernel_shape=[k, k],
                       pads=[pad] * 4, strides=[stride, stride])

    def relu(self, x, scope):
        return self.op("Relu", [x], scope)

    def relu6(self, x, scope):
        """nn.ReLU6 at opset 13: Clip with min and max as Constant inputs."""
        lo = self.const(0.0, scope, np.float32)
        hi = self.const(6.0, scope, np.float32)
        return self.op("Clip", [x, lo, hi], scope)

    def dim(self, x, axis, scope=""):
        """x.size(axis) while tracing: Shape, then Gather with a scalar index (a 0-d int64)."""
        shape = self.op("Shape", [x], scope)
        return self.op("Gather", [shape, self.const(axis, scope)], scope, axis=0)

    def unsqueeze0(self, v, scope=""):
        return self.op("Unsqueeze", [v, self.axes0("Unsqueeze")], scope)

    def model(self, name, channels, height, width, y):
        x_type = helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                               ["N", channels, height, width])
        for n in self.nodes:  # torch names the graph output after `output_names`
            n.output[:] = ["y" if o == y else o for o in n.output]
            n.input[:] = ["y" if i == y else i for i in n.input]
        y_type = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        graph = helper.make_graph(self.nodes, f"torch_jit_{name}", [x_type], [y_type],
                                  self.initializers)
        m = helper.make_model(graph, producer_name="pytorch", producer_version="1.13.0",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = IR_VERSION
        return m


# ---------------------------------------------------------------------------------------------
# The patterns: each returns (model, C, H, W).


def dynamic_flatten(g):
    c, h, w = 3, 32, 32
    x = g.relu(g.conv("x", "/conv1", c, 16, 3, stride=2), "/relu1")
    x = g.relu(g.conv(x, "/conv2", 16, 32, 3), "/relu2")
    x = g.op("GlobalAveragePool", [x], "/pool")
    # x = x.view(x.size(0), -1)
    batch = g.dim(x, 0)
    target = g.op("Concat", [g.unsqueeze0(batch), g.const([-1])], axis=0)
    x = g.op("Reshape", [x, target])
    fc_w = g.rng.normal(0.0, np.sqrt(1.0 / 32), (10, 32))
    fc_b = g.rng.normal(0.0, 0.1, (10,))
    y = g.op("Gemm", [x, g.param("fc.weight", fc_w), g.param("fc.bias", fc_b)], "/fc",
             alpha=1.0, beta=1.0, transB=1)
    return g.model("dynamic_flatten", c, h, w, y), c, h, w


def static_same_pad(g, x, scope, pads):
    """Conv2dStaticSamePadding's nn.ZeroPad2d / F.pad(x, [left, right, top, bottom]) at opset 13,
    node for node as in efficientnet-lite0's export."""
    s = scope + "/static_padding"
    n = g.const([4], s)
    torch_pads = g.const(pads, s)
    zeros = g.op("ConstantOfShape", [n], s,
                 value=numpy_helper.from_array(np.array([0], np.int64), ""))
    full = g.op("Concat", [torch_pads, zeros], s, axis=0)
    pairs = g.op("Reshape", [full, g.const([-1, 2], s)], s)
    axes, starts = g.const([0], s), g.const([-1], s)
    ends, steps = g.const([INT64_MIN_PLUS_1], s), g.const([-1], s)
    rev = g.op("Slice", [pairs, starts, ends, axes, steps], s)
    onnx_order = g.op("Transpose", [rev], s, perm=[1, 0])
    flat = g.op("Reshape", [onnx_order, g.const([-1], s)], s)
    onnx_pads = g.op("Cast", [flat], s, to=TensorProto.INT64)
    return g.op("Pad", [x, onnx_pads, g.const(0.0, s, np.float32)], s, mode="constant")


def computed_pads(g):
    c, h, w = 3, 32, 32
    # Stem: 3x3 stride 2 on an even input: TF "same" pads 0 before, 1 after.
    x = static_same_pad(g, "x", "/conv_stem", [0, 1, 0, 1])
    x = g.relu6(g.conv(x, "/conv_stem", c, 16, 3, stride=2, pad=0), "/act_stem")
    # A 5x5 depthwise conv with stride 1: pads 2 on every side.
    x = static_same_pad(g, x, "/blocks.0/depthwise_conv", [2, 2, 2, 2])
    x = g.relu6(g.conv(x, "/blocks.0/depthwise_conv", 16, 16, 5, pad=0, group=16),
                "/blocks.0/act1")
    x = g.relu6(g.conv(x, "/blocks.0/project_conv", 16, 24, 1), "/blocks.0/act2")
    # A 5x5 depthwise conv with stride 2 on 16x16: pads 1 before, 2 after.
    x = static_same_pad(g, x, "/blocks.1/depthwise_conv", [1, 2, 1, 2])
    x = g.relu6(g.conv(x, "/blocks.1/depthwise_conv", 24, 24, 5, stride=2, pad=0, group=24),
                "/blocks.1/act1")
    y = g.conv(x, "/blocks.1/project_conv", 24, 16, 1)
    return g.model("computed_pads", c, h, w, y), c, h, w


def resize_to(g, x, sizes_hw, scope, mode):
    """The Resize torch writes when the output size is known only as a value: sizes =
    Concat(Slice(Shape(x), [0], [2]), Cast(sizes_hw, int64)); roi and scales are empty inputs."""
    shape = g.op("Shape", [x], scope)
    axes, starts, ends = g.const([0], scope), g.const([0], scope), g.const([2], scope)
    nc = g.op("Slice", [shape, starts, ends, axes], scope)
    hw = g.op("Cast", [sizes_hw], scope, to=TensorProto.INT64)
    sizes = g.op("Concat", [nc, hw], scope, axis=0)
    transform = "asymmetric" if mode == "nearest" else "half_pixel"
    return g.op("Resize", [x, "", "", sizes], scope, coordinate_transformation_mode=transform,
                cubic_coeff_a=-0.75, mode=mode, nearest_mode="floor")


def computed_resize(g):
    c, h, w = 8, 16, 16
    x = g.relu(g.conv("x", "/conv1", c, 16, 3), "/relu1")
    # F.interpolate(x, scale_factor=2, mode="nearest", recompute_scale_factor=True): while
    # tracing, each output extent is floor(float(x.size(i)) * tensor(2.0)).
    extents = []
    for axis in (2, 3):
        v = g.op("Cast", [g.dim(x, axis, "/up1")], "/up1", to=TensorProto.FLOAT)
        v = g.op("Mul", [v, g.const(2.0, "/up1", np.float32)], "/up1")
        v = g.op("Cast", [v], "/up1", to=TensorProto.FLOAT)
        v = g.op("Floor", [v], "/up1")
        extents.append(g.unsqueeze0(v, "/up1"))
    hw = g.op("Concat", extents, "/up1", axis=0)
    x = resize_to(g, x, hw, "/up1", "nearest")
    x = g.relu(g.conv(x, "/conv2", 16, 16, 3), "/relu2")
    # F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2), mode="bilinear",
    # align_corners=False): int64 Mul on the extents.
    extents = []
    for axis in (2, 3):
        v = g.op("Mul", [g.dim(x, axis, "/up2"), g.const(2, "/up2")], "/up2")
        extents.append(g.unsqueeze0(v, "/up2"))
    hw = g.op("Concat", extents, "/up2", axis=0)
    x = resize_to(g, x, hw, "/up2", "linear")
    y = g.conv(x, "/conv3", 16, 8, 3)
    return g.model("computed_resize", c, h, w, y), c, h, w


def reshape_shape_math(g):
    c, h, w = 8, 16, 16
    groups = 4
    x = g.relu(g.conv("x", "/conv1", c, 16, 3), "/relu1")
    x = g.relu(g.conv(x, "/conv2", 16, 16, 1, group=groups), "/relu2")
    # batchsize, num_channels, height, width = x.size()
    s = "/shuffle"
    n, ch, hh, ww = (g.dim(x, axis, s) for axis in range(4))
    # channels_per_group = num_channels // groups (integer Div, then the exporter's Casts)
    cpg = g.op("Div", [ch, g.const(groups, s)], s)
    cpg = g.op("Cast", [g.op("Cast", [cpg], s, to=TensorProto.INT64)], s, to=TensorProto.INT64)
    # x = x.view(batchsize, groups, channels_per_group, height, width)
    target = g.op("Concat", [g.unsqueeze0(n, s), g.const([groups], s), g.unsqueeze0(cpg, s),
                             g.unsqueeze0(hh, s), g.unsqueeze0(ww, s)], s, axis=0)
    x = g.op("Reshape", [x, target], s)
    # x = torch.transpose(x, 1, 2).contiguous()
    x = g.op("Transpose", [x], s, perm=[0, 2, 1, 3, 4])
    # x = x.view(0 (copy the batch), -1, height, width): a 0 and a -1 in one computed target.
    target = g.op("Concat", [g.const([0], s), g.const([-1], s), g.unsqueeze0(hh, s),
                             g.unsqueeze0(ww, s)], s, axis=0)
    x = g.op("Reshape", [x, target], s)
    x = g.relu(g.conv(x, "/conv3", 16, 16, 3), "/relu3")
    y = g.conv(x, "/conv4", 16, 8, 1)
    return g.model("reshape_shape_math", c, h, w, y), c, h, w


def expand_to(g, t, dims, scope):
    """t.expand(*dims) with a dims list built from values: torch stacks it, then turns each -1
    into 1 with ConstantOfShape/Mul/Equal/Where before Expand."""
    size = g.op("Concat", dims, scope, axis=0)
    size = g.op("Reshape", [size, g.const([-1], scope)], scope)
    ones = g.op("ConstantOfShape", [g.op("Shape", [size], scope)], scope,
                value=numpy_helper.from_array(np.array([1], np.int64), ""))
    neg_ones = g.op("Mul", [ones, g.const(-1, scope)], scope)
    is_neg = g.op("Equal", [size, neg_ones], scope)
    size = g.op("Where", [is_neg, ones, size], scope)
    return g.op("Expand", [t, size], scope)


def batch_dependent_shape(g):
    c, h, w = 8, 24, 24
    x = g.relu(g.conv("x", "/conv1", c, 16, 3), "/relu1")
    x = g.conv(x, "/conv2", 16, 16, 3)
    # x + self.bias_term.expand(x.size(0), -1, x.size(2), x.size(3))
    s = "/bias_term"
    term = g.param("bias_term", g.rng.normal(0.0, 0.5, (1, 16, 1, 1)))
    dims = [g.unsqueeze0(g.dim(x, 0, s), s), g.const([-1], s),
            g.unsqueeze0(g.dim(x, 2, s), s), g.unsqueeze0(g.dim(x, 3, s), s)]
    x = g.op("Add", [x, expand_to(g, term, dims, s)], s)
    x = g.relu(x, "/relu2")
    y = g.conv(x, "/conv3", 16, 8, 3)
    return g.model("batch_dependent_shape", c, h, w, y), c, h, w


def paddle_det_head(g):
    c, h, w = 3, 16, 16
    rng = g.rng
    x = g.relu(g.conv("x", "/backbone/conv1", c, 16, 3), "/backbone/relu1")
    x = g.relu(g.conv(x, "/backbone/conv2", 16, 16, 3, stride=2), "/backbone/relu2")  # 8x8
    # ConvTranspose weights are [C_in, C_out / group, kH, kW]: 16 -> 8 in two groups.
    w1 = g.param("head.up1.weight", rng.normal(0.0, np.sqrt(2.0 / 32), (16, 4, 2, 2)))
    x = g.op("ConvTranspose", [x, w1], "/head/up1", dilations=[1, 1], group=2,
             kernel_shape=[2, 2], pads=[0, 0, 0, 0], strides=[2, 2])  # 16x16
    x = g.op("Add", [x, g.param("head.up1.bias", rng.normal(0.0, 0.1, (1, 8, 1, 1)))], "/head")
    bn = [g.param(f"head.bn.{n}", a) for n, a in (
        ("weight", rng.uniform(0.5, 1.5, 8)), ("bias", rng.normal(0.0, 0.2, 8)),
        ("running_mean", rng.normal(0.0, 0.3, 8)), ("running_var", rng.uniform(0.5, 2.0, 8)))]
    x = g.op("BatchNormalization", [x] + bn, "/head/bn", epsilon=1e-5, momentum=0.9)
    x = g.relu(x, "/head/relu")
    w2 = g.param("head.up2.weight", rng.normal(0.0, np.sqrt(2.0 / 72), (8, 1, 3, 3)))
    b2 = g.param("head.up2.bias", rng.normal(0.0, 0.1, (1,)))
    x = g.op("ConvTranspose", [x, w2, b2], "/head/up2", dilations=[1, 1], group=1,
             kernel_shape=[3, 3], output_padding=[1, 1], pads=[1, 1, 1, 1],
             strides=[2, 2])  # 32x32
    x = g.op("Add", [x, g.param("head.up2.shift", rng.normal(0.0, 0.1, (1, 1, 1, 1)))], "/head")
    y = g.op("Sigmoid", [x], "/head")
    return g.model("paddle_det_head", c, h, w, y), c, h, w


def unresolvable_shape(g):
    c, h, w = 8, 16, 16
    x = g.relu(g.conv("x", "/conv1", c, 8, 3), "/relu1")
    # k = int(x.amax() * 0 + 8): always 8, but only the data says so.
    k = g.op("ReduceMax", [x], keepdims=0)
    k = g.op("Mul", [k, g.const(0.0, dtype=np.float32)])
    k = g.op("Add", [k, g.const(8.0, dtype=np.float32)])
    k = g.op("Cast", [k], to=TensorProto.INT64)
    target = g.op("Concat", [g.unsqueeze0(g.dim(x, 0)), g.unsqueeze0(k), g.const([-1])], axis=0)
    x = g.op("Reshape", [x, target])
    y = g.op("Relu", [x], "/relu2")
    return g.model("unresolvable_shape", c, h, w, y), c, h, w


PATTERNS = {
    "dynamic_flatten": dynamic_flatten,
    "computed_pads": computed_pads,
    "computed_resize": computed_resize,
    "reshape_shape_math": reshape_shape_math,
    "batch_dependent_shape": batch_dependent_shape,
    "paddle_det_head": paddle_det_head,
}
FAILING_PATTERNS = {"unresolvable_shape": unresolvable_shape}
# The Reshape of unresolvable_shape whose target holds the data-dependent value.
UNRESOLVABLE_NODE = "/Reshape"


# ---------------------------------------------------------------------------------------------
# Data.


def interp_matrix(n_out, n_in):
    """Linear interpolation weights [n_out, n_in] (align-corners), for a smooth upsampling."""
    pos = np.linspace(0.0, n_in - 1.0, n_out)
    lo = np.minimum(np.floor(pos).astype(int), n_in - 2)
    frac = pos - lo
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), lo] = 1.0 - frac
    m[np.arange(n_out), lo + 1] = frac
    return m


def images(rng, count, c, h, w):
    """`count` low-frequency images f32[count, c, h, w] in about [-1, 1]: a random 4x4 grid per
    channel upsampled linearly, a random oriented stripe, a little pixel noise."""
    mh, mw = interp_matrix(h, 4), interp_matrix(w, 4)
    yy, xx = np.meshgrid(np.arange(h) / h, np.arange(w) / w, indexing="ij")
    out = np.empty((count, c, h, w), np.float32)
    for i in range(count):
        grid = rng.normal(0.0, 0.7, (c, 4, 4))
        smooth = np.einsum("hi,cij,wj->chw", mh, grid, mw)
        angle, freq, phase = rng.uniform(0, np.pi), rng.uniform(1, 3), rng.uniform(0, 2 * np.pi)
        stripe = np.sin(2 * np.pi * freq * (np.cos(angle) * xx + np.sin(angle) * yy) + phase)
        stripe = stripe[None] * rng.uniform(0.0, 0.4, (c, 1, 1))
        noise = rng.normal(0.0, 0.03, (c, h, w))
        out[i] = np.tanh(smooth + stripe + noise)
    return out


def run_ort(path, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x})[0]


def fold_batch_norm_like(model, calib, rng):
    """Rescales every Conv as a trained model's folded BatchNormalization leaves it: on the
    calibration data each output channel gets mean beta and standard deviation gamma (gamma about
    1, beta about 0.1), so that channels have comparable ranges, as in a real network."""
    params = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        if node.output[0] not in [o.name for o in probe.graph.output]:
            probe.graph.output.append(helper.make_empty_tensor_value_info(node.output[0]))
        session = ort.InferenceSession(probe.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        out = session.run([node.output[0]], {"x": calib})[0].astype(np.float64)
        mean, std = out.mean(axis=(0, 2, 3)), out.std(axis=(0, 2, 3)) + 1e-6
        gamma = rng.uniform(0.7, 1.3, mean.shape)
        beta = rng.normal(0.1, 0.2, mean.shape)
        w, b = (numpy_helper.to_array(params[n]).astype(np.float64) for n in node.input[1:3])
        w *= (gamma / std)[:, None, None, None]
        b = (b - mean) * gamma / std + beta
        params[node.input[1]].CopyFrom(numpy_helper.from_array(w.astype(np.float32), node.input[1]))
        params[node.input[2]].CopyFrom(numpy_helper.from_array(b.astype(np.float32), node.input[2]))


def seed_of(name):
    return zlib.crc32(name.encode())


def write_pattern(name, build, out_dir, with_data):
    folder = os.path.join(out_dir, name)
    os.makedirs(folder)
    model, c, h, w = build(Exporter(seed_of(name)))
    path = os.path.join(folder, "model.onnx")
    rng = np.random.default_rng(seed_of(name) + 1)
    calib = images(rng, CALIB_SAMPLES, c, h, w)
    batch7 = images(rng, EVAL_BATCH, c, h, w)
    fold_batch_norm_like(model, calib, rng)
    # The output's type as torch writes it: the batch named, the other extents from a first run.
    onnx.save(model, path)
    y_dims = ["N"] + list(run_ort(path, batch7[:1]).shape[1:])
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims))
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.save(model, path)
    if not with_data:
        np.save(os.path.join(folder, "batch1.npy"), batch7[:1])
        return f"{name}: model.onnx, batch1.npy"
    ref1 = run_ort(path, batch7[:1])
    ref7 = run_ort(path, batch7)
    os.makedirs(os.path.join(folder, "calib"))
    for i in range(CALIB_SAMPLES):
        np.save(os.path.join(folder, "calib", f"{i:04d}.npy"), calib[i:i + 1])
    np.save(os.path.join(folder, "batch1.npy"), batch7[:1])
    np.save(os.path.join(folder, "batch7.npy"), batch7)
    np.save(os.path.join(folder, "ref_batch1.npy"), ref1.astype(np.float32))
    np.save(os.path.join(folder, "ref_batch7.npy"), ref7.astype(np.float32))
    return (f"{name}: {len(model.graph.node)} nodes, x {list(batch7[:1].shape)} -> y "
            f"{list(ref1.shape)}, x {list(batch7.shape)} -> y {list(ref7.shape)}")


def stamp_text():
    with open(os.path.abspath(__file__), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return (f"{digest} onnx {onnx.__version__} onnxruntime {ort.__version__} "
            f"numpy {np.__version__}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the folder that gets one folder per pattern")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    stamp_path = os.path.join(out, "stamp.txt")
    want = stamp_text()
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be writing the same folder
        try:
            with open(stamp_path) as f:
                if f.read() == want:
                    print(f"make_models: {out} is up to date")
                    return
        except OSError:
            pass
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for name, build in PATTERNS.items():
            print("make_models: " + write_pattern(name, build, out, with_data=True))
        for name, build in FAILING_PATTERNS.items():
            print("make_models: " + write_pattern(name, build, out, with_data=False))
        with open(stamp_path + ".tmp", "w") as f:
            f.write(want)
        os.replace(stamp_path + ".tmp", stamp_path)  # last: a half-written folder has no stamp


if __name__ == "__main__":
    sys.exit(main())
