#!/usr/bin/env python3
"""Writes int8 convolution and matrix-product cases with ONNX Runtime's outputs, the independent
reference for qcc's int8 kernels (issue 18).

Each case OUT/NAME/ holds the operands as .npy files and ORT's output:

    params.txt   one "key value..." per line: kind (conv|matmul), activations (s8|u8), x_scale,
                 x_zp, y_scale, y_zp; for conv strides, pads (top left bottom right), dilations,
                 group; the ORT runs the case has (qlinear, qdq_fused, qdq_float)
    x.npy        the quantized input (int8 or uint8), NCHW or [M, K]
    w.npy        int8 weights: [K, C/group, R, S] for conv, [K, N] for matmul (ONNX layouts)
    w_scale.npy  f32 weight scales: per output channel (conv, matmul per column) or one
    bias.npy     int32 bias at scale x_scale * w_scale (conv only; zeros when the case has none)
    y_<run>.npy  ORT's output of each run:
                   qlinear     QLinearConv / QLinearMatMul
                   qdq_fused   DequantizeLinear -> Conv/MatMul -> QuantizeLinear with every graph
                               optimization (ORT fuses it into its int8 kernels)
                   qdq_float   the same QDQ model with optimizations off (computed in float)

Weights are symmetric (zero point 0), activations have zero points, scales are what a calibration
gives. Deterministic (fixed seeds); does nothing when OUT already holds this script's output (a
stamp with its hash and the onnxruntime version). Run with the project venv:

    .venv/bin/python tests/ort_reference/make_int8_cases.py --out build/ort_int8_cases
"""
import argparse
import fcntl
import hashlib
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 13

# name: (kind, activations, shapes and geometry)
CONV_CASES = {
    "conv3x3": dict(x=(2, 8, 9, 7), k=16, kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1),
                    dilations=(1, 1), group=1, act="s8", bias=True),
    "conv3x3_s2_asym_pads": dict(x=(1, 12, 11, 10), k=8, kernel=(3, 3), strides=(2, 2),
                                 pads=(0, 0, 1, 1), dilations=(1, 1), group=1, act="s8",
                                 bias=True),
    "depthwise5x5": dict(x=(2, 16, 10, 9), k=16, kernel=(5, 5), strides=(1, 1), pads=(2, 2, 2, 2),
                         dilations=(1, 1), group=16, act="s8", bias=True),
    "grouped_dilated": dict(x=(1, 8, 12, 12), k=8, kernel=(3, 3), strides=(1, 2),
                            pads=(2, 1, 2, 1), dilations=(2, 2), group=4, act="s8", bias=False),
    "pointwise": dict(x=(3, 24, 5, 6), k=32, kernel=(1, 1), strides=(1, 1), pads=(0, 0, 0, 0),
                      dilations=(1, 1), group=1, act="s8", bias=True),
    "conv3x3_u8": dict(x=(2, 8, 8, 8), k=12, kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1),
                       dilations=(1, 1), group=1, act="u8", bias=True),
    "depthwise3x3_u8_s2": dict(x=(1, 32, 15, 15), k=32, kernel=(3, 3), strides=(2, 2),
                               pads=(1, 1, 1, 1), dilations=(1, 1), group=32, act="u8",
                               bias=True),
}
MATMUL_CASES = {
    "matmul": dict(m=5, k=24, n=12, act="s8", per_column=False),
    "matmul_u8_per_column": dict(m=7, k=33, n=17, act="u8", per_column=True),
    "matmul_wide": dict(m=4, k=200, n=64, act="s8", per_column=True),
}


def qrange(act):
    return (-128, 127, np.int8, TensorProto.INT8) if act == "s8" else \
        (0, 255, np.uint8, TensorProto.UINT8)


def quantized_input(rng, shape, act):
    """Activations as a calibrated tensor gives them: most values well inside the range."""
    lo, hi, dtype, _ = qrange(act)
    mid = (lo + hi) / 2
    x = rng.normal(mid, (hi - lo) / 6, size=shape)
    return np.clip(np.rint(x), lo, hi).astype(dtype)


def weights(rng, shape):
    """Symmetric int8 weights with per-output-channel spread, as per-channel scales leave them."""
    w = rng.normal(0, 40, size=shape) * rng.uniform(0.3, 1.0, size=(shape[0],) + (1,) *
                                                   (len(shape) - 1))
    return np.clip(np.rint(w), -127, 127).astype(np.int8)


def run(model, feeds, optimize):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else
                                   ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def make_model(nodes, inits, x_info, y_info):
    graph = helper.make_graph(nodes, "case", [x_info], [y_info], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    return model


def output_scale(float_out, act):
    """The scale and zero point a calibration (min/max) would give `float_out`."""
    lo, hi = float(min(float_out.min(), 0)), float(max(float_out.max(), 0))
    qlo, qhi, _, _ = qrange(act)
    scale = np.float32((hi - lo) / (qhi - qlo))
    zp = int(np.clip(np.rint(qlo - lo / scale), qlo, qhi))
    return scale, zp


def conv_out_shape(c):
    n, _, h, w = c["x"]
    (r, s), (sh, sw), (dh, dw) = c["kernel"], c["strides"], c["dilations"]
    top, left, bottom, right = c["pads"]
    oh = (h + top + bottom - dh * (r - 1) - 1) // sh + 1
    ow = (w + left + right - dw * (s - 1) - 1) // sw + 1
    return [n, c["k"], oh, ow]


def conv_case(rng, c):
    n, ch, h, wd = c["x"]
    k, (r, s), g = c["k"], c["kernel"], c["group"]
    lo, hi, dtype, onnx_type = qrange(c["act"])
    x = quantized_input(rng, c["x"], c["act"])
    x_scale = np.float32(rng.uniform(0.01, 0.03))
    x_zp = int(rng.integers(lo + 20, hi - 20))
    w = weights(rng, (k, ch // g, r, s))
    w_scale = rng.uniform(0.002, 0.01, size=k).astype(np.float32)
    bias = (rng.integers(-3000, 3000, size=k).astype(np.int32) if c["bias"]
            else np.zeros(k, np.int32))
    # ONNX pads are [x1_begin, x2_begin, x1_end, x2_end] = [top, left, bottom, right].
    attrs = dict(strides=list(c["strides"]), pads=list(c["pads"]),
                 dilations=list(c["dilations"]), group=g, kernel_shape=[r, s])
    # The output scale: from the float result, as calibration would see it.
    xf = (x.astype(np.float32) - x_zp) * x_scale
    wf = w.astype(np.float32) * w_scale[:, None, None, None]
    bf = bias.astype(np.float32) * (x_scale * w_scale)
    fmodel = make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
        [numpy_helper.from_array(wf, "w"), numpy_helper.from_array(bf, "b")],
        helper.make_tensor_value_info("x", TensorProto.FLOAT, list(c["x"])),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, conv_out_shape(c)))
    y_scale, y_zp = output_scale(run(fmodel, {"x": xf}, True), c["act"])

    scalar = lambda name, v, t: helper.make_tensor(name, t, [], [v])
    inits = [scalar("x_scale", float(x_scale), TensorProto.FLOAT),
             scalar("x_zp", x_zp, onnx_type),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "w_scale"),
             numpy_helper.from_array(np.zeros(k, np.int8), "w_zp"),
             scalar("y_scale", float(y_scale), TensorProto.FLOAT),
             scalar("y_zp", y_zp, onnx_type), numpy_helper.from_array(bias, "bias")]
    x_info = helper.make_tensor_value_info("x", onnx_type, list(c["x"]))
    y_info = helper.make_tensor_value_info("y", onnx_type, conv_out_shape(c))
    qlinear = make_model(
        [helper.make_node("QLinearConv", ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp",
                                          "y_scale", "y_zp", "bias"], ["y"], **attrs)],
        inits, x_info, y_info)
    bias_scale = (x_scale * w_scale).astype(np.float32)
    qdq = make_model(
        [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zp"], ["xd"]),
         helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zp"], ["wd"], axis=0),
         helper.make_node("DequantizeLinear", ["bias", "bias_scale", "bias_zp"], ["bd"], axis=0),
         helper.make_node("Conv", ["xd", "wd", "bd"], ["yd"], **attrs),
         helper.make_node("QuantizeLinear", ["yd", "y_scale", "y_zp"], ["y"])],
        inits + [numpy_helper.from_array(bias_scale, "bias_scale"),
                 numpy_helper.from_array(np.zeros(k, np.int32), "bias_zp")],
        x_info, y_info)
    outputs = {"qlinear": run(qlinear, {"x": x}, True), "qdq_fused": run(qdq, {"x": x}, True),
               "qdq_float": run(qdq, {"x": x}, False)}
    params = {"kind": "conv", "activations": c["act"], "x_scale": repr(float(x_scale)),
              "x_zp": x_zp, "y_scale": repr(float(y_scale)), "y_zp": y_zp,
              "strides": " ".join(map(str, c["strides"])),
              "pads": " ".join(map(str, c["pads"])),
              "dilations": " ".join(map(str, c["dilations"])), "group": g,
              "runs": " ".join(outputs)}
    return params, {"x": x, "w": w, "w_scale": w_scale, "bias": bias}, outputs


def matmul_case(rng, c):
    m, k, n = c["m"], c["k"], c["n"]
    lo, hi, dtype, onnx_type = qrange(c["act"])
    a = quantized_input(rng, (m, k), c["act"])
    a_scale = np.float32(rng.uniform(0.01, 0.03))
    a_zp = int(rng.integers(lo + 20, hi - 20))
    b = weights(rng, (n, k)).T.copy()  # ONNX MatMul's B is [K, N]
    b_scale = (rng.uniform(0.002, 0.01, size=n) if c["per_column"] else
               np.full(1, rng.uniform(0.002, 0.01))).astype(np.float32)
    y_float = ((a.astype(np.float32) - a_zp) * a_scale) @ (b.astype(np.float32) *
                                                           b_scale[None, :])
    y_scale, y_zp = output_scale(y_float, c["act"])
    scalar = lambda name, v, t: helper.make_tensor(name, t, [], [v])
    b_scale_init = (numpy_helper.from_array(b_scale, "b_scale") if c["per_column"] else
                    scalar("b_scale", float(b_scale[0]), TensorProto.FLOAT))
    b_zp_init = (numpy_helper.from_array(np.zeros(n, np.int8), "b_zp") if c["per_column"] else
                 scalar("b_zp", 0, TensorProto.INT8))
    inits = [scalar("a_scale", float(a_scale), TensorProto.FLOAT),
             scalar("a_zp", a_zp, onnx_type), numpy_helper.from_array(b, "b"), b_scale_init,
             b_zp_init, scalar("y_scale", float(y_scale), TensorProto.FLOAT),
             scalar("y_zp", y_zp, onnx_type)]
    x_info = helper.make_tensor_value_info("a", onnx_type, [m, k])
    y_info = helper.make_tensor_value_info("y", onnx_type, [m, n])
    qlinear = make_model(
        [helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp",
                                            "y_scale", "y_zp"], ["y"])], inits, x_info, y_info)
    qdq = make_model(
        [helper.make_node("DequantizeLinear", ["a", "a_scale", "a_zp"], ["ad"]),
         helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zp"], ["bd"], axis=1),
         helper.make_node("MatMul", ["ad", "bd"], ["yd"]),
         helper.make_node("QuantizeLinear", ["yd", "y_scale", "y_zp"], ["y"])],
        inits, x_info, y_info)
    outputs = {"qlinear": run(qlinear, {"a": a}, True), "qdq_fused": run(qdq, {"a": a}, True),
               "qdq_float": run(qdq, {"a": a}, False)}
    params = {"kind": "matmul", "activations": c["act"], "x_scale": repr(float(a_scale)),
              "x_zp": a_zp, "y_scale": repr(float(y_scale)), "y_zp": y_zp,
              "runs": " ".join(outputs)}
    w_scale = b_scale if c["per_column"] else np.full(n, b_scale[0], np.float32)
    return params, {"x": a, "w": b, "w_scale": w_scale,
                    "bias": np.zeros(n, np.int32)}, outputs


def write_case(out_dir, name, params, arrays, outputs):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "params.txt"), "w") as f:
        for key, value in params.items():
            f.write(f"{key} {value}\n")
    for key, value in arrays.items():
        np.save(os.path.join(d, f"{key}.npy"), value)
    for run_name, y in outputs.items():
        np.save(os.path.join(d, f"y_{run_name}.npy"), y)


def stamp_text():
    with open(__file__, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return f"{digest} onnxruntime {ort.__version__} numpy {np.__version__}\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder to write the cases into")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test processes may run this side by side
        stamp = os.path.join(args.out, "stamp.txt")
        if os.path.exists(stamp) and open(stamp).read() == stamp_text():
            return
        for entry in os.listdir(args.out):
            path = os.path.join(args.out, entry)
            if os.path.isdir(path):
                shutil.rmtree(path)
        for i, (name, c) in enumerate(sorted(CONV_CASES.items())):
            write_case(args.out, name, *conv_case(np.random.default_rng(100 + i), c))
        for i, (name, c) in enumerate(sorted(MATMUL_CASES.items())):
            write_case(args.out, name, *matmul_case(np.random.default_rng(200 + i), c))
        with open(stamp, "w") as f:
            f.write(stamp_text())
        print(f"wrote {len(CONV_CASES) + len(MATMUL_CASES)} cases to {args.out}")


if __name__ == "__main__":
    main()
