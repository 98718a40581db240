# nmo_runtime_manager: runs a process's runnables (every replica, or the leader only), its named
# health and readiness checks, signals and shutdown order. Included by CMakeLists.txt in this
# folder.
nmo_cc_library(
  NAME runtime_manager
  HDRS ${CMAKE_CURRENT_SOURCE_DIR}/manager.h
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/manager.cc
  DEPS nmo::asio nmo::base nmo::http_server nmo::kube_client nmo::runtime_endpoints
       nmo::runtime_leader_election
)
target_compile_options(nmo_runtime_manager PRIVATE
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
nmo_cc_test(NAME runtime_manager_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/manager_test.cc
            DEPS nmo::runtime_manager nmo::base_testing nmo::http_testing
            COPTS $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)

