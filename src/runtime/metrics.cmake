# nmo_runtime_metrics: the manager's Prometheus registry with controller-runtime's series, the
# process_* collector, and the TokenReview/SubjectAccessReview check of secure /metrics.
# Included by CMakeLists.txt in this folder.
nmo_cc_library(
  NAME runtime_metrics
  HDRS
    ${CMAKE_CURRENT_SOURCE_DIR}/metrics.h
    ${CMAKE_CURRENT_SOURCE_DIR}/metrics_authorizer.h
    ${CMAKE_CURRENT_SOURCE_DIR}/process_metrics.h
  SRCS
    ${CMAKE_CURRENT_SOURCE_DIR}/metrics.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/metrics_authorizer.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/process_metrics.cc
  DEPS nmo::asio nmo::base nmo::http nmo::kube_client nmo::runtime_controller
       nmo::runtime_work_queue prometheus-cpp::core Boost::json
  COROUTINES)
nmo_cc_test(NAME runtime_metrics_test
            SRCS
              ${CMAKE_CURRENT_SOURCE_DIR}/metrics_test.cc
              ${CMAKE_CURRENT_SOURCE_DIR}/process_metrics_test.cc
            DEPS nmo::runtime_metrics)
nmo_cc_test(NAME runtime_metrics_authorizer_test
            SRCS ${CMAKE_CURRENT_SOURCE_DIR}/metrics_authorizer_test.cc
            DEPS nmo::runtime_metrics nmo::base_testing nmo::http_testing nmo::kube_client_testing
            COROUTINES)

# nmo_runtime_endpoints: the /metrics handler (optionally behind TokenReview/SubjectAccessReview),
# the /healthz and /readyz probe handler, and the bind-address flag parser.
nmo_cc_library(
  NAME runtime_endpoints
  HDRS ${CMAKE_CURRENT_SOURCE_DIR}/endpoints.h
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/endpoints.cc
  DEPS nmo::asio nmo::base nmo::http nmo::http_server nmo::runtime_metrics
  COROUTINES)
nmo_cc_test(NAME runtime_endpoints_test SRCS ${CMAKE_CURRENT_SOURCE_DIR}/endpoints_test.cc
            DEPS nmo::runtime_endpoints nmo::base_testing nmo::http_testing
                 nmo::kube_client_testing
            COROUTINES)
