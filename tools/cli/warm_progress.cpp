#include "warm_progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace fajit::cli {
namespace {

class SilentProgress final : public WarmObserver {
public:
    void finished(const WarmResult&, std::size_t, std::size_t) override {}
};

class ProgressLines final : public WarmObserver {
public:
    void finished(const WarmResult& result, std::size_t done, std::size_t total) override {
        std::fprintf(stderr, "[%zu/%zu] %-10s %6.2f s  %s\n", done, total,
                     std::string(to_string(result.outcome)).c_str(), result.seconds, to_string(result.spec).c_str());
    }
};

class ProgressBar final : public WarmObserver {
public:
    void finished(const WarmResult& result, std::size_t done, std::size_t total) override {
        ++counts_[static_cast<int>(result.outcome)];
        // Failures stay on screen above the bar; the details follow in the summary.
        if (result.outcome == WarmOutcome::failed)
            std::fprintf(stderr, "\r\033[Kfailed: %s\n", to_string(result.spec).c_str());
        constexpr std::size_t width = 30;
        const std::size_t filled = total ? width * done / total : width;
        std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu  compiled %zu  cached %zu  not stored %zu  failed %zu",
                     std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done, total,
                     counts_[0], counts_[1], counts_[2], counts_[3]);
        if (done == total) std::fputc('\n', stderr);
        std::fflush(stderr);
    }

private:
    std::size_t counts_[4] = {};  // indexed by WarmOutcome
};

}  // namespace

std::unique_ptr<WarmObserver> make_warm_progress(bool quiet) {
    if (quiet) return std::make_unique<SilentProgress>();
    if (::isatty(STDERR_FILENO)) return std::make_unique<ProgressBar>();
    return std::make_unique<ProgressLines>();
}

}  // namespace fajit::cli
