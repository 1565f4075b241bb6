#!/usr/bin/env python3
"""Every CPU path gives the same bits: int8 plans of real models run under each QCC_CPU_FEATURES
cap (native, vnni without AMX, avx512 without VNNI/VBMI, avx2, baseline x86-64) and their
outputs must be byte-identical (kernels/cpu/cpu_features.h). On this CPU the caps pick the AMX
convolution (where the CPU has AMX-INT8), the AVX-512 VNNI, AVX-512, AVX2 and plain kernels of the int8 GEMM and convolutions, the dynamic GEMM's row
quantization, the int8 attention, and every QCC_SIMD_VARIANTS loop (GELU, LayerNorm, softmax).
A cap wider than the CPU runs what the CPU has, so on a narrower CPU the check is weaker, not
wrong; the script says which paths it could compare.

- minilm-l6-v2, `--int8 --dynamic` (no table): Gather, LayerNorm, GELU, the dynamic GEMM with
  per-row scales and the residual in its epilogue, int8 attention.
- resnet20-cifar10, `--int8` calibrated on 32 images: int8 Conv, Add, pooling, Gemm.

fp32 plans are not compared: the fp32 convolution's AVX-512 direct kernel and the im2col + sgemm
path sum in different orders (both within fp32 rounding of the reference).
"""

import argparse
import hashlib
import os
import subprocess
import sys

CAPS = ["native", "vnni", "avx512", "avx2", "baseline"]


def qcc(args, *cmd, env=None):
    r = subprocess.run([args.qcc, *cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"qcc {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def outputs_by_cap(args, plan, test_data, name):
    digests = {}
    for cap in CAPS:
        out = os.path.join(args.work, f"{name}.{cap}")
        env = dict(os.environ, QCC_CPU_FEATURES=cap)
        qcc(args, "run", plan, "--test-data", test_data, "--output-dir", out, env=env)
        files = sorted(f for f in os.listdir(out) if f.endswith(".pb"))
        if not files:
            raise RuntimeError(f"{name} ({cap}): no output written to {out}")
        h = hashlib.sha256()
        for f in files:
            with open(os.path.join(out, f), "rb") as fh:
                h.update(fh.read())
        digests[cap] = h.hexdigest()[:16]
    return digests


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--qcc", required=True)
    p.add_argument("--shared", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    flags = cpu_flags()
    have = [name for name, flag in (("AMX-INT8", "amx_int8"), ("avx512 VNNI", "avx512_vnni"),
                                    ("avx512", "avx512f"), ("avx2", "avx2")) if flag in flags]
    print(f"this CPU has: {', '.join(have) or 'none of avx2/avx512'}; the caps below compare "
          "those paths with each other and with the plain one")

    models = os.path.join(args.shared, "models")
    minilm = os.path.join(models, "minilm-l6-v2", "model.onnx")
    minilm_plan = os.path.join(args.work, "minilm.dynamic.plan")
    qcc(args, "compile", minilm, "--int8", "--dynamic", "-o", minilm_plan)

    resnet = os.path.join(models, "resnet20-cifar10", "model.onnx")
    table = os.path.join(args.work, "resnet20.calib.json")
    qcc(args, "calibrate", resnet, os.path.join(args.shared, "data", "cifar10-test"),
        "--resize", "32", "--crop", "32", "--scale", "0.00392156862745098",
        "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", "--max-samples", "32",
        "-o", table)
    resnet_plan = os.path.join(args.work, "resnet20.int8.plan")
    qcc(args, "compile", resnet, "--int8", "--calib", table, "-o", resnet_plan)

    failures = []
    for name, plan, data in (
            ("minilm-l6-v2 --dynamic", minilm_plan,
             os.path.join(models, "minilm-l6-v2", "test_data_set_1")),
            ("resnet20-cifar10 --int8", resnet_plan,
             os.path.join(models, "resnet20-cifar10", "test_data_set_0"))):
        digests = outputs_by_cap(args, plan, data, name.split()[0])
        print(f"{name}: " + ", ".join(f"{cap} {d}" for cap, d in digests.items()))
        if len(set(digests.values())) != 1:
            failures.append(f"{name}: outputs differ between CPU paths: {digests}")

    # A cap that names no path is reported, and the run goes on natively.
    env = dict(os.environ, QCC_CPU_FEATURES="sse9")
    r = subprocess.run([args.qcc, "run", minilm_plan, "--test-data",
                        os.path.join(models, "minilm-l6-v2", "test_data_set_1")],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0 or "QCC_CPU_FEATURES='sse9'" not in r.stderr:
        failures.append(f"an unknown QCC_CPU_FEATURES: exit {r.returncode}, stderr {r.stderr!r}")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
