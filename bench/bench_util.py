"""What the side benchmarks of bench/compare-ort (transformer_vs_ort.py, detector_vs_ort.py)
share: running a step as a checked subprocess, and their command line when run alone."""

import argparse
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_checked(cmd):
    """stdout of `cmd`; RuntimeError with the end of its stderr when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({proc.returncode}): "
                           + " | ".join(proc.stderr.strip().splitlines()[-4:]))
    return proc.stdout


def standalone_main(description, run, markdown, workdir_name, quick_help):
    """--build, --shared, --quick, --workdir; runs run(qcc, shared, work, quick), keeps the
    results in WORKDIR/results.json and prints markdown(results)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--build", default=os.environ.get("QCC_BUILD_DIR", "build"))
    p.add_argument("--shared", default=os.environ.get(
        "QCC_SHARED_DIR", os.path.join(REPO, "..", "shared")))
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--workdir", help=f"default BUILD/{workdir_name}")
    args = p.parse_args()
    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    qcc = os.path.join(build, "bin", "qcc")
    work = args.workdir or os.path.join(build, workdir_name)
    r = run(qcc, os.path.abspath(args.shared), work, args.quick)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(r, f, indent=1)
    print(markdown(r))
