// What each fuzz target does with one input (issue 16). The bodies take arbitrary bytes and must
// return, without crashing, hanging or leaking, whatever the bytes hold: every malformed input is
// an error Status that the body drops. Each returns true when the input was valid all the way
// through (tests check that real files are, so a body cannot silently reject everything). The
// libFuzzer targets (fuzz/*_fuzz.cc, built with QCC_FUZZ=ON under clang) call them, and so does
// tests/fuzz/regressions_test.cc on the inputs that once crashed, in the ordinary suite.
#ifndef QCC_FUZZ_FUZZ_BODIES_H_
#define QCC_FUZZ_FUZZ_BODIES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qcc::fuzz {

/// An ONNX ModelProto: import (with shape inference), then verify and infer shapes again.
bool OnnxImport(const uint8_t* data, size_t size);
/// A plan file: parse, prepare an Engine (256 MiB of context memory at most) and run it once on
/// zero inputs at its smallest batch.
bool PlanLoad(const uint8_t* data, size_t size);
/// A calibration table: parse, write back, and solve every tensor's range with every method.
bool CalibTable(const uint8_t* data, size_t size);
/// A tensor file: as .npy and as a serialized ONNX TensorProto.
bool TensorFile(const uint8_t* data, size_t size);
/// An image file: decode to RGB and to grey, then resize and crop.
bool ImageFile(const uint8_t* data, size_t size);

/// The targets by name ("onnx_import", "plan_load", "calib_table", "tensor_file", "image").
using Body = bool (*)(const uint8_t*, size_t);
struct Target {
  const char* name;
  Body body;
};
const std::vector<Target>& Targets();

}  // namespace qcc::fuzz

#endif  // QCC_FUZZ_FUZZ_BODIES_H_
