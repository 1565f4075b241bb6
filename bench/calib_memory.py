#!/usr/bin/env python3
"""Peak memory of `qcc calibrate` on 500 and on 5,000 images: calibration must not grow with N.

Runs `qcc calibrate` (the same flags as calib_vs_ort.py) on the first 500 and the first 5,000
images, each in a fresh process, prints each run's wall time and peak RSS (ru_maxrss from wait4)
and the ratio large/small, and exits 1 when qcc's peak at 5,000 is more than 15% above its peak
at 500, so it doubles as a check. --with-ort adds ONNX Runtime's calibrator (create_calibrator +
collect_data + compute_data) at both sizes for contrast; it never affects the exit status.

    .venv/bin/python bench/calib_memory.py [--build build] [--methods minmax entropy] [--with-ort]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calib_vs_ort as common  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_common_args(parser)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--methods", nargs="+", choices=common.METHODS, default=["minmax"])
    parser.add_argument("--limit", type=float, default=0.15,
                        help="allowed growth of qcc's peak RSS from --small to --large")
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; medians are shown")
    parser.add_argument("--with-ort", action="store_true",
                        help="also run ONNX Runtime's calibrator at both sizes (Entropy at "
                        "5,000 images needs about 15 GB)")
    parser.add_argument("--skip-qcc", action="store_true",
                        help="run ONNX Runtime alone (needs --with-ort; checks nothing)")
    args = parser.parse_args()
    if args.skip_qcc and not args.with_ort:
        sys.exit("calib_memory: --skip-qcc leaves nothing to run without --with-ort")
    if args.with_ort:
        for samples in (args.small, args.large):
            common.check_batch(args.batch, samples, args.methods)

    qcc, model, data = common.resolve_paths(args, need_qcc=not args.skip_qcc)
    common.list_images(data, args.large)  # fail early on a short folder
    print(common.machine_header(qcc, not args.skip_qcc, args.threads))
    print(f"# {args.model} on the first {args.small} and {args.large} images of {args.data}, "
          f"batch {args.batch}, repeats {args.repeats} (medians)")
    print(f"{'tool':<20} {'method':<8} {'samples':>7} {'wall s':>8} {'peak RSS MiB':>12}")
    tools = ([] if args.skip_qcc else ["qcc"]) + (["ORT calibrator"] if args.with_ort else [])
    verdicts, failed = [], False
    with tempfile.TemporaryDirectory(prefix="calib_memory.") as tmp:
        for method in args.methods:
            for tool in tools:
                peaks = []
                for samples in (args.small, args.large):
                    wall, rss, _ = common.run_repeated(tool, method, samples, args, qcc, model,
                                                       data, tmp)
                    peaks.append(rss)
                    print(f"{tool:<20} {method:<8} {samples:>7} {wall:>8.2f} {rss:>12.1f}",
                          flush=True)
                ratio = peaks[1] / peaks[0]
                verdict = f"{tool} {method}: peak RSS {args.large}/{args.small} = {ratio:.3f}"
                if tool == "qcc":
                    ok = ratio <= 1.0 + args.limit
                    failed |= not ok
                    verdict += f" (limit {1.0 + args.limit:.2f}: {'ok' if ok else 'FAIL'})"
                verdicts.append(verdict)
    for verdict in verdicts:
        print(verdict)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
