#pragma once
// NVRTC and HIPRTC have one shape: create a program from source, add name expressions,
// compile with options, read the log, the lowered names and the code, destroy the
// program. compile_program drives either; a backend hands it its library's entry points.
//
// An Api (Nvrtc, Hiprtc) has:
//   program_type, result_type, success        the library's handle, status type and success
//   prefix, destroy_call                      "nvrtc" or "hiprtc", and "nvrtcDestroyProgram"
//                                             or "hiprtcDestroyProgram", for messages
//   create, destroy, compile, log_size, log, add_name, lowered_name, error_string
//   code_size, code                           the compiled object: a cubin or a code object
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace fajit {

// A destructor cannot hand a failed release to its caller, so it logs it.
inline void log_failed_release(const char* call, const char* reason) noexcept {
    try {
        spdlog::warn("{} failed: {}", call, reason);
    } catch (...) {
        // Nothing is left to tell.
    }
}

// Owns a program so it is destroyed on every path, errors and exceptions included.
template <class Api>
class RuntimeProgram {
public:
    RuntimeProgram(const Api& api, const CompileRequest& request) : api_(api) {
        status_ = api_.create(&program_, request.source.c_str(), request.program_name.c_str(), 0, nullptr, nullptr);
    }
    ~RuntimeProgram() {
        if (!program_) return;
        if (auto status = api_.destroy(&program_); status != Api::success)
            log_failed_release(Api::destroy_call, api_.error_string(status));
    }
    RuntimeProgram(const RuntimeProgram&) = delete;
    RuntimeProgram& operator=(const RuntimeProgram&) = delete;
    typename Api::result_type created() const { return status_; }
    typename Api::program_type get() const { return program_; }

private:
    const Api& api_;
    typename Api::program_type program_ = nullptr;
    typename Api::result_type status_;
};

// Compiles request.source with `options` and then request.options. The log is kept on
// success too (ptxas's register report is read from it); a failure says which call failed.
template <class Api>
CompileResult compile_program(const Api& api, const CompileRequest& request, std::vector<std::string> options) {
    CompileResult result;
    if (!api.error.empty()) {
        result.log = api.error;
        return result;
    }
    const std::string prefix = Api::prefix;
    RuntimeProgram<Api> program(api, request);
    if (program.created() != Api::success) {
        result.log = prefix + "CreateProgram: " + api.error_string(program.created());
        return result;
    }
    for (const auto& expression : request.name_expressions) api.add_name(program.get(), expression.c_str());

    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_pointers;
    for (const auto& option : options) option_pointers.push_back(option.c_str());
    const auto status = api.compile(program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());

    std::size_t log_size = 0;
    api.log_size(program.get(), &log_size);
    result.log.resize(log_size);
    if (log_size) api.log(program.get(), result.log.data());
    while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) result.log.pop_back();
    if (status != Api::success) {
        result.log = prefix + "CompileProgram: " + api.error_string(status) + "\n" + result.log;
        return result;
    }
    for (const auto& expression : request.name_expressions) {
        const char* lowered = nullptr;
        if (api.lowered_name(program.get(), expression.c_str(), &lowered) != Api::success || !lowered || !*lowered) {
            result.log += "\nno lowered name for " + expression;
            return result;
        }
        result.lowered_names.emplace_back(lowered);
    }
    std::size_t size = 0;
    api.code_size(program.get(), &size);
    result.code.resize(size);
    api.code(program.get(), reinterpret_cast<char*>(result.code.data()));
    result.ok = size > 0;
    return result;
}

}  // namespace fajit
