# nmo_runtime_manager: runs a process's runnables (every replica, or the leader only), its named
# health and readiness checks, signals and shutdown order. Included by CMakeLists.txt in this
# folder.
# nmo_runtime_runnable: the Runnable interface alone, for what the Manager runs.
nmo_cc_library(NAME runtime_runnable HDRS ${CMAKE_CURRENT_SOURCE_DIR}/runnable.h
               DEPS nmo::asio nmo::base)
nmo_cc_library(
  NAME runtime_manager
  HDRS ${CMAKE_CURRENT_SOURCE_DIR}/manager.h
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/manager.cc
  DEPS nmo::asio nmo::base nmo::http_server nmo::kube_client nmo::runtime_endpoints
       nmo::runtime_leader_election nmo::runtime_reflector nmo::runtime_runnable
  COROUTINES)
nmo_cc_test(NAME runtime_manager_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/manager_test.cc
            DEPS nmo::runtime_manager nmo::base_testing nmo::http_testing nmo::kube_client_testing
            COROUTINES)

