// The workload behind a pod, read through the API (docs/design.md §2.4): its controller
// ReplicaSet and that ReplicaSet's Deployment, or its StatefulSet. One rule for the operator's
// drain and the plugin's `plan`, which both name a PDB deadlock's way out from it
// (deadlock.h). Only read for a pod a budget refuses for good: a get or two per such pod.
//
// Threading: a coroutine on the client's executor.
#pragma once

#include "http/asio.h"
#include "kube/api/pod.h"
#include "kube/client/client.h"
#include "operator/drain/deadlock.h"

namespace nmo::op {

// The PodOwner of `pod`: kBare without a controller; kOther for a controller that is neither a
// ReplicaSet nor a StatefulSet, or one that cannot be read (forbidden, gone), which names no way
// out by scaling. The caller adds the namespace's opt-out and the HPA.
[[nodiscard]] asio::awaitable<PodOwner> read_pod_owner(kube::Client& client, kube::Pod pod);

}  // namespace nmo::op
