# Sanitizer builds, in the spirit of LLVM_USE_SANITIZER.
#
#   -DNMO_SANITIZE="address;undefined"   ASan + UBSan (the asan-ubsan preset)
#   -DNMO_SANITIZE=thread                TSan (cannot be combined with address)
#
# The flags apply to every target configured after this file is included, including tests, so
# instrumented and uninstrumented code of ours is never mixed. Any finding is fatal
# (-fno-sanitize-recover=all), which makes ctest fail instead of printing and carrying on.
include_guard(GLOBAL)

set(NMO_SANITIZE "" CACHE STRING
  "Sanitizers to build with, semicolon-separated (e.g. address;undefined, or thread)")

if(NMO_SANITIZE)
  set(_nmo_known_sanitizers address undefined thread leak)
  foreach(_nmo_sanitizer IN LISTS NMO_SANITIZE)
    if(NOT _nmo_sanitizer IN_LIST _nmo_known_sanitizers)
      message(FATAL_ERROR "NMO_SANITIZE: unknown sanitizer '${_nmo_sanitizer}' "
                          "(known: ${_nmo_known_sanitizers})")
    endif()
  endforeach()
  if("thread" IN_LIST NMO_SANITIZE AND "address" IN_LIST NMO_SANITIZE)
    message(FATAL_ERROR "NMO_SANITIZE: thread and address cannot be combined")
  endif()

  list(JOIN NMO_SANITIZE "," _nmo_sanitize_csv)
  add_compile_options(
    -fsanitize=${_nmo_sanitize_csv}
    -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_nmo_sanitize_csv})
  # Clang 14 cannot compile C++20 coroutines with -fsanitize=function (part of `undefined`):
  # "Cannot represent a difference across sections" (llvm/llvm-project#49689).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND "undefined" IN_LIST NMO_SANITIZE)
    add_compile_options(-fno-sanitize=function)
  endif()
  message(STATUS "Sanitizers: ${_nmo_sanitize_csv}")
endif()
