# nmo_runtime_reflector: list + watch of one collection into a Store of immutable snapshots with
# secondary indexes (client-go Reflector + thread-safe store, kube-rs watcher + reflector::Store),
# and the Cache of a process that shares them between its controllers.
nmo_cc_library(
  NAME runtime_reflector
  HDRS
    ${CMAKE_CURRENT_SOURCE_DIR}/cache.h
    ${CMAKE_CURRENT_SOURCE_DIR}/own_writes.h
    ${CMAKE_CURRENT_SOURCE_DIR}/reflector.h
    ${CMAKE_CURRENT_SOURCE_DIR}/store.h
  SRCS
    ${CMAKE_CURRENT_SOURCE_DIR}/cache.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/reflector.cc
  DEPS nmo::asio nmo::base nmo::kube_api nmo::kube_client nmo::runtime_runnable
)
nmo_cc_test(NAME runtime_cache_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/cache_test.cc
            DEPS nmo::runtime_reflector nmo::kube_client_testing nmo::http_testing COROUTINES)
nmo_cc_test(NAME runtime_own_writes_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/own_writes_test.cc
            DEPS nmo::runtime_reflector)
nmo_cc_test(NAME runtime_store_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/store_test.cc
            DEPS nmo::runtime_reflector nmo::base_testing)
nmo_cc_test(NAME runtime_reflector_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/reflector_test.cc
            DEPS nmo::runtime_reflector nmo::base_testing nmo::kube_client_testing nmo::http_testing
            COROUTINES)
