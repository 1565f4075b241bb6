#!/usr/bin/env python3
"""Round trip of `qcc export --qdq`: the exported QDQ model, run by ONNX Runtime, against qcc's own
int8 plan from the same table (issue: top-1 agreement >= 99%, and ORT's output SQNR against fp32
within 0.5 dB of the plan's).

For one model: `qcc calibrate` on shard 0/2 of the images, `qcc compile --int8` and `qcc export`
with the same table and flags, then on held-out images (shard 1/2, at most --samples) the plan
runs in qcc (`qcc run --input`, batches of 32), the QDQ model and the fp32 model in ONNX Runtime,
all on the same preprocessed arrays (bench/ort_side.py's PIL + numpy preprocessing). Also checks
the QDQ model with onnx.checker (full check) and that its weights are per-channel int8 DQs.

    qdq_roundtrip.py --qcc build/bin/qcc --model M --data DIR --work DIR [--pre FLAGS...]
                     [--asymmetric] [--samples 250] [--shape S]

Prints one line of figures; exits 1 when a bar is missed.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import ort_side  # noqa: E402


# ctest's SKIP_RETURN_CODE for the qdq tests (tests/CMakeLists.txt).
SKIPPED = 77


def ort_int8_is_exact():
    """False on an x86 CPU without VNNI (no avx512_vnni, no avx_vnni): there ONNX Runtime's int8
    convolutions and GEMMs multiply u8 by s8 with vpmaddubsw, whose 16-bit pair sums saturate, so
    ORT's int8 outputs are not the exact integer arithmetic these tests compare qcc against
    (ORT's documentation of quantization names the saturation on AVX2 and non-VNNI AVX-512)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), None)
    except OSError:
        return True
    if flags is None or "avx2" not in flags:
        return True  # not an x86 CPU with these kernels
    return "avx512_vnni" in flags or "avx_vnni" in flags


def skip_if_ort_saturates(tag, sqnr_plan, sqnr_ort):
    """Missing a bar against ORT counts as a skip, not a failure, only where ORT's int8 kernels
    saturate (ort_int8_is_exact) and ORT is the one further from fp32; otherwise None."""
    if ort_int8_is_exact() or not sqnr_ort < sqnr_plan:
        return None
    print(f"{tag}: skipped: this CPU has no VNNI, where ONNX Runtime's u8 x s8 kernels saturate; "
          f"ORT is {sqnr_plan - sqnr_ort:.2f} dB further from fp32 than qcc, so it is no "
          f"reference here (the bar holds on CPUs with VNNI)")
    return SKIPPED


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"qdq_roundtrip: `{' '.join(cmd)}` failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def sqnr_db(reference, value):
    noise = np.sum((reference.astype(np.float64) - value) ** 2)
    signal = np.sum(reference.astype(np.float64) ** 2)
    return float("inf") if noise == 0 else 10.0 * np.log10(signal / noise)


def run_plan(qcc, plan, input_name, x, work, batch=32):
    """The plan's first output on x, through `qcc run --input` in batches of `batch`."""
    outs = []
    for start in range(0, len(x), batch):
        chunk = os.path.join(work, "chunk.npy")
        np.save(chunk, x[start:start + batch])
        out_dir = os.path.join(work, "out")
        run([qcc, "run", plan, "--input", f"{input_name}={chunk}", "--output-dir", out_dir])
        t = onnx.TensorProto()
        with open(os.path.join(out_dir, "output_0.pb"), "rb") as f:
            t.ParseFromString(f.read())
        outs.append(numpy_helper.to_array(t))
    return np.concatenate(outs)


def agreement_of(a, b):
    """Per-sample top-1 agreement of a and b, its percentage, the number of samples that agree
    only through an exact tie, and for the samples they disagree on a's top-2 margin as a fraction
    of a's output range (how close to a tie they are).

    A quantized output can hold an exact tie at the top (ORT's int8 QDQ squeezenet ends with a
    Q/DQ on its softmax: probabilities in steps of 1/127); argmax then picks the lowest index. The
    top-1 of a sample is therefore the set of classes at its maximum, and two outputs agree when
    those sets intersect."""
    flat_a, flat_b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    top_a = flat_a == flat_a.max(axis=1, keepdims=True)
    top_b = flat_b == flat_b.max(axis=1, keepdims=True)
    same = (top_a & top_b).any(axis=1)
    by_tie = int(np.sum(same & (flat_a.argmax(1) != flat_b.argmax(1))))
    top2 = np.sort(flat_a, axis=1)[:, -2:]
    margins = (top2[:, 1] - top2[:, 0])[~same] / max(float(np.ptp(flat_a)), 1e-12)
    return same, 100.0 * float(np.mean(same)), by_tie, margins


def common_args(p, samples):
    """The arguments every QDQ test script takes."""
    p.add_argument("--qcc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--samples", type=int, default=samples)
    p.add_argument("--shape", default=None, help="qcc compile --shape for the plan")
    p.add_argument("--pre", nargs=argparse.REMAINDER, default=[])


def held_out_images(data, pre_flags, samples):
    """The odd-index images of `data` (the even ones calibrate), at most `samples`, preprocessed
    like qcc's flags `pre_flags`, as one NCHW float32 batch."""
    pre = ort_side.parse_pre(pre_flags)
    paths = ort_side.list_images(data)[1::2][:samples]
    return np.stack([ort_side.load_image(os.path.join(data, q), pre) for q in paths])


def check_qdq_model(path, asymmetric):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    inits = {t.name: t for t in model.graph.initializer}
    ops = [n.op_type for n in model.graph.node]
    weight_dqs = bias_dqs = 0
    for n in model.graph.node:
        if n.op_type != "DequantizeLinear" or n.input[0] not in inits:
            continue
        w = inits[n.input[0]]
        if w.data_type == onnx.TensorProto.INT32:
            # A bias: int32 at scale s_x * s_w, zero point 0 (absent), read by a Conv or Gemm.
            bias_dqs += 1
            assert len(n.input) < 3 or not numpy_helper.to_array(inits[n.input[2]]).any(), \
                f"{n.name}: bias zero point is not 0"
            readers = [m.op_type for m in model.graph.node if n.output[0] in m.input]
            assert readers and set(readers) <= {"Conv", "Gemm", "Add"}, \
                f"{n.name}: bias read by {readers}"
            continue
        weight_dqs += 1
        assert w.data_type == onnx.TensorProto.INT8, f"{n.name}: weights are not int8"
        zp = numpy_helper.to_array(inits[n.input[2]])
        assert not zp.any(), f"{n.name}: weight zero points are not 0"
    assert bias_dqs <= weight_dqs, f"{bias_dqs} int32 biases for {weight_dqs} int8 weights"
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear":
            zp = inits[n.input[2]]
            want = onnx.TensorProto.UINT8 if asymmetric else onnx.TensorProto.INT8
            assert zp.data_type == want, f"{n.name}: zero point type {zp.data_type}"
            if not asymmetric:
                assert numpy_helper.to_array(zp) == 0, f"{n.name}: zero point not 0"
    assert "BatchNormalization" not in ops, "a BatchNormalization is left in the QDQ model"
    return ops.count("QuantizeLinear"), weight_dqs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--asymmetric", action="store_true")
    p.add_argument("--min-agreement", type=float, default=99.0)
    p.add_argument("--max-sqnr-gap", type=float, default=0.5)
    common_args(p, 250)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = os.path.basename(os.path.dirname(args.model))
    tag = name + ("-asym" if args.asymmetric else "")
    table = os.path.join(args.work, tag + ".calib.json")
    plan = os.path.join(args.work, tag + ".plan")
    qdq = os.path.join(args.work, tag + ".qdq.onnx")
    asym = ["--asymmetric"] if args.asymmetric else []
    if not os.path.exists(table):
        run([args.qcc, "calibrate", args.model, args.data, "--shard", "0/2", "-o", table]
            + args.pre)
    shape = ["--shape", args.shape] if args.shape else []
    run([args.qcc, "compile", args.model, "--int8", "--calib", table, "-o", plan] + asym + shape)
    run([args.qcc, "export", args.model, "--qdq", "--calib", table, "-o", qdq] + asym)
    quantized, weight_dqs = check_qdq_model(qdq, args.asymmetric)

    x = held_out_images(args.data, args.pre, args.samples)
    fp32_session = ort_side.session(args.model, 2)
    model_input = fp32_session.get_inputs()[0]
    input_name = model_input.name
    # An fp16 model (squeezenet's Caffe2 export) takes fp16, and so does its QDQ export (fp32
    # inside, with a Cast at each input and output).
    x_model = x.astype(np.float16) if model_input.type == "tensor(float16)" else x
    batch = 1 if model_input.shape[0] == 1 else 32  # a Reshape may pin the batch to 1

    def batched(session, feed):
        return np.concatenate([session.run(None, {input_name: feed[i:i + batch]})[0]
                               for i in range(0, len(feed), batch)])

    fp32 = batched(fp32_session, x_model).astype(np.float32)
    qdq_session = ort_side.session(qdq, 2)
    for what, got, want in (("input", qdq_session.get_inputs()[0], model_input),
                            ("output", qdq_session.get_outputs()[0],
                             fp32_session.get_outputs()[0])):
        if got.type != want.type:
            sys.exit(f"{tag}: the QDQ model's {what} is {got.type}, the model's {want.type}: "
                     f"export changed the model's interface")
    ort_qdq = batched(qdq_session, x_model).astype(np.float32)
    scratch = os.path.join(args.work, tag)  # per model: tests run in parallel
    os.makedirs(scratch, exist_ok=True)
    plan_out = run_plan(args.qcc, plan, input_name, x_model, scratch, batch)
    plan_out = plan_out.astype(np.float32).reshape(ort_qdq.shape)
    same, agreement, by_tie, margins = agreement_of(plan_out, ort_qdq)
    sqnr_plan = sqnr_db(fp32, plan_out)
    sqnr_ort = sqnr_db(fp32, ort_qdq)
    gap = abs(sqnr_ort - sqnr_plan)
    print(f"{tag}: {len(x)} held-out samples, {quantized} tensors and {weight_dqs} weights in "
          f"Q/DQ; top-1 agreement ORT(QDQ) vs qcc plan {agreement:.2f}%; SQNR vs fp32: plan "
          f"{sqnr_plan:.2f} dB, ORT(QDQ) {sqnr_ort:.2f} dB, gap {gap:.2f} dB; max |ORT(QDQ) - "
          f"plan| {np.abs(ort_qdq - plan_out).max():.4g}; {by_tie} agree through an exact tie; the "
          f"{int((~same).sum())} samples they "
          f"disagree on have plan top-2 margins of at most "
          f"{(margins.max() if len(margins) else 0) * 100:.2f}% of the output range")
    ok = agreement >= args.min_agreement and gap <= args.max_sqnr_gap
    if not ok:
        skipped = skip_if_ort_saturates(tag, sqnr_plan, sqnr_ort)
        if skipped is not None:
            return skipped
        print(f"qdq_roundtrip: {tag} misses the bar (agreement >= {args.min_agreement}%, SQNR gap "
              f"<= {args.max_sqnr_gap} dB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
