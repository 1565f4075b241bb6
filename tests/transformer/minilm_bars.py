"""The transformer bars of issue 13 on the shared minilm-l6-v2 (a torch.onnx.export of the
trained all-MiniLM-L6-v2 sentence-embedding model) and the 1,000 shared manual-page pairs:

- calibrated on the first 500 token files (250 pairs), static int8 with qcc's default flags,
  and dynamic int8 (no table): recall@1 short -> long within 1.0 point of fp32, mean cosine of
  the embeddings to fp32 >= 0.99, from `qcc compare --pairs`;
- fp32 recall@1 as qcc's evaluator computes it equals DATA.md's PyTorch baseline (58.6%) within
  0.3 points (the evaluator, the retrieval metric and the token files agree with an independent
  implementation).
The calibration texts are also among the 2,000 evaluated (recall@1 needs all of them).
"""
import argparse
import os
import subprocess
import sys

FP32_BASELINE = 0.586  # DATA.md: PyTorch, recall@1 short -> long on the 1,000 pairs


def qcc(args, *cmd):
    r = subprocess.run([args.qcc, *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"qcc {' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def fields(stdout):
    last = [line for line in stdout.splitlines() if line.startswith("compare:")][-1]
    return {k: float(v) for k, v in (f.split("=") for f in last.split()[1:])}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--qcc", required=True)
    p.add_argument("--shared", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.shared, "models/minilm-l6-v2/model.onnx")
    tokens = os.path.join(args.shared, "data/manpage-pairs/tokens")
    pairs = os.path.join(args.shared, "data/manpage-pairs/pairs.json")
    table = os.path.join(args.work, "minilm.calib.json")
    qcc(args, "calibrate", model, tokens, "--max-samples", "500", "-o", table)
    failures = []
    for name, flags in (("static", ["--calib", table]), ("dynamic", ["--dynamic"])):
        plan = os.path.join(args.work, f"minilm.{name}.plan")
        report = qcc(args, "compile", model, "--int8", *flags, "-o", plan)
        gemms = [line.strip() for line in report.splitlines() if "MatMul/Gemm:" in line]
        out = qcc(args, "compare", model, plan, tokens, "--pairs", pairs)
        f = fields(out)
        retrieval = [line for line in out.splitlines() if line.startswith("retrieval")]
        print(f"{name}: {gemms[0] if gemms else ''}")
        print(f"{name}: {retrieval[0] if retrieval else ''}; mean cosine {f['cosine']:.5f}")
        change = 100 * (f["plan_recall1"] - f["fp32_recall1"])
        if abs(change) > 1.0:
            failures.append(f"{name}: recall@1 changes by {change:+.2f} points (bar: 1.0)")
        if f["cosine"] < 0.99:
            failures.append(f"{name}: mean cosine {f['cosine']:.5f} < 0.99")
        if abs(f["fp32_recall1"] - FP32_BASELINE) > 0.003:
            failures.append(f"fp32 recall@1 {f['fp32_recall1']:.4f} is not DATA.md's 0.586")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
