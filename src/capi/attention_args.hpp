#pragma once
// fajit_attention_args (C) to AttentionArgs (C++). Enum values are carried over as
// they are, so check_arguments names an out-of-range dtype or causal with its value.
#include "fajit/attention.hpp"
#include "fajit/fajit.h"

namespace fajit::capi {

// Throws std::invalid_argument for a null args or a struct_size the library does not know.
AttentionArgs to_attention_args(const fajit_attention_args* args);

}  // namespace fajit::capi
