#pragma once
// Host-side f16/bf16 conversions (round to nearest even), for building test inputs
// and reading outputs. They mirror what the device prelude does.
#include <cstdint>

namespace fajit::testing {

std::uint16_t to_f16_bits(float);
float from_f16_bits(std::uint16_t);
std::uint16_t to_bf16_bits(float);
float from_bf16_bits(std::uint16_t);

}  // namespace fajit::testing
