# Every executable the project ships answers --help with its usage and exit status 0, and
# does nothing else: a benchmark that ran instead prints its figures (a JSON line with
# "where"), says it has no device, or times out.
foreach(binary IN LISTS BINARIES)
  execute_process(COMMAND "${binary}" --help RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 20)
  get_filename_component(name "${binary}" NAME)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${name} --help exited with ${status}:\n${out}${err}")
  endif()
  if(NOT out MATCHES "Usage: " OR NOT out MATCHES "--help")
    message(FATAL_ERROR "${name} --help printed no usage:\n${out}${err}")
  endif()
  if(out MATCHES "\"where\": |no GPU device \\(|no device: ")
    message(FATAL_ERROR "${name} --help ran the benchmark:\n${out}")
  endif()
  message(STATUS "${name} --help: usage, exit 0")
endforeach()
