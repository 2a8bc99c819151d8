#include "support/half_precision.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fajit::testing {

std::uint16_t to_f16_bits(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    if (std::isnan(value)) return sign | 0x7e00u;
    const float magnitude = std::fabs(value);
    if (magnitude >= 65520.0f) return sign | 0x7c00u;  // rounds to infinity
    if (magnitude < 6.103515625e-05f) {
        // Subnormal: multiples of 2^-24, rounded to nearest even by nearbyint.
        return sign | static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0f));
    }
    const std::uint32_t m = std::bit_cast<std::uint32_t>(magnitude);
    std::uint32_t rounded = m + 0xfffu + ((m >> 13) & 1u);  // round the 13 dropped bits to even
    const std::uint32_t exponent = ((rounded >> 23) & 0xffu) - 127u + 15u;
    return sign | static_cast<std::uint16_t>((exponent << 10) | ((rounded >> 13) & 0x3ffu));
}

float from_f16_bits(std::uint16_t bits) {
    const std::uint32_t sign = (bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;
    float magnitude;
    if (exponent == 0)
        magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    else if (exponent == 31)
        magnitude = mantissa ? NAN : INFINITY;
    else
        magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

std::uint16_t to_bf16_bits(float value) {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16_bits(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint8_t to_e4m3_bits(float value) {
    const std::uint8_t sign = std::signbit(value) ? 0x80u : 0u;
    if (std::isnan(value)) return 0x7fu;
    const float magnitude = std::min(std::fabs(value), 448.0f);
    // Subnormals and the smallest exponent: multiples of 2^-9 below 2^-6.
    if (magnitude < 0.015625f) return sign | static_cast<std::uint8_t>(std::nearbyint(magnitude * 512.0f));
    int exponent;
    const float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent, fraction in [0.5, 1)
    // 4 significant bits: the significand in 8..16 steps, rounded to nearest even.
    float significand = std::nearbyint(fraction * 16.0f);
    if (significand == 16.0f) {
        significand = 8.0f;
        ++exponent;
    }
    const int biased = exponent - 1 + 7;
    return sign | static_cast<std::uint8_t>(biased << 3 | (static_cast<int>(significand) - 8));
}

float from_e4m3_bits(std::uint8_t bits) {
    const int exponent = (bits >> 3) & 15, mantissa = bits & 7;
    if ((bits & 0x7fu) == 0x7fu) return NAN;
    const float magnitude =
        exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9) : std::ldexp(8.0f + mantissa, exponent - 10);
    return bits & 0x80u ? -magnitude : magnitude;
}

}  // namespace fajit::testing
