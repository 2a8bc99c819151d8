#pragma once
// Host-side f16/bf16/e4m3 conversions (round to nearest even), for building test inputs
// and reading outputs. They mirror what the device prelude does.
#include <cstdint>

namespace fajit::testing {

std::uint16_t to_f16_bits(float);
float from_f16_bits(std::uint16_t);
std::uint16_t to_bf16_bits(float);
float from_bf16_bits(std::uint16_t);
// OCP FP8 E4M3: magnitudes past 448 saturate to 448 (the format has no infinity).
std::uint8_t to_e4m3_bits(float);
float from_e4m3_bits(std::uint8_t);

}  // namespace fajit::testing
