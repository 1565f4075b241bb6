#!/usr/bin/env python3
"""What efficientnet-lite0's first depthwise conv costs at 2 threads, by the layers around it.

In efficientnet-lite0 at batch 1 the depthwise conv of blocks.0 (32 x 112 x 112, 3x3, ReLU6)
takes as long on 2 threads as on 1 (0.16 ms), where alone it takes half. This script builds
the model's first layers as small models (seeded random weights, made here with the onnx
helper) that differ only in what follows the depthwise conv, times each with
`qcc bench --profile`, and prints the depthwise conv's milliseconds per run:

  alone                   the depthwise conv, then a GlobalAveragePool
  stem, dw, GAP           after the stem conv (3 -> 32, 3x3 stride 2)
  stem, dw, sigmoid, GAP  then a Sigmoid
  stem, dw, project, GAP  then a 1x1 conv 32 -> 16, as in the model
  stem, dw, sigmoid, project, GAP

The depthwise conv does the same work in every row. Measured 2026-12-04 (AMX Xeon, 2 vCPUs):
0.072, 0.079, 0.079, 0.137 and 0.149 ms at 2 threads, 0.133-0.136 ms at 1; the 1x1 conv slows
it also when a Sigmoid reads it first. The kernels split one image between the threads by
positions (the stem and 1x1 convs: each thread its rows of every channel) or by planes (the
depthwise conv, Sigmoid, GAP: each thread its channels), and the evaluator's arena gives a
freed buffer to a later op. Neither explains it alone (tried 2026-12-04): the depthwise conv
split by rows like its neighbours, 0.141 -> 0.134 ms; no two tensors sharing arena bytes, 0.144
-> 0.143 ms; each thread always taking the same piece of every ParallelFor (the pool let either
take either: 3-6% of pieces changed core), no change; all three together, 0.143 -> 0.124-0.130
ms, where the sigmoid variant takes 0.086-0.094. A large 1x1 conv on a side branch (reading the
model's input, not the depthwise conv's output) slows it to 0.100 ms, a small one after a 4x4
MaxPool to 0.089; a 1x1 conv to 2 channels (a 0.1 MB output) still to 0.119, one to 64 to 0.126;
prefetching 4-16 KiB ahead in the depthwise conv instead of 2, no better (0.154-0.175); the
arena's tensors moved off 4 KiB multiples of each other (aliasing), no change. What costs there
is open (this VM exposes no cache counters to perf). Run with the project venv after scripts/setup:

    .venv/bin/python bench/split_locality.py [--qcc build/bin/qcc] [--iters 1000] [--reps 3]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_models(directory):
    rng = np.random.RandomState(0)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.randn(*shape) * 0.1).astype(np.float32), name)

    inits = [weight("ws", 32, 3, 3, 3), weight("bs", 32), weight("wd", 32, 1, 3, 3),
             weight("bd", 32), weight("wp", 16, 32, 1, 1), weight("bp", 16),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    stem = [helper.make_node("Conv", ["x", "ws", "bs"], ["s"], name="stem", kernel_shape=[3, 3],
                             strides=[2, 2], pads=[0, 0, 1, 1]),
            helper.make_node("Clip", ["s", "lo", "hi"], ["r"])]

    def dw(src):
        return [helper.make_node("Conv", [src, "wd", "bd"], ["d"], name="dw", kernel_shape=[3, 3],
                                 pads=[1, 1, 1, 1], group=32),
                helper.make_node("Clip", ["d", "lo", "hi"], ["dd"])]

    gap = lambda src: [helper.make_node("GlobalAveragePool", [src], ["z"])]
    variants = [
        ("alone", [1, 32, 112, 112], dw("x") + gap("dd")),
        ("stem, dw, GAP", [1, 3, 224, 224], stem + dw("r") + gap("dd")),
        ("stem, dw, sigmoid, GAP", [1, 3, 224, 224],
         stem + dw("r") + [helper.make_node("Sigmoid", ["dd"], ["e"])] + gap("e")),
        ("stem, dw, project, GAP", [1, 3, 224, 224],
         stem + dw("r") + [helper.make_node("Conv", ["dd", "wp", "bp"], ["p"], kernel_shape=[1, 1])]
         + gap("p")),
        ("stem, dw, sigmoid, project, GAP", [1, 3, 224, 224],
         stem + dw("r") + [helper.make_node("Sigmoid", ["dd"], ["e"]),
                           helper.make_node("Conv", ["e", "wp", "bp"], ["p"], kernel_shape=[1, 1])]
         + gap("p")),
    ]
    paths = []
    for i, (label, shape, nodes) in enumerate(variants):
        used = {name for node in nodes for name in node.input}
        graph = helper.make_graph(
            nodes, f"split_locality_{i}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT,
                                           [1, 16 if "project" in label else 32, 1, 1])],
            [t for t in inits if t.name in used])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        path = os.path.join(directory, f"variant{i}.onnx")
        onnx.save(model, path)
        paths.append((label, path))
    return paths


def dw_ms(qcc, model, threads, iters):
    """The depthwise conv's ms per run from `qcc bench --profile`."""
    cmd = [qcc, "bench", model, "--threads", str(threads), "--warmup", "50", "--iters", str(iters),
           "--profile"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"split_locality: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[-1] == "dw" and re.fullmatch(r"[0-9.]+", fields[1]):
            return float(fields[1])
    sys.exit(f"split_locality: no step named 'dw' in the profile of {model}:\n{proc.stdout}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qcc", default=os.path.join(REPO, "build", "bin", "qcc"))
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3, help="fresh processes per cell (the min)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if not os.access(args.qcc, os.X_OK):
        sys.exit(f"split_locality: no qcc binary at {args.qcc}: run scripts/setup or pass --qcc")
    with tempfile.TemporaryDirectory() as tmp:
        models = build_models(tmp)
        print(f"depthwise conv 32 x 112 x 112, ms per run (qcc bench --profile, min of {args.reps} "
              f"processes of {args.iters} runs)\n")
        print("| variant | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in args.threads)
              + " |")
        print("|---|" + "---:|" * len(args.threads))
        for label, path in models:
            cells = [min(dw_ms(args.qcc, path, t, args.iters) for _ in range(args.reps))
                     for t in args.threads]
            print(f"| {label} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
