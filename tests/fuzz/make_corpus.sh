#!/usr/bin/env bash
# Seeds of the fuzz targets (issue 16), from the shared models and data and from what qcc itself
# writes: OUT/seeds/<target>/ holds small real files of each kind, the starting points libFuzzer
# mutates. Safe to run again (it rewrites the seeds).
#   tests/fuzz/make_corpus.sh QCC_BINARY SHARED_DIR ONNX_TESTDATA_DIR OUT
set -euo pipefail
qcc="$1"
shared="$2"
testdata="$3"
out="$4"
seeds="$out/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{onnx_import,plan_load,calib_table,tensor_file,image} "$out/work"

# onnx_import: mnist-8 and the ONNX per-operator conformance models (small, every op).
cp "$shared/models/mnist-8/model.onnx" "$seeds/onnx_import/mnist-8.onnx"
n=0
for model in "$testdata"/node/*/model.onnx; do
  [[ -f "$model" ]] || continue
  if (( $(stat -c %s "$model") < 4096 && n % 4 == 0 )); then
    cp "$model" "$seeds/onnx_import/$(basename "$(dirname "$model")").onnx"
  fi
  n=$((n + 1))
done

# tensor_file: ONNX TensorProto files and .npy files.
cp "$shared/models/mnist-8/test_data_set_0/input_0.pb" "$seeds/tensor_file/mnist_input.pb"
cp "$shared/models/mnist-8/test_data_set_0/output_0.pb" "$seeds/tensor_file/mnist_output.pb"
cp "$shared/models/resnet20-cifar10/test_data_set_0/output_0.pb" "$seeds/tensor_file/logits.pb"
python3 - "$seeds/tensor_file" <<'PY' 2>/dev/null || true
import struct, sys
# Two tiny .npy files (version 1.0: float32 [2,3] and int64 [4]) without numpy.
def npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload)
npy(sys.argv[1] + "/f32.npy", "<f4", "(2, 3)", struct.pack("<6f", 1, -2, 3.5, 0, 7, -8))
npy(sys.argv[1] + "/i64.npy", "<i8", "(4,)", struct.pack("<4q", 1, 2, 3, -4))
PY

# image: a few PNG digits and JPEG photos.
cp "$shared/data/mnist-test/7/00000.png" "$seeds/image/digit.png"
cp "$shared/data/mnist-test/2/00001.png" "$seeds/image/digit2.png"
cp "$shared/data/cifar10-test/cat/0000.jpg" "$seeds/image/cat.jpg"
cp "$shared/data/cifar10-test/ship/0001.jpg" "$seeds/image/ship.jpg"

# calib_table and plan_load: what qcc writes for mnist-8 (a table of 20 digits; int8, fp32 and
# fp16 plans). The table's histograms are large JSON; one seed is enough.
work="$out/work"
"$qcc" calibrate "$shared/models/mnist-8/model.onnx" "$shared/data/mnist-test" --grayscale \
  --max-samples 20 -o "$work/mnist.json" >/dev/null 2>&1
cp "$work/mnist.json" "$seeds/calib_table/mnist.json"
"$qcc" compile "$shared/models/mnist-8/model.onnx" --int8 --calib "$work/mnist.json" \
  -o "$seeds/plan_load/mnist-int8.plan" >/dev/null
"$qcc" compile "$shared/models/mnist-8/model.onnx" --fp32 -o "$seeds/plan_load/mnist-fp32.plan" \
  >/dev/null
"$qcc" compile "$shared/models/mnist-8/model.onnx" --fp16 -o "$seeds/plan_load/mnist-fp16.plan" \
  >/dev/null
# A tiny BERT-style encoder (int64 token ids, Gather, LayerNorm, attention, GELU) made with the
# onnx helper, and its fp32 and dynamic int8 plans: the transformer steps (issue 13).
python="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.venv/bin/python"
if [[ -x "$python" ]]; then
  "$python" "$(dirname "${BASH_SOURCE[0]}")/../transformer/transformer_patterns.py" \
    --write-tiny-model "$seeds/onnx_import/tiny-encoder.onnx"
  "$qcc" compile "$seeds/onnx_import/tiny-encoder.onnx" --fp32 --batch 1:4 \
    -o "$seeds/plan_load/tiny-encoder-fp32.plan" >/dev/null
  "$qcc" compile "$seeds/onnx_import/tiny-encoder.onnx" --int8 --dynamic --batch 1:4 \
    -o "$seeds/plan_load/tiny-encoder-dynamic.plan" >/dev/null
fi
for t in onnx_import plan_load calib_table tensor_file image; do
  echo "make_corpus: $t: $(ls "$seeds/$t" | wc -l) seeds"
done
