// Data-movement kernels over raw bytes, so one kernel serves every element type: an indexed
// copy (the engine of Transpose, Slice, Pad, Tile, Expand, nearest Resize, DepthToSpace),
// block concatenation and splitting, and Gather.
#ifndef QCC_KERNELS_CPU_MOVEMENT_H_
#define QCC_KERNELS_CPU_MOVEMENT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace qcc::cpu {

/// One output axis of IndexedCopy: output coordinate i reads source coordinate source[i] of an
/// input axis whose elements lie `in_stride` elements apart; source[i] == -1 writes the fill.
struct CopyAxis {
  int64_t in_stride = 0;
  std::vector<int64_t> source;
};

/// An axis that copies `extent` coordinates unchanged (source[i] == i).
CopyAxis IdentityAxis(int64_t extent, int64_t in_stride);

/// out[o_0, .., o_{r-1}] = in[sum_k axes[k].source[o_k] * axes[k].in_stride], written in
/// row-major order with extents axes[k].source.size(); elements where any source is -1 get the
/// `elem_size` bytes at `fill` (zeros when fill is nullptr). Rank 0 copies one element.
/// Rows whose innermost axis is a contiguous run are copied with memcpy. Large copies are split
/// by rows over up to `num_threads` threads.
void IndexedCopy(absl::Span<const CopyAxis> axes, size_t elem_size, const void* in,
                 const void* fill, void* out, int num_threads = 1);

/// Permutes the axes of a row-major tensor: output axis k is input axis perm[k]. Large copies
/// are split over up to `num_threads` threads.
void TransposeBytes(absl::Span<const int64_t> in_dims, absl::Span<const int64_t> perm,
                    size_t elem_size, const void* in, void* out, int num_threads = 1);

/// Concatenation seen as blocks: input i is [outer, chunk_bytes[i]], the output is
/// [outer, sum(chunk_bytes)] with the inputs' blocks side by side. An input that is already its
/// block of the output (computed in place) is left as it is; no other may overlap the output.
void ConcatBytes(int64_t outer, absl::Span<const int64_t> chunk_bytes,
                 absl::Span<const void* const> inputs, void* out);

/// The inverse of ConcatBytes: splits [outer, sum(chunk_bytes)] into the outputs.
void SplitBytes(int64_t outer, absl::Span<const int64_t> chunk_bytes, const void* in,
                absl::Span<void* const> outputs);

/// Gather along one axis: `in` is [outer, axis_extent, inner_bytes], `out` is
/// [outer, indices.size(), inner_bytes]; every index must already lie in [0, axis_extent).
void GatherBytes(int64_t outer, int64_t axis_extent, int64_t inner_bytes,
                 absl::Span<const int64_t> indices, const void* in, void* out);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_MOVEMENT_H_
