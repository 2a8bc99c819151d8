# Finds the headers each backend needs. Only headers: the backends open their
# libraries at run time, so the library loads on machines without them.

function(fajit_resolve_backend name found)
  if(FAJIT_BACKEND_${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "FAJIT_BACKEND_${name}=ON but its headers were not found")
  endif()
  if(NOT FAJIT_BACKEND_${name} STREQUAL "OFF" AND ${found})
    set(FAJIT_WITH_${name} ON PARENT_SCOPE)
  else()
    set(FAJIT_WITH_${name} OFF PARENT_SCOPE)
  endif()
endfunction()

# HIP: Debian ships the headers under /usr (ROCm 5.7, HIPRTC inside libamdhip64),
# AMD under /opt/rocm (ROCm 6+, a separate libhiprtc).
find_path(FAJIT_HIP_INCLUDE_DIR hip/hiprtc.h HINTS $ENV{ROCM_PATH}/include /opt/rocm/include /usr/include)
set(hip_found OFF)
if(FAJIT_HIP_INCLUDE_DIR AND NOT FAJIT_BACKEND_HIP STREQUAL "OFF")
  set(hip_found ON)
endif()
fajit_resolve_backend(HIP hip_found)

set(cuda_found OFF)
if(NOT FAJIT_BACKEND_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(cuda_found ON)
  endif()
endif()
fajit_resolve_backend(CUDA cuda_found)

message(STATUS "fa-jit backends: hip=${FAJIT_WITH_HIP} cuda=${FAJIT_WITH_CUDA}")
