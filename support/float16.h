// fp16 / bf16 <-> fp32 conversions, usable from host and device code.
#ifndef QCC_SUPPORT_FLOAT16_H_
#define QCC_SUPPORT_FLOAT16_H_

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define QCC_HOST_DEVICE __host__ __device__
#else
#define QCC_HOST_DEVICE
#endif

namespace qcc {

/// Bit cast for trivially copyable types of the same size.
template <typename To, typename From>
QCC_HOST_DEVICE inline To BitCast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "BitCast needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

/// IEEE binary16 bits to fp32 (exact: every fp16 value is an fp32 value).
QCC_HOST_DEVICE inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {  // inf / nan
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {  // normal
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {  // zero
    bits = sign;
  } else {  // subnormal: renormalise
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
    bits = sign | (exp << 23) | (mant << 13);
  }
  return BitCast<float>(bits);
}

/// fp32 to IEEE binary16 bits, round to nearest even, overflow to inf, NaN kept quiet.
QCC_HOST_DEVICE inline uint16_t FloatToHalf(float f) {
  const uint32_t x = BitCast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (ax < 0x38800000u) {                                               // subnormal or zero in fp16
    if (ax < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14 - (e - 127) + 13 - 1 ... value = m >> (126 - e)
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((ax >> 13) - (112u << 10));
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

/// bfloat16 bits to fp32 (exact).
QCC_HOST_DEVICE inline float BFloat16ToFloat(uint16_t b) {
  return BitCast<float>(static_cast<uint32_t>(b) << 16);
}

/// fp32 to bfloat16 bits, round to nearest even, NaN kept quiet.
QCC_HOST_DEVICE inline uint16_t FloatToBFloat16(float f) {
  uint32_t x = BitCast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace qcc

#endif  // QCC_SUPPORT_FLOAT16_H_
