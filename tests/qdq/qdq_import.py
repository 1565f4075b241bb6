#!/usr/bin/env python3
"""Import of QDQ models: ONNX Runtime's quantize_static QDQ model of a network, compiled by
`qcc compile --int8` (no table: the model's own scales and zero points), against ONNX Runtime
running the same QDQ model (issue: top-1 agreement >= 99.5% on the shared images).

ORT side (bench/ort_side.py, as bench/compare-ort uses it): `prepare` (fp16 -> fp32, opset 13,
quant_pre_process), then `quantize_static` QDQ with per-channel int8 weights, MinMax on the even
images (--calib-samples of them), activations int8 symmetric (s8) or uint8 (u8). qcc side:
`qcc compile --int8` of that file. Both then run the odd (held-out) images, at most --samples,
preprocessed once with PIL + numpy.

    qdq_import.py --qcc build/bin/qcc --model M --data DIR --work DIR --act s8|u8 [--spec JSON]
                  [--shape S] [--samples 500] [--pre FLAGS...]
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, HERE)
import ort_side  # noqa: E402
from qdq_roundtrip import (agreement_of, common_args, held_out_images, run,  # noqa: E402
                           run_plan, skip_if_ort_saturates, sqnr_db)


def main():
    p = argparse.ArgumentParser()
    common_args(p, 500)
    p.add_argument("--act", choices=("s8", "u8"), required=True)
    p.add_argument("--format", choices=("qdq", "qoperator"), default="qdq",
                   help="ORT's QDQ model or its QOperator one (QLinearConv, QLinearAdd, QGemm...)")
    p.add_argument("--spec", default="{}", help="ort_side.py prepare --spec")
    p.add_argument("--calib-samples", type=int, default=100)
    p.add_argument("--calib-batch", type=int, default=10, help="1 for a fixed-batch-1 model")
    p.add_argument("--min-agreement", type=float, default=99.5)
    args = p.parse_args()
    name = os.path.basename(os.path.dirname(args.model))
    tag = f"{args.act}" if args.format == "qdq" else f"{args.act} {args.format}"
    work = os.path.join(args.work, f"{name}-{tag.replace(' ', '-')}")
    os.makedirs(work, exist_ok=True)
    python = sys.executable
    side = os.path.join(HERE, "..", "..", "bench", "ort_side.py")
    prep = json.loads(run([python, side, "prepare", "--model", args.model, "--work", work,
                           "--spec", args.spec]).strip().splitlines()[-1])
    images = ort_side.list_images(args.data)
    listing = os.path.join(work, "calib.txt")
    with open(listing, "w") as f:
        f.write("\n".join(os.path.join(args.data, q) for q in images[0::2]))
    qdq = os.path.join(work, f"model.{args.act}.{args.format}.onnx")
    run([python, side, "quantize", "--model", prep["pre"], "--out", qdq, "--list", listing,
         "--samples", str(args.calib_samples), "--method", "minmax", "--act", args.act,
         "--pre", json.dumps(args.pre), "--batch", str(args.calib_batch),
         "--format", args.format])
    plan = os.path.join(work, f"{args.act}.plan")
    shape = ["--shape", args.shape] if args.shape else []
    compile_out = run([args.qcc, "compile", qdq, "--int8", "-o", plan] + shape)

    x = held_out_images(args.data, args.pre, args.samples)
    session = ort_side.session(qdq, 2)
    input_name = session.get_inputs()[0].name
    fixed_batch = session.get_inputs()[0].shape[0] == 1  # squeezenet's Reshape pins batch 1

    def ort_run(path_or_session):
        s = path_or_session if not isinstance(path_or_session, str) else ort_side.session(
            path_or_session, 2)
        if not fixed_batch:
            return s.run(None, {input_name: x})[0]
        return np.concatenate([s.run(None, {input_name: x[i:i + 1]})[0] for i in range(len(x))])

    ort_out = ort_run(session)
    fp32 = ort_run(prep["fp32"])
    plan_out = run_plan(args.qcc, plan, input_name, x, work, 1 if fixed_batch else 32)
    plan_out = plan_out.reshape(ort_out.shape)
    same, agreement, by_tie, margins = agreement_of(plan_out, ort_out)
    summary = compile_out.splitlines()[0].split(": ", 1)[-1]
    print(f"{name} {tag}: qcc compile of ORT's {args.format} model: {summary}; {len(x)} held-out "
          f"images: top-1 agreement with ORT running it {agreement:.2f}%; SQNR vs fp32: qcc "
          f"{sqnr_db(fp32, plan_out):.2f} dB, ORT {sqnr_db(fp32, ort_out):.2f} dB, qcc vs ORT "
          f"{sqnr_db(ort_out, plan_out):.2f} dB; {by_tie} agree through an exact tie; the "
          f"{int((~same).sum())} disagreements have qcc "
          f"top-2 margins of at most {(margins.max() if len(margins) else 0) * 100:.2f}% of the "
          f"output range")
    if agreement < args.min_agreement:
        skipped = skip_if_ort_saturates(f"{name} {tag}", sqnr_db(fp32, plan_out),
                                        sqnr_db(fp32, ort_out))
        if skipped is not None:
            return skipped
        print(f"qdq_import: {name} {tag} misses the bar (agreement >= {args.min_agreement}%)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
