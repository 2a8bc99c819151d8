# Installs the build tree into a scratch prefix, runs the installed fa-jit, then
# configures, builds and runs a consumer project that only knows find_package(fajit).
# Both run with LD_LIBRARY_PATH unset: they must find the installed library by their
# run paths.
set(prefix "${WORK}/prefix")
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${prefix}" COMMAND_ERROR_IS_FATAL ANY
                OUTPUT_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${prefix}/${BINDIR}/fa-jit" --version
                OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
if(NOT version STREQUAL "${VERSION}")
  message(FATAL_ERROR "the installed fa-jit --version says '${version}', not ${VERSION}")
endif()
message(STATUS "installed fa-jit --version: ${version}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${WORK}/consumer" "-DCMAKE_PREFIX_PATH=${prefix}"
                COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/consumer" COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${WORK}/consumer/consumer"
                COMMAND_ERROR_IS_FATAL ANY)
