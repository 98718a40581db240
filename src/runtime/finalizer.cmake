# nmo_runtime_finalizer: whether an object carries a finalizer, and the guarded JSON patches
# (and the calls) that add and remove it.
nmo_cc_library(
  NAME runtime_finalizer
  HDRS ${CMAKE_CURRENT_SOURCE_DIR}/finalizer.h
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/finalizer.cc
  DEPS nmo::asio nmo::base nmo::kube_api nmo::kube_client Boost::json
  COROUTINES)
nmo_cc_test(NAME runtime_finalizer_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/finalizer_test.cc
            DEPS nmo::runtime_finalizer nmo::base_testing)
