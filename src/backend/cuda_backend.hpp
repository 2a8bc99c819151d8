#pragma once
#include <memory>

#include "backend/backend.hpp"

namespace fajit {
std::unique_ptr<Backend> make_cuda_backend();
}
