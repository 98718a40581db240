# Abseil-style target helpers: a target declaration reads like a BUILD rule.
#
#   nmo_cc_library(NAME base HDRS result.h SRCS error.cc DEPS fmt::fmt PRIVATE_DEPS ... [TESTONLY])
#     -> target nmo_base, alias nmo::base. Without SRCS it is an INTERFACE (header-only) library.
#        DEPS are PUBLIC (a header of ours includes them); PRIVATE_DEPS stay inside the .cc files.
#        Everything includes from src/: #include "base/result.h".
#   nmo_cc_test(NAME base_result_test SRCS result_test.cc DEPS nmo::base [LABELS unit ...])
#     -> gtest executable linked with gmock_main; each TEST() becomes a ctest test named
#        <NAME>.<Suite>.<Test>, labelled `unit` unless LABELS says otherwise.
#   nmo_cc_binary(NAME node-maintenance-operator SRCS main.cc DEPS ...)
#     -> executable in ${CMAKE_BINARY_DIR}/bin.
#   nmo_cc_benchmark(NAME base_strings_benchmark SRCS strings_benchmark.cc DEPS nmo::base)
#     -> Google Benchmark executable plus a short ctest run labelled `bench-smoke`.
#
# Tests and benchmarks (and TESTONLY libraries) are skipped when NMO_BUILD_TESTS is OFF.
#
# COROUTINES (any of the four): the target's code co_awaits Asio coroutines that co_await
# others. GCC 12 reports -Wmismatched-new-delete on their awaitable frames (operator new and
# delete both come from awaitable_frame_base; a false positive of its inlining analysis, GCC bug
# 109224), so that one warning is off for such targets. nmo_coroutine_target(<target>) does the
# same for a target made otherwise.
include_guard(GLOBAL)

function(nmo_coroutine_target target)
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
endfunction()

function(nmo_cc_library)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "TESTONLY;COROUTINES" "NAME" "HDRS;SRCS;DEPS;PRIVATE_DEPS")
  if(NOT ARG_NAME)
    message(FATAL_ERROR "nmo_cc_library: NAME is required")
  endif()
  if(ARG_TESTONLY AND NOT NMO_BUILD_TESTS)
    return()
  endif()
  set(target nmo_${ARG_NAME})

  if(ARG_SRCS)
    add_library(${target} STATIC ${ARG_SRCS} ${ARG_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_compile_features(${target} PUBLIC cxx_std_20)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    nmo_target_warnings(${target})
    if(ARG_COROUTINES)
      nmo_coroutine_target(${target})
    endif()
  else()
    if(ARG_PRIVATE_DEPS)
      message(FATAL_ERROR "nmo_cc_library(${ARG_NAME}): header-only libraries have no PRIVATE_DEPS")
    endif()
    add_library(${target} INTERFACE ${ARG_HDRS})
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_compile_features(${target} INTERFACE cxx_std_20)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(nmo::${ARG_NAME} ALIAS ${target})
endfunction()

function(nmo_cc_binary)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "COROUTINES" "NAME;OUTPUT_NAME" "SRCS;DEPS")
  if(NOT ARG_NAME OR NOT ARG_SRCS)
    message(FATAL_ERROR "nmo_cc_binary: NAME and SRCS are required")
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${ARG_NAME} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  nmo_target_warnings(${ARG_NAME})
  if(ARG_COROUTINES)
    nmo_coroutine_target(${ARG_NAME})
  endif()
endfunction()

function(nmo_cc_test)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "COROUTINES" "NAME" "SRCS;DEPS;LABELS")
  if(NOT ARG_NAME OR NOT ARG_SRCS)
    message(FATAL_ERROR "nmo_cc_test: NAME and SRCS are required")
  endif()
  if(NOT NMO_BUILD_TESTS)
    return()
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  if("unit" IN_LIST ARG_LABELS)
    set_property(GLOBAL APPEND PROPERTY NMO_NOT_E2E_TARGETS ${ARG_NAME})
  endif()
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gmock_main)
  nmo_target_warnings(${ARG_NAME})
  if(ARG_COROUTINES)
    nmo_coroutine_target(${ARG_NAME})
  endif()
  # PRE_TEST: list the tests when ctest runs, not as a post-build step, so a build never runs
  # (possibly sanitized) test binaries and a crash at listing time shows up as a test failure.
  gtest_discover_tests(${ARG_NAME}
    TEST_PREFIX "${ARG_NAME}."
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}")
endfunction()

function(nmo_cc_benchmark)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "COROUTINES" "NAME" "SRCS;DEPS")
  if(NOT ARG_NAME OR NOT ARG_SRCS)
    message(FATAL_ERROR "nmo_cc_benchmark: NAME and SRCS are required")
  endif()
  if(NOT NMO_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  set_property(GLOBAL APPEND PROPERTY NMO_NOT_E2E_TARGETS ${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark_main)
  nmo_target_warnings(${ARG_NAME})
  if(ARG_COROUTINES)
    nmo_coroutine_target(${ARG_NAME})
  endif()
  # Smoke run only: proves the benchmark still builds and runs; numbers come from manual runs.
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --benchmark_min_time=0.01)
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS bench-smoke)
endfunction()

# nmo_cc_fuzz(NAME kube_watch_line_fuzz SRCS watch_line_fuzz.cc DEPS nmo::kube_api [CORPUS dir])
#   A libFuzzer target (defines LLVMFuzzerTestOneInput). CORPUS defaults to
#   <source dir>/testdata/<NAME>, a folder of seed inputs checked into the repository.
#   - With NMO_FUZZ=ON (preset `fuzz`, Clang): a real fuzzer, plus a ctest labelled `fuzz-smoke`
#     that fuzzes for NMO_FUZZ_SMOKE_SECONDS starting from the seeds (new inputs go to the build
#     tree, never into the repository).
#   - Otherwise: the same code linked with a replay driver, and a `unit` test that feeds it every
#     seed, so each build checks the corpus still passes.
option(NMO_FUZZ "Build libFuzzer targets (Clang only)" OFF)
set(NMO_FUZZ_SMOKE_SECONDS 15 CACHE STRING "How long each fuzz-smoke test fuzzes")

function(nmo_cc_fuzz)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "NAME;CORPUS" "SRCS;DEPS")
  if(NOT ARG_NAME OR NOT ARG_SRCS)
    message(FATAL_ERROR "nmo_cc_fuzz: NAME and SRCS are required")
  endif()
  if(NOT NMO_BUILD_TESTS AND NOT NMO_FUZZ)
    return()
  endif()
  if(NOT ARG_CORPUS)
    set(ARG_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/${ARG_NAME})
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  set_property(GLOBAL APPEND PROPERTY NMO_NOT_E2E_TARGETS ${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  nmo_target_warnings(${ARG_NAME})
  if(NMO_FUZZ)
    target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
    set(work ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_corpus)
    file(MAKE_DIRECTORY ${work})
    add_test(NAME ${ARG_NAME}
      COMMAND ${ARG_NAME} -max_total_time=${NMO_FUZZ_SMOKE_SECONDS} -print_final_stats=1
              -timeout=10 -rss_limit_mb=2048 ${work} ${ARG_CORPUS})
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS fuzz-smoke)
  else()
    target_sources(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src/base/testing/fuzz_replay_main.cc)
    add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} ${ARG_CORPUS})
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS unit)
  endif()
endfunction()

# nmo_e2e_binaries_target(): the target `e2e-binaries`, every executable of the build except the
# unit tests, benchmarks and fuzz targets: what the end-to-end tests run (the operator, the
# plugin, the e2e and chaos test binaries, the test tools). make test builds it first, so the
# end-to-end tests start before the unit tests have compiled. Call it last.
function(nmo_e2e_binaries_target)
  get_property(skip GLOBAL PROPERTY NMO_NOT_E2E_TARGETS)
  set(targets "")
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(dir_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS dir_targets)
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "EXECUTABLE" AND NOT target IN_LIST skip)
        list(APPEND targets ${target})
      endif()
    endforeach()
  endwhile()
  add_custom_target(e2e-binaries)
  add_dependencies(e2e-binaries ${targets})
endfunction()
