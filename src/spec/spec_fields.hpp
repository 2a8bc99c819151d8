#pragma once
// The fields of spec text, read but not yet given family defaults or validated: the
// family rules (src/families/spec_rules.cpp) do that, which keeps this folder free of
// any knowledge of families.
#include <string>
#include <string_view>

#include "fajit/kernel_spec.hpp"
#include "fajit/options.hpp"

namespace fajit {

// Every field spec text may name, in the order the canonical text prints them, and those
// it must name: the parser and the tools' help read both lists.
inline constexpr std::string_view spec_field_names[] = {"family", "d",       "dv",     "dtype",  "out", "bq",
                                                        "bk",     "waves",   "margin", "causal", "kv",  "page",
                                                        "window", "softcap", "sinks",  "arch"};
inline constexpr std::string_view required_spec_fields[] = {"family", "d", "dtype", "arch"};

struct SpecFields {
    KernelSpec spec;    // tile fields as KernelSpec's defaults where the text leaves them out
    TilePin tiles;      // the tile fields the text gives
    std::string error;  // names the offending field; empty when the text reads
};

SpecFields read_spec_fields(std::string_view text);

// "d=13: <rule>", the form every spec error takes.
std::string field_error(std::string_view field, const std::string& value, std::string_view rule);
// Shortest text that reads back as the same float.
std::string format_float(float value);

}  // namespace fajit
