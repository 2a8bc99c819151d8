#include "capi/call_guard.hpp"

#include <new>
#include <stdexcept>

#include "fajit/runtime.hpp"

namespace fajit::capi {
namespace {

thread_local std::string last_message;

fajit_status status_of(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::no_device:
            return FAJIT_ERROR_NO_DEVICE;
        case ErrorKind::unsupported:
            return FAJIT_ERROR_UNSUPPORTED;
        case ErrorKind::compile_failed:
            return FAJIT_ERROR_COMPILE_FAILED;
        case ErrorKind::load_failed:
            return FAJIT_ERROR_LOAD_FAILED;
        case ErrorKind::launch_failed:
            return FAJIT_ERROR_LAUNCH_FAILED;
    }
    return FAJIT_ERROR_RUNTIME;
}

}  // namespace

void set_last_error(std::string message) { last_message = std::move(message); }

const char* last_error() { return last_message.c_str(); }

fajit_status status_of_current_exception() {
    try {
        throw;
    } catch (const CompileError& error) {
        set_last_error(std::string(error.what()) + "\n" + error.log());
        return FAJIT_ERROR_COMPILE_FAILED;
    } catch (const Error& error) {
        set_last_error(error.what());
        return status_of(error.kind());
    } catch (const InvalidOption& error) {
        set_last_error(error.what());
        return FAJIT_ERROR_INVALID_OPTION;
    } catch (const std::invalid_argument& error) {
        set_last_error(error.what());
        return FAJIT_ERROR_INVALID_ARGUMENT;
    } catch (const std::bad_alloc&) {
        set_last_error("out of host memory");
        return FAJIT_ERROR_RUNTIME;
    } catch (const std::exception& error) {
        set_last_error(error.what());
        return FAJIT_ERROR_RUNTIME;
    } catch (...) {
        set_last_error("an unknown exception");
        return FAJIT_ERROR_RUNTIME;
    }
}

}  // namespace fajit::capi
