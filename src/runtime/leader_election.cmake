# nmo_runtime_leader_election: leader election on a coordination.k8s.io/v1 Lease (client-go's
# leaderelection with a LeaseLock). Included by CMakeLists.txt in this folder.
nmo_cc_library(
  NAME runtime_leader_election
  HDRS
    leader_election.h
    internal/leader_election_record.h
  SRCS
    leader_election.cc
    internal/leader_election_record.cc
  DEPS nmo::asio nmo::base nmo::kube_api nmo::kube_client Boost::json fmt::fmt
)
nmo_cc_test(NAME runtime_leader_election_record_test SRCS internal/leader_election_record_test.cc
            DEPS nmo::runtime_leader_election nmo::base_testing)
nmo_cc_test(NAME runtime_leader_election_test SRCS leader_election_test.cc
            DEPS nmo::runtime_leader_election nmo::base_testing nmo::kube_client_testing)
