# Installs the build tree into a scratch prefix, runs the installed fa-jit, asks
# pkg-config for the installed fajit.pc (where pkg-config exists), then configures,
# builds and runs a consumer project that only knows find_package(fajit).
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
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig" "${PKG_CONFIG}"
                          --libs fajit OUTPUT_VARIABLE libs OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  # The .pc finds its prefix from its own place: -L<prefix>/lib/pkgconfig/../../lib.
  string(REGEX REPLACE "^-L([^ ]+) -lfajit$" "\\1" libdir "${libs}")
  file(REAL_PATH "${libdir}" libdir)
  file(REAL_PATH "${prefix}/${LIBDIR}" want)
  if(NOT libdir STREQUAL want)
    message(FATAL_ERROR "pkg-config --libs fajit says '${libs}', not the installed ${want}")
  endif()
  message(STATUS "pkg-config --libs fajit: ${libs}")
else()
  message(STATUS "skipped the pkg-config check: no pkg-config")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${WORK}/consumer" "-DCMAKE_PREFIX_PATH=${prefix}"
                COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/consumer" COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${WORK}/consumer/consumer"
                COMMAND_ERROR_IS_FATAL ANY)
