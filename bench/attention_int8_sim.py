#!/usr/bin/env python3
"""Would int8 attention hold accuracy? Issue 13 asks for the activation x activation products
(Q.K^T and softmax.V) in int8 "where it holds accuracy, decided by measurement". This measures it
before any kernel is written: the two products of every attention block of minilm-l6-v2 get
QuantizeLinear/DequantizeLinear on both operands (what an int8 kernel computes exactly, since an
int8 product accumulates exactly in int32), and ONNX Runtime runs the model in fp32 otherwise.

- Q, K and V: int8 per tensor, symmetric, scale max|x| / 127 from the first 500 token files (the
  texts `qcc calibrate --max-samples 500` reads; minmax, as the static plans' GEMM inputs use).
- softmax(.): int8 with scale 1/127 (it is in [0, 1]: levels 0..127), as qcc's int8 attention
  step feeds it to its s8 x s8 GEMM (`--probs-u8`: uint8 with scale 1/255 instead).
Prints recall@1 on the 1,000 shared pairs and the mean cosine of the embeddings to fp32 for fp32,
int8 Q.K^T only, int8 softmax.V only, and both.

    .venv/bin/python bench/attention_int8_sim.py [--shared ../shared] [--threads 2]
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer_vs_ort import load_tokens, recall  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attention_matmuls(model):
    """The MatMuls whose two operands are both computed (not initializers): Q.K^T and P.V."""
    inits = {i.name for i in model.graph.initializer}
    consts = {n.output[0] for n in model.graph.node if n.op_type == "Constant"}
    producers = {o: n for n in model.graph.node for o in n.output}
    scores, contexts = [], []
    for n in model.graph.node:
        if n.op_type != "MatMul" or any(i in inits or i in consts for i in n.input):
            continue
        first = producers.get(n.input[0])
        (contexts if first is not None and first.op_type == "Softmax" else scores).append(n)
    return scores, contexts


def session(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def embed(model, tokens, count, threads, outputs=None):
    s = session(model, threads)
    names = outputs or [s.get_outputs()[0].name]
    rows = [[] for _ in names]
    for first in range(0, count, 32):
        got = s.run(names, load_tokens(tokens, first, min(32, count - first)))
        for r, g in zip(rows, got):
            r.append(g)
    return rows


def ranges(model, tensors, tokens, threads):
    """max |x| of each tensor over the first 500 token files."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in tensors:
        m.graph.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    got = embed(m, tokens, 500, threads, tensors)
    return {t: float(max(np.abs(b).max() for b in batches)) for t, batches in zip(tensors, got)}


def with_fake_quant(model, matmuls, amax, probs_u8):
    """A copy of `model` with Q/DQ on both operands of each MatMul in `matmuls`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    nodes = {n.name: n for n in m.graph.node}
    extra = []
    for mm in matmuls:
        node = nodes[mm.name]
        for i, t in enumerate(node.input):
            probs = i == 0 and t in amax.get("__softmax__", ())
            scale = (1.0 / 255 if probs_u8 else 1.0 / 127) if probs else amax[t] / 127
            zp_type, zp = (TensorProto.UINT8, 0) if probs and probs_u8 else (TensorProto.INT8, 0)
            stem = f"{t}_fq{i}_{mm.name}"
            m.graph.initializer.extend([
                numpy_helper.from_array(np.array(scale, np.float32), stem + "_s"),
                helper.make_tensor(stem + "_z", zp_type, [], [zp])])
            extra += [helper.make_node("QuantizeLinear", [t, stem + "_s", stem + "_z"],
                                       [stem + "_q"]),
                      helper.make_node("DequantizeLinear", [stem + "_q", stem + "_s", stem + "_z"],
                                       [stem + "_dq"])]
            node.input[i] = stem + "_dq"
    # Q/DQ first: they read tensors made earlier, and ORT wants a topological order.
    ordered = []
    made = {i.name for i in m.graph.input} | {i.name for i in m.graph.initializer}
    pending = list(m.graph.node) + extra
    while pending:
        rest = []
        for n in pending:
            if all(x in made or x == "" for x in n.input):
                ordered.append(n)
                made.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise RuntimeError("cannot order the graph")
        pending = rest
    del m.graph.node[:]
    m.graph.node.extend(ordered)
    return m


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shared", default=os.environ.get("QCC_SHARED_DIR",
                                                      os.path.join(REPO, "..", "shared")))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--probs-u8", action="store_true")
    a = p.parse_args()
    model = onnx.load(os.path.join(a.shared, "models/minilm-l6-v2/model.onnx"))
    tokens = os.path.join(a.shared, "data/manpage-pairs/tokens")
    count = len(os.listdir(os.path.join(tokens, "input_ids")))
    scores, contexts = attention_matmuls(model)
    print(f"{len(scores)} Q.K^T and {len(contexts)} softmax.V products; {count} texts", flush=True)
    tensors = sorted({t for n in scores for t in n.input} | {n.input[1] for n in contexts})
    amax = ranges(model, tensors, tokens, a.threads)
    amax["__softmax__"] = {n.input[0] for n in contexts}
    base = np.concatenate(embed(model, tokens, count, a.threads)[0])
    rows = [("fp32 (ONNX Runtime)", base)]
    for name, mms in (("int8 Q.K^T", scores), ("int8 softmax.V", contexts),
                      ("int8 both", scores + contexts)):
        fake = with_fake_quant(model, mms, amax, a.probs_u8)
        rows.append((name, np.concatenate(embed(fake, tokens, count, a.threads)[0])))
    print("| attention products | recall@1 | change (points) | mean cosine to fp32 |")
    print("|---|---|---|---|")
    r0 = recall(base[0::2], base[1::2])
    for name, e in rows:
        r = recall(e[0::2], e[1::2])
        norms = np.linalg.norm(e, axis=1) * np.linalg.norm(base, axis=1)
        cos = np.mean(np.sum(e * base, 1) / norms)
        print(f"| {name} | {100 * r:.2f}% | {100 * (r - r0):+.2f} | {cos:.5f} |")


if __name__ == "__main__":
    main()
