"""A small BERT-style encoder written the way torch.onnx.export writes one (int64 token ids,
position ids from Shape/Range arithmetic, embeddings by Gather, LayerNorm written out with
ReduceMean/Sub/Pow/Sqrt/Div, GELU written with Erf, the attention mask added before Softmax,
mean pooling and L2 normalisation), built with the onnx helper, compiled by qcc in fp32, static
int8 and dynamic int8, and checked against ONNX Runtime running the same file:

- the fp32 plan equals ORT within 1e-4;
- the int8 plans keep a mean cosine >= 0.99 to ORT's fp32 embeddings on held-out sequences;
- the compile report says how many MatMuls run in int8 and why the rest stay in float;
- `qcc compare --pairs` reports the recall@1 numpy computes from the fp32 embeddings;
- bad inputs (an id outside the vocabulary, int32 ids, a wrong length) are one-line errors
  naming the input, and no partial output is written.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(13)
VOCAB, SEQ, HIDDEN, HEADS, FFN, LAYERS = 60, 16, 32, 2, 64, 2
HEAD = HIDDEN // HEADS


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, stem):
        self.count += 1
        return f"/{stem}_{self.count}"

    def const(self, value, dtype=np.float32, stem="c"):
        n = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def unsqueeze(self, x, axis):
        return self.node("Unsqueeze", [x, self.const([axis], np.int64)])

    def weight(self, shape, scale):
        return self.const(RNG.normal(0, scale, shape), stem="w")

    def layer_norm(self, x):
        # What torch.onnx.export writes for a LayerNorm module before opset 17.
        mean = self.node("ReduceMean", [x], axes=[-1])
        d = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Pow", [d, self.const(2.0)])], axes=[-1])
        std = self.node("Sqrt", [self.node("Add", [var, self.const(1e-12)])])
        n = self.node("Div", [d, std])
        gamma = self.const(1.0 + RNG.normal(0, 0.1, HIDDEN))
        beta = self.const(RNG.normal(0, 0.1, HIDDEN))
        return self.node("Add", [self.node("Mul", [n, gamma]), beta])

    def linear(self, x, k, n):
        # torch: MatMul with the transposed weight, then Add(bias, product).
        y = self.node("MatMul", [x, self.weight((k, n), 1.0 / np.sqrt(k))])
        return self.node("Add", [self.const(RNG.normal(0, 0.05, n)), y])

    def heads(self, x, batch, seq, perm):
        shape = self.node("Concat", [self.unsqueeze(batch, 0),
                                     self.unsqueeze(seq, 0),
                                     self.const([HEADS], np.int64), self.const([HEAD], np.int64)],
                          axis=0)
        return self.node("Transpose", [self.node("Reshape", [x, shape])], perm=perm)


def encoder():
    b = Builder()
    shape = b.node("Shape", ["input_ids"])
    batch = b.node("Gather", [shape, b.const(0, np.int64)], axis=0)
    seq = b.node("Gather", [shape, b.const(1, np.int64)], axis=0)
    positions = b.node("Range", [b.const(0, np.int64), seq, b.const(1, np.int64)])
    positions = b.unsqueeze(positions, 0)
    x = b.node("Add", [b.node("Gather", [b.weight((VOCAB, HIDDEN), 1.0), "input_ids"]),
                       b.node("Gather", [b.weight((SEQ, HIDDEN), 0.5), positions])])
    x = b.node("Add", [x, b.node("Gather", [b.weight((2, HIDDEN), 0.5), "token_type_ids"])])
    x = b.layer_norm(x)
    mask = b.unsqueeze(b.unsqueeze("attention_mask", 1), 2)
    mask = b.node("Cast", [mask], to=TensorProto.FLOAT)
    mask = b.node("Mul", [b.node("Sub", [b.const(1.0), mask]), b.const(-10000.0)])
    for _ in range(LAYERS):
        q = b.heads(b.linear(x, HIDDEN, HIDDEN), batch, seq, [0, 2, 1, 3])
        k = b.heads(b.linear(x, HIDDEN, HIDDEN), batch, seq, [0, 2, 3, 1])
        v = b.heads(b.linear(x, HIDDEN, HIDDEN), batch, seq, [0, 2, 1, 3])
        scores = b.node("Div", [b.node("MatMul", [q, k]), b.const(np.sqrt(HEAD))])
        probs = b.node("Softmax", [b.node("Add", [scores, mask])], axis=-1)
        ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = b.node("Reshape", [ctx, b.node("Concat", [
            b.unsqueeze(batch, 0), b.unsqueeze(seq, 0),
            b.const([HIDDEN], np.int64)], axis=0)])
        x = b.layer_norm(b.node("Add", [b.linear(ctx, HIDDEN, HIDDEN), x]))
        h = b.linear(x, HIDDEN, FFN)
        erf = b.node("Erf", [b.node("Div", [h, b.const(1.4142135)])])
        h = b.node("Mul", [b.node("Mul", [h, b.node("Add", [erf, b.const(1.0)])]), b.const(0.5)])
        x = b.layer_norm(b.node("Add", [b.linear(h, FFN, HIDDEN), x]))
    m = b.node("Cast", [b.unsqueeze("attention_mask", -1)], to=TensorProto.FLOAT)
    summed = b.node("ReduceSum", [b.node("Mul", [x, m]), b.const([1], np.int64)], keepdims=0)
    count = b.node("Clip", [b.node("ReduceSum", [m, b.const([1], np.int64)], keepdims=0),
                            b.const(1e-9)])
    e = b.node("Div", [summed, count])
    norm = b.node("Sqrt", [b.node("ReduceSum", [b.node("Mul", [e, e]),
                                                 b.const([1], np.int64)], keepdims=1)])
    b.nodes.append(helper.make_node("Div", [e, b.node("Clip", [norm, b.const(1e-12)])],
                                    ["sentence_embedding"], name="/normalize"))
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["N", SEQ])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    g = helper.make_graph(b.nodes, "encoder", ids,
                          [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT,
                                                         ["N", HIDDEN])], b.inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    return model


def tokens(count):
    """Sequences of 3..SEQ tokens ([CLS]=1 ... [SEP]=2, then padding 0)."""
    ids = np.zeros((count, SEQ), np.int64)
    mask = np.zeros((count, SEQ), np.int64)
    types = np.zeros((count, SEQ), np.int64)
    for i in range(count):
        length = int(RNG.integers(3, SEQ + 1))
        ids[i, :length] = np.concatenate([[1], RNG.integers(3, VOCAB, length - 2), [2]])
        mask[i, :length] = 1
        types[i, length // 2:length] = int(RNG.integers(0, 2))
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def write_folder(root, feeds):
    """DATA layout of the shared token files: one sub-folder per input, one [1, SEQ] file each."""
    shutil.rmtree(root, ignore_errors=True)
    for name, values in feeds.items():
        os.makedirs(os.path.join(root, name))
        for i, row in enumerate(values):
            np.save(os.path.join(root, name, f"{i:05d}.npy"), row[None, :])


def qcc(args, *cmd):
    return subprocess.run([args.qcc, *cmd], capture_output=True, text=True)


def input_flags(args, stem, feeds):
    """Writes each input to WORK/<stem>_<name>.npy; returns the --input flags for them."""
    flags = []
    for name, values in feeds.items():
        path = os.path.join(args.work, f"{stem}_{name}.npy")
        np.save(path, values)
        flags += ["--input", f"{name}={path}"]
    return flags


def run_plan(args, plan, feeds, out_dir):
    r = qcc(args, "run", plan, *input_flags(args, "run", feeds), "--output-dir", out_dir)
    if r.returncode != 0:
        raise RuntimeError(f"qcc run {plan}: {r.stderr.strip()}")
    t = onnx.TensorProto()
    with open(os.path.join(out_dir, "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def mean_cosine(a, b):
    dots = np.sum(a * b, axis=1)
    return float(np.mean(dots / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))


def main():
    global VOCAB, SEQ, HIDDEN, HEADS, FFN, LAYERS, HEAD
    p = argparse.ArgumentParser()
    p.add_argument("--qcc")
    p.add_argument("--work")
    p.add_argument("--write-tiny-model", metavar="PATH",
                   help="only write a one-block encoder of hidden size 8 (a fuzzing seed)")
    args = p.parse_args()
    if args.write_tiny_model:
        VOCAB, SEQ, HIDDEN, HEADS, FFN, LAYERS = 12, 8, 8, 2, 16, 1
        HEAD = HIDDEN // HEADS
        onnx.save(encoder(), args.write_tiny_model)
        return 0
    if not args.qcc or not args.work:
        p.error("--qcc and --work are required")
    os.makedirs(args.work, exist_ok=True)
    failures = []
    model = encoder()
    path = os.path.join(args.work, "encoder.onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    calib, held_out = tokens(96), tokens(32)
    want = session.run(None, held_out)[0]

    # fp32: the plan equals ONNX Runtime.
    plan = os.path.join(args.work, "encoder.fp32.plan")
    r = qcc(args, "compile", path, "--fp32", "-o", plan)
    if r.returncode != 0:
        print(r.stderr)
        return 1
    got = run_plan(args, plan, held_out, os.path.join(args.work, "fp32.out"))
    err = float(np.max(np.abs(got - want)))
    print(f"fp32 plan vs ORT: max abs error {err:.2e} on {len(want)} sequences")
    if err > 1e-4:
        failures.append(f"fp32 plan differs from ORT by {err}")

    # int8, static (calibrated) and dynamic.
    data = os.path.join(args.work, "tokens")
    write_folder(data, calib)
    table = os.path.join(args.work, "encoder.calib.json")
    r = qcc(args, "calibrate", path, data, "-o", table)
    if r.returncode != 0:
        failures.append(f"calibrate failed: {r.stderr.strip()}")
    for name, flags in (("static", ["--calib", table]), ("dynamic", ["--dynamic"]),
                        ("static, attention in fp32", ["--calib", table, "--exclude", "Attention"])):
        plan = os.path.join(args.work, f"encoder.{name.replace(' ', '_').replace(',', '')}.plan")
        r = qcc(args, "compile", path, "--int8", *flags, "-o", plan)
        if r.returncode != 0:
            failures.append(f"{name}: compile failed: {r.stderr.strip()}")
            continue
        report = [line.strip() for line in r.stdout.splitlines()]
        gemm_line = next((line for line in report if line.startswith("MatMul/Gemm:")), "")
        # 6 Linear layers per block in int8; each block's attention (its 2 products of two
        # activations) one fused step, in int8 unless --exclude Attention, reported as such.
        linear = 6 * LAYERS
        if not gemm_line.startswith(f"MatMul/Gemm: {linear} of {linear} in int8"):
            failures.append(f"{name}: report says '{gemm_line}'")
        attention_line = next((line for line in report if line.startswith("attention:")), "")
        int8_attention = 0 if "--exclude" in flags else LAYERS
        if not attention_line.startswith(f"attention: {LAYERS} fused") or \
                f"activations); {int8_attention} in int8" not in attention_line or \
                f"; {LAYERS - int8_attention} in fp32" not in attention_line:
            failures.append(f"{name}: report says '{attention_line}' about attention")
        got = run_plan(args, plan, held_out, os.path.join(args.work, f"{name}.out"))
        cos = mean_cosine(got, want)
        print(f"{name} int8 plan vs ORT fp32: mean cosine {cos:.5f}; {gemm_line}")
        if cos < 0.99:
            failures.append(f"{name}: mean cosine {cos:.5f} < 0.99")

    # compare --pairs: sample 2i is query i, 2i+1 its document; recall@1 of fp32 as numpy has it.
    pairs = [[f"p{i}", "q", "d"] for i in range(len(want) // 2)]
    pairs_file = os.path.join(args.work, "pairs.json")
    with open(pairs_file, "w") as f:
        json.dump(pairs, f)
    write_folder(os.path.join(args.work, "held_out"), held_out)
    unit = want / np.linalg.norm(want, axis=1, keepdims=True)
    sims = unit[0::2] @ unit[1::2].T
    recall = float(np.mean(np.argmax(sims, axis=1) == np.arange(len(pairs))))
    r = qcc(args, "compare", path, os.path.join(args.work, "encoder.static.plan"),
            os.path.join(args.work, "held_out"), "--pairs", pairs_file)
    line = next((x for x in r.stdout.splitlines() if x.startswith("retrieval")), "")
    fields = dict(f.split("=") for f in r.stdout.splitlines()[-1].split()[1:] if "=" in f)
    print(f"compare --pairs: {line}")
    if r.returncode != 0 or abs(float(fields.get("fp32_recall1", -1)) - recall) > 1.01 / len(pairs):
        failures.append(f"compare --pairs: fp32 recall {fields.get('fp32_recall1')} vs numpy "
                        f"{recall:.4f}: {r.stderr.strip()}")
    r = qcc(args, "compare", path, os.path.join(args.work, "encoder.static.plan"),
            os.path.join(args.work, "held_out"), "--pairs", pairs_file, "--max-samples", "7")
    print(f"compare --pairs --max-samples 7: exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode != 1 or "3 pairs need 6 samples" not in r.stderr:
        failures.append("an odd sample count for --pairs is not a clean error")

    # Bad inputs.
    plan = os.path.join(args.work, "encoder.static.plan")
    one = {k: v[:1] for k, v in held_out.items()}
    bad_cases = []
    ids = one["input_ids"].copy()
    ids[0, 3] = VOCAB + 5
    bad_cases.append(("id_outside_vocabulary", dict(one, input_ids=ids),
                      ["'input_ids'", f"id {VOCAB + 5}", f"{VOCAB} rows"]))
    bad_cases.append(("int32_ids", dict(one, input_ids=one["input_ids"].astype(np.int32)),
                      ["'input_ids'", f"i64 [N,{SEQ}]", "i32"]))
    bad_cases.append(("wrong_length", dict(one, attention_mask=np.ones((1, SEQ + 4), np.int64)),
                      ["'attention_mask'", f"[N,{SEQ}]", f"[1,{SEQ + 4}]"]))
    for name, feeds, mentions in bad_cases:
        out_dir = os.path.join(args.work, f"bad_{name}")
        shutil.rmtree(out_dir, ignore_errors=True)
        r = qcc(args, "run", plan, *input_flags(args, f"bad_{name}", feeds), "--output-dir",
                out_dir)
        lines = r.stderr.strip().splitlines()
        print(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
        ok = (r.returncode == 1 and len(lines) == 1 and all(m in lines[0] for m in mentions)
              and not os.path.exists(os.path.join(out_dir, "output_0.pb")))
        if not ok:
            failures.append(f"{name}: expected a one-line error naming {mentions}, no output")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
