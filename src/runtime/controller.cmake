# nmo_runtime_controller: reconcile workers over a WorkQueue, with controller-runtime's requeue
# policy, stop with a grace period, metrics hooks and a stall check for /healthz. Included by
# CMakeLists.txt in this folder.
nmo_cc_library(
  NAME runtime_controller
  HDRS ${CMAKE_CURRENT_SOURCE_DIR}/controller.h
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/controller.cc
  DEPS nmo::asio nmo::base nmo::runtime_work_queue nmo::runtime_rate_limiter
)
nmo_cc_test(NAME runtime_controller_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/controller_test.cc
            DEPS nmo::runtime_controller nmo::base_testing)
