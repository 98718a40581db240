#include "operator/drain/pod_policy.h"

#include <string>

#include <gtest/gtest.h>

namespace nmo::op {
namespace {

kube::Pod pod_owned_by(std::string api_version, std::string kind, bool controller = true) {
  kube::Pod pod;
  pod.meta.name = "p";
  pod.meta.namespace_ = "ns";
  pod.phase = "Running";
  pod.meta.owner_references.push_back({.api_version = std::move(api_version),
                                       .kind = std::move(kind),
                                       .name = "owner",
                                       .uid = "owner-uid",
                                       .controller = controller});
  return pod;
}

bool never_called(const DaemonSetRef&) {
  ADD_FAILURE() << "the DaemonSet lookup must not run";
  return true;
}

TEST(ClassifyPodTest, MirrorPodsAreSkipped) {
  kube::Pod pod;
  pod.meta.annotations.set(std::string(kube::kMirrorPodAnnotation), "abc");
  EXPECT_EQ(classify_pod(pod, never_called), PodAction::kSkipMirror);
  EXPECT_EQ(to_string(classify_pod(pod, true)), "SkipMirror");
}

TEST(ClassifyPodTest, PodsOfAnExistingDaemonSetAreSkipped) {
  const kube::Pod pod = pod_owned_by("apps/v1", "DaemonSet");
  DaemonSetRef asked;
  EXPECT_EQ(classify_pod(pod,
                         [&](const DaemonSetRef& ref) {
                           asked = ref;
                           return true;
                         }),
            PodAction::kSkipDaemonSet);
  EXPECT_EQ(asked, (DaemonSetRef{.namespace_ = "ns", .name = "owner", .uid = "owner-uid"}));
  EXPECT_EQ(classify_pod(pod, true), PodAction::kSkipDaemonSet);
}

TEST(ClassifyPodTest, OrphanedDaemonSetPodsAreEvicted) {
  const kube::Pod pod = pod_owned_by("apps/v1", "DaemonSet");
  EXPECT_EQ(classify_pod(pod, [](const DaemonSetRef&) { return false; }), PodAction::kEvict);
  EXPECT_EQ(classify_pod(pod, false), PodAction::kEvict);
  EXPECT_TRUE(must_leave(classify_pod(pod, false)));
}

TEST(ClassifyPodTest, OnlyTheControllerOwnerReferenceCounts) {
  // A DaemonSet owner that is not the controller does not manage the pod.
  EXPECT_EQ(classify_pod(pod_owned_by("apps/v1", "DaemonSet", false), never_called),
            PodAction::kEvict);
  // Other kinds and API versions are not DaemonSets of apps/v1.
  EXPECT_EQ(classify_pod(pod_owned_by("apps/v1", "ReplicaSet"), never_called), PodAction::kEvict);
  EXPECT_EQ(classify_pod(pod_owned_by("extensions/v1beta1", "DaemonSet"), never_called),
            PodAction::kEvict);
  EXPECT_EQ(daemon_set_owner(pod_owned_by("apps/v1", "StatefulSet")), std::nullopt);
}

TEST(ClassifyPodTest, EverythingElseIsEvicted) {
  kube::Pod bare;  // no controller: evicted like kubectl drain --force
  bare.phase = "Running";
  EXPECT_EQ(classify_pod(bare, never_called), PodAction::kEvict);
  kube::Pod empty_dir = bare;  // data lost, like --delete-emptydir-data
  empty_dir.has_empty_dir = true;
  EXPECT_EQ(classify_pod(empty_dir, never_called), PodAction::kEvict);
  kube::Pod finished = bare;  // finished pods must leave too (and count as gone at once)
  finished.phase = "Succeeded";
  EXPECT_EQ(classify_pod(finished, never_called), PodAction::kEvict);
  EXPECT_EQ(to_string(PodAction::kEvict), "Evict");
  EXPECT_EQ(to_string(PodAction::kSkipDaemonSet), "SkipDaemonSet");
}

TEST(HasFinishedTest, SucceededAndFailedPodsCountAsGone) {
  kube::Pod pod;
  for (const char* phase : {"Succeeded", "Failed"}) {
    pod.phase = phase;
    EXPECT_TRUE(has_finished(pod)) << phase;
  }
  for (const char* phase : {"Pending", "Running", "Unknown", ""}) {
    pod.phase = phase;
    EXPECT_FALSE(has_finished(pod)) << phase;
  }
}

TEST(IsTerminatingTest, DeletionTimestamp) {
  kube::Pod pod;
  EXPECT_FALSE(is_terminating(pod));
  pod.meta.deletion_timestamp = kube::Time{};
  EXPECT_TRUE(is_terminating(pod));
}

}  // namespace
}  // namespace nmo::op
