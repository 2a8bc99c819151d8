# The library and CLI must start on machines without GPU runtimes, so none of them
# may appear among their dynamic dependencies: the backends open them at run time.
foreach(binary IN LISTS BINARIES)
  execute_process(COMMAND "${READELF}" -d "${binary}" OUTPUT_VARIABLE dynamic COMMAND_ERROR_IS_FATAL ANY)
  string(REGEX MATCHALL "NEEDED[^\n]*" needed "${dynamic}")
  foreach(line IN LISTS needed)
    if(line MATCHES "cuda|nvrtc|amdhip|hiprtc|hsa-runtime|comgr")
      message(FATAL_ERROR "${binary} links a GPU runtime directly: ${line}")
    endif()
  endforeach()
  list(LENGTH needed count)
  message(STATUS "${binary}: ${count} dynamic dependencies, none of them a GPU runtime")
endforeach()
