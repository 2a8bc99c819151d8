#pragma once
// The C ABI's error handling: every exported function runs its body through guarded(),
// which turns exceptions into a fajit_status and the thread's last-error message.
#include <string>

#include "fajit/fajit.h"

namespace fajit::capi {

void set_last_error(std::string message);
const char* last_error();

// Runs body (returning void); success clears the last error.
template <class Body>
fajit_status guarded(Body&& body);

fajit_status status_of_current_exception();

template <class Body>
fajit_status guarded(Body&& body) {
    try {
        body();
        set_last_error({});
        return FAJIT_SUCCESS;
    } catch (...) {
        return status_of_current_exception();
    }
}

}  // namespace fajit::capi
