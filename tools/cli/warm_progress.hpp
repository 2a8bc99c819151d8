#pragma once
// How warm shows its progress on stderr: a redrawn bar on a terminal, one line per
// variant when stderr is a file or pipe (logs, CI), nothing with --quiet.
#include <memory>

#include "warm_runner.hpp"

namespace fajit::cli {

std::unique_ptr<WarmObserver> make_warm_progress(bool quiet);

}  // namespace fajit::cli
