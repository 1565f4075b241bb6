// The im2col behind the fp32 convolution's microkernels (kernels/cpu/conv_internal.h).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_internal.h"

namespace qcc::testing {
namespace {

// The im2col behind the AVX-512 and AVX2 tiles (Im2colRowsF32), for stride 2 in x (its AVX-512
// rows are built 16 columns at a time with per-tap masks) and stride 1, against the definition:
// row (c, tap) column (oy - r0, ox) holds x[c, oy * sy - pad_y + ky * dy, ox * sx - pad_x + kx *
// dx], 0 outside x. Every width from 1 to 40 and a few wider, pads 0 to 3 on either side (past
// a 3-wide kernel's reach), dilations 1 and 2, bands of rows that start inside the map.
TEST(NnConvTest, Im2colRowsMatchTheDefinition) {
  int checked = 0;
  for (int64_t width : {1, 2, 5, 15, 16, 17, 31, 32, 33, 40, 97, 255, 513}) {
    for (int64_t sx : {1, 2}) {
      for (int64_t pad_l : {0, 1, 3}) {
        for (int64_t pad_r : {0, 2}) {
          for (int64_t dx : {1, 2}) {
            cpu::ConvF32Params p;
            p.in_channels = 2;
            p.in = {1, 7, width};
            p.kernel = {1, 3, 3};
            p.stride = {1, 2, sx};
            p.dilation = {1, 1, dx};
            p.pad = {0, 1, pad_l};
            const int64_t reach_x = 2 * dx + 1;
            if (width + pad_l + pad_r < reach_x) continue;
            p.out = {1, (7 + 1 + 1 - 3) / 2 + 1, (width + pad_l + pad_r - reach_x) / sx + 1};
            const int64_t ow = p.out[2], oh = p.out[1];
            std::vector<float> x(2 * 7 * width);
            for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
            for (int64_t r0 : {int64_t{0}, int64_t{1}}) {
              const int64_t r1 = oh, ld = (r1 - r0) * ow + 5;
              std::vector<float> col(2 * 9 * ld, -7.0f);
              cpu::internal::Im2colRowsF32(p, 2, x.data(), r0, r1, col.data(), ld, 2, 1);
              for (int64_t c = 0; c < 2; ++c) {
                for (int64_t k = 0; k < 9; ++k) {
                  const int64_t ky = k / 3, kx = k % 3;
                  for (int64_t oy = r0; oy < r1; ++oy) {
                    for (int64_t ox = 0; ox < ow; ++ox) {
                      const int64_t iy = oy * 2 - 1 + ky, ix = ox * sx - pad_l + kx * dx;
                      const float want = iy >= 0 && iy < 7 && ix >= 0 && ix < width
                                             ? x[(c * 7 + iy) * width + ix]
                                             : 0.0f;
                      const float got = col[(c * 9 + k) * ld + 2 + (oy - r0) * ow + ox];
                      ASSERT_EQ(got, want) << "width " << width << " sx " << sx << " pads " << pad_l
                                           << "," << pad_r << " dx " << dx << " r0 " << r0 << " c "
                                           << c << " tap " << k << " oy " << oy << " ox " << ox;
                    }
                  }
                  // Nothing written before the column offset or past the band's columns.
                  ASSERT_EQ(col[(c * 9 + k) * ld], -7.0f);
                  ASSERT_EQ(col[(c * 9 + k) * ld + 1], -7.0f);
                  ASSERT_EQ(col[(c * 9 + k) * ld + 2 + (r1 - r0) * ow], -7.0f);
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace qcc::testing
