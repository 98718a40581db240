// The execution of one decision's actions (actions.h): one handler per kind, run in order up to
// the first that stops the reconcile (a failed write, a conflict to retry).
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "kube/api/resource.h"
#include "operator/controller/internal/controller_impl.h"
#include "runtime/finalizer.h"

namespace nmo::op::internal {

using runtime::ReconcileAction;

// The handlers of one decision's actions, for the maintenance `nm_`; std::visit picks the one of
// each action's kind. Each returns std::nullopt to go on with the next action.
class ControllerImpl::ActionRunner {
 public:
  ActionRunner(ControllerImpl& op, const NodeMaintenance& nm,
               std::optional<Clock::time_point>& next)
      : op_(op),
        nm_(nm),
        path_(kube::object_path<NodeMaintenance>("", nm.meta.name)),
        next_(next) {}

  // The actions after the one running now (a failed write hands its Announces on).
  void set_later(std::span<Action> later) { later_ = later; }

  asio::awaitable<Stop> operator()(actions::AddFinalizer& /*unused*/) {
    auto added =
        co_await runtime::add_finalizer(op_.client_, path_, nm_.meta, std::string(kFinalizer));
    if (!added) {
      if (is_write_conflict(added.error())) co_return ReconcileAction::after(kConflictRetry);
      co_return added.error();
    }
    op_.registry_.memory(nm_).finalizer_added_to = nm_.meta.resource_version;
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::WriteStatus& action) {
    auto written = co_await op_.write_status(nm_, std::move(action.status));
    if (!written) {
      // The status is believed and goes out with the next write: so do its Events.
      for (Action& later : later_) {
        auto* announce = std::get_if<actions::Announce>(&later);
        if (announce == nullptr) break;
        op_.announce(nm_, std::move(announce->event));
      }
      co_return written.error();
    }
    on_record_ = !written->has_value();
    if (written->has_value() && action.wake_for_delayed_write) sooner(**written);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::Believe& action) {
    op_.registry_.memory(nm_).status = std::move(action.status);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::Announce& action) {
    if (on_record_) {
      op_.event(nm_, std::move(action.event));
    } else {
      op_.announce(nm_, std::move(action.event));
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::EmitEvent& action) {
    if (action.on_node) {
      const auto node = op_.view_.node(nm_.spec.node_name);
      op_.event(runtime::ObjectRef{.api_version = "v1",
                                   .kind = "Node",
                                   .namespace_ = "",
                                   .name = nm_.spec.node_name,
                                   .uid = node != nullptr ? node->meta.uid : std::string()},
                std::move(action.event));
    } else if (action.pod) {
      op_.event(nm_, std::move(action.event),
                runtime::ObjectRef{.api_version = "v1",
                                   .kind = "Pod",
                                   .namespace_ = action.pod->meta.namespace_,
                                   .name = action.pod->meta.name,
                                   .uid = action.pod->meta.uid});
    } else {
      op_.event(nm_, std::move(action.event));
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::Cordon& action) {
    auto changed = co_await op_.apply_node_changes(nm_);
    if (!changed) {
      if (is_write_conflict(changed.error())) {
        op_.log_for(nm_).info("the node changed while we patched it; trying again",
                              {{"error", changed.error().describe()}});
        co_return ReconcileAction::after(kConflictRetry);
      }
      co_return changed.error();
    }
    if (*changed && action.event_if_changed) op_.event(nm_, std::move(*action.event_if_changed));
    if (*changed && action.note_if_changed) op_.log_note(nm_, *action.note_if_changed);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::RestoreNode& action) {
    RestoreOutcome restored;
    auto uncordoned = co_await op_.restore_node(nm_, &restored.left_cordoned);
    if (!uncordoned) {
      if (action.for_removal && is_write_conflict(uncordoned.error())) {
        co_return ReconcileAction::after(kConflictRetry);
      }
      co_return uncordoned.error();
    }
    restored.uncordoned = *uncordoned;
    if (action.for_removal) op_.registry_.memory(nm_).removal.restored = restored;
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::TakeSlot& /*unused*/) {
    op_.registry_.memory(nm_).admitting = true;
    if (auto taken = co_await op_.leases_->take_slot(nm_); !taken) {
      retry_admission_after(kConflictRetry);
      co_return taken.error();
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::TakeNodeLease& /*unused*/) {
    auto leased = co_await op_.leases_->take_node_lease(nm_.spec.node_name);
    if (leased && *leased) co_return Stop();
    // A step of the admission that fails gives the slot back (docs/design.md §2.2).
    if (auto released = co_await op_.leases_->release_slot(nm_.meta.name); !released) {
      op_.log_for(nm_).warn("could not give the slot back",
                            {{"error", released.error().describe()}});
    }
    // The missing lease namespace is logged and on /readyz (create_lease_namespace()).
    if (!leased && op_.leases_->problem()) {
      retry_admission_after(kLeaseNamespaceRetry);
      co_return ReconcileAction::after(kLeaseNamespaceRetry);
    }
    retry_admission_after(kConflictRetry);
    if (!leased) co_return leased.error();
    co_return ReconcileAction::after(kConflictRetry);
  }

  asio::awaitable<Stop> operator()(actions::RenewNodeLease& /*unused*/) {
    auto renewed = co_await op_.leases_->take_node_lease(nm_.spec.node_name);
    if (!renewed) {
      // Not counted as an error on the lease: the API failed, not the holder.
      op_.log_for(nm_).warn("could not renew the node lease; retrying",
                            {{"error", renewed.error().describe()}});
      // Never later than the next regular renewal would be.
      sooner(op_.clock_.now() + std::min<Clock::duration>(kNodeLeaseRetryInterval,
                                                          op_.options_.node_lease_renew_interval));
      co_return Stop();
    }
    op_.registry_.memory(nm_).drain.renewal =
        *renewed ? LeaseRenewal::kRenewed : LeaseRenewal::kHeldByOther;
    // Another holder: the next decision counts it at once.
    if (!*renewed) sooner(op_.clock_.now());
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::ReleaseNodeLease& /*unused*/) {
    if (auto released = co_await op_.leases_->release_node_lease(nm_.spec.node_name); !released) {
      co_return released.error();
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::ReleaseSlot& /*unused*/) {
    if (auto released = co_await op_.leases_->release_slot(nm_.meta.name); !released) {
      co_return released.error();
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::StopEvictions& /*unused*/) {
    op_.evictions_.stop(nm_);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::ResetEvictions& /*unused*/) {
    op_.evictions_.reset(nm_);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::StartEviction& action) {
    if (action.budget_allowed_for) {
      const auto after =
          std::chrono::duration_cast<std::chrono::nanoseconds>(*action.budget_allowed_for);
      op_.log_for(nm_).info(
          "evicting a pod its budget allows again",
          {{"pod", action.pod.meta.namespace_ + "/" + action.pod.meta.name},
           {"since_allowed_ms",
            static_cast<std::int64_t>(
                std::chrono::duration_cast<std::chrono::milliseconds>(after).count())}});
      if (op_.options_.metrics != nullptr) op_.options_.metrics->on_budget_retry(after);
    }
    op_.evictions_.start(nm_, action.pod);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::CreateMigration& action) {
    op_.start_migration(nm_, action.request);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::MigrationEnded& action) {
    if (op_.options_.metrics != nullptr) {
      op_.options_.metrics->on_migration(action.succeeded ? "succeeded" : "failed");
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::CancelMigrations& action) {
    std::vector<std::string> cancelled = co_await op_.cancel_migrations(nm_);
    if (action.for_removal) op_.registry_.memory(nm_).removal.cancelled = std::move(cancelled);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::WakeAfter& action) {
    op_.controller_.enqueue_after(nm_.meta.name, action.after);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::DrainCompleted& action) {
    if (op_.options_.metrics != nullptr) {
      op_.options_.metrics->on_drain_completed(
          std::chrono::duration_cast<std::chrono::nanoseconds>(action.took));
    }
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::ForgetQuorum& /*unused*/) {
    op_.registry_.quorum().forget(nm_.meta.name);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::RemoveFinalizer& /*unused*/) {
    if (auto removed = co_await runtime::remove_finalizer(op_.client_, path_, nm_.meta,
                                                          std::string(kFinalizer));
        !removed) {
      co_return removed.error();
    }
    // Nothing more is remembered but that it is finalized; its evictions in flight drop their
    // answers, which frees their slots.
    op_.registry_.finalize(nm_.meta.name, nm_.meta.uid);
    op_.evictions_.wake_waiters();
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::Log& action) {
    op_.log_note(nm_, action.note);
    co_return Stop();
  }

  asio::awaitable<Stop> operator()(actions::Requeue& action) {
    sooner(action.at);
    co_return Stop();
  }

 private:
  // No new admission try before `after` from now (DrainMemory::admission_retry_at).
  void retry_admission_after(Clock::duration after) {
    op_.registry_.memory(nm_).drain.admission_retry_at = op_.clock_.now() + after;
  }

  void sooner(Clock::time_point when) {
    if (!next_ || when < *next_) next_ = when;
  }

  ControllerImpl& op_;
  const NodeMaintenance& nm_;
  const std::string path_;
  std::optional<Clock::time_point>& next_;
  std::span<Action> later_;
  // Whether the status of the last WriteStatus is on record (written, or found so).
  bool on_record_ = false;
};

asio::awaitable<ControllerImpl::Stop> ControllerImpl::execute(
    const NodeMaintenance& nm, std::vector<Action> actions,
    std::optional<Clock::time_point>& next) {
  ActionRunner runner(*this, nm, next);
  for (std::size_t at = 0; at < actions.size(); ++at) {
    runner.set_later(std::span(actions).subspan(at + 1));
    if (Stop stopped = co_await std::visit(runner, actions[at])) co_return stopped;
  }
  co_return Stop();
}

}  // namespace nmo::op::internal
