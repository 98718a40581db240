# nmo_runtime_event_recorder: core v1 Events with client-go's aggregation and spam filter.
nmo_cc_library(
  NAME runtime_event_recorder
  HDRS
    ${CMAKE_CURRENT_SOURCE_DIR}/event_recorder.h
    ${CMAKE_CURRENT_SOURCE_DIR}/internal/event_recorder_correlator.h
    ${CMAKE_CURRENT_SOURCE_DIR}/internal/event_recorder_json.h
  SRCS
    ${CMAKE_CURRENT_SOURCE_DIR}/event_recorder.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/internal/event_recorder_correlator.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/internal/event_recorder_json.cc
  DEPS
    nmo::asio
    nmo::base
    nmo::kube_api
    nmo::kube_client
    Boost::json
  PRIVATE_DEPS
    fmt::fmt
)
nmo_cc_test(NAME runtime_event_recorder_test
            SRCS ${CMAKE_CURRENT_SOURCE_DIR}/event_recorder_test.cc
            DEPS nmo::runtime_event_recorder nmo::base_testing nmo::kube_client_testing)
