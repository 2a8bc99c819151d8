#pragma once
// NVRTC and HIPRTC have one shape: create a program from source, add name expressions,
// compile with options, read the log, the lowered names and the code, destroy the
// program. compile_program drives either; a backend hands it its library's entry points.
//
// An Api (Nvrtc, Hiprtc) has:
//   program_type, result_type, success        the library's handle, status type and success
//   compilation_error                         the status of a source the compiler refused
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
// success too (ptxas's register report is read from it); a failure says which call failed,
// and whether the compiler rejected the source (CompileResult::rejected).
template <class Api>
CompileResult compile_program(const Api& api, const CompileRequest& request, std::vector<std::string> options) {
    CompileResult result;
    if (!api.error.empty()) {
        result.log = api.error;
        return result;
    }
    const std::string prefix = Api::prefix;
    // Puts the failed call and its status before the log; true if the call failed.
    const auto failed = [&](typename Api::result_type status, const std::string& call) {
        if (status == Api::success) return false;
        result.log = prefix + call + ": " + api.error_string(status) + (result.log.empty() ? "" : "\n" + result.log);
        return true;
    };
    RuntimeProgram<Api> program(api, request);
    if (failed(program.created(), "CreateProgram")) return result;
    for (const auto& expression : request.name_expressions)
        if (failed(api.add_name(program.get(), expression.c_str()), "AddNameExpression(" + expression + ")"))
            return result;

    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_pointers;
    for (const auto& option : options) option_pointers.push_back(option.c_str());
    const auto status = api.compile(program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());

    std::size_t log_size = 0;
    if (api.log_size(program.get(), &log_size) == Api::success && log_size) {
        result.log.resize(log_size);
        if (api.log(program.get(), result.log.data()) != Api::success) result.log.clear();
    }
    while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) result.log.pop_back();
    if (failed(status, "CompileProgram")) {
        result.rejected = status == Api::compilation_error;
        return result;
    }
    for (const auto& expression : request.name_expressions) {
        const char* lowered = nullptr;
        if (api.lowered_name(program.get(), expression.c_str(), &lowered) != Api::success || !lowered || !*lowered) {
            // The source compiled but has no such kernel: the template's fault, every time.
            result.log += "\nno lowered name for " + expression;
            result.rejected = true;
            return result;
        }
        result.lowered_names.emplace_back(lowered);
    }
    std::size_t size = 0;
    if (failed(api.code_size(program.get(), &size), "GetCodeSize")) return result;
    result.code.resize(size);
    if (size == 0 || failed(api.code(program.get(), reinterpret_cast<char*>(result.code.data())), "GetCode")) {
        if (size == 0) result.log += "\nthe compiler returned no code";
        result.code.clear();
        return result;
    }
    result.ok = true;
    return result;
}

}  // namespace fajit
