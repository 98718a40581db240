// FakeApiServer: an in-memory Kubernetes API server behind the kube::Client interface, for unit
// tests of the code that talks to the API (controller-runtime's client/fake plus a little of
// envtest). Objects of any kind live in memory as raw JSON under their URL path; reads, writes,
// lists, watches and evictions behave as kube-apiserver's do where a controller can tell:
//
//   - Paths: /api/v1[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]] and
//     /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]], with an
//     optional ?labelSelector=&fieldSelector=&limit=&continue= query. A collection path without a
//     namespace lists every namespace. Unknown shapes are 404 ("the server could not find the
//     requested resource").
//   - One resourceVersion counter (it starts at 1) for all objects, bumped by every write that
//     changes an object. A write that changes nothing is not a write (no new version, no event),
//     as etcd3's GuaranteedUpdate. Stored objects get apiVersion and kind (from the path) when
//     they lack them, metadata.namespace (from the path), uid, creationTimestamp, generation
//     (1, bumped when anything outside metadata and status changes) and resourceVersion.
//   - create: name or generateName required (422), the body's namespace must be the path's
//     (400), an existing name is AlreadyExists (409), a body carrying a resourceVersion is refused
//     (500: "resourceVersion should not be set on objects to be created", as etcd3's store says).
//     .status is dropped for kinds with a status subresource, except nodes (kube-apiserver keeps a
//     new Node's status).
//   - update (PUT): a missing object is NotFound (404); a metadata.resourceVersion other than the
//     stored one is Conflict (409; an empty one updates unconditionally); a metadata.uid other
//     than the stored one is Conflict. uid, creationTimestamp and deletionTimestamp are kept.
//   - patch: JSON merge patch, JSON patch (a failed `test` is Invalid, 422) and strategic merge
//     patch (json_patch.h; refused with 415 for custom resources, whose group is not a built-in
//     one, as the API server refuses it). A patched object whose metadata.resourceVersion differs
//     from the stored one is Conflict, so a patch carrying the version it read is guarded.
//     Server-side apply is not implemented (kInternal).
//   - Status subresource: every kind has one except events, leases, configmaps, secrets,
//     serviceaccounts and endpoints (change with set_status_subresource()). For a kind that has
//     one, writes to the main path keep the stored .status, and writes to <object>/status change
//     nothing but .status. A kind without one has no /status path (404).
//   - Finalizers: deleting an object with metadata.finalizers sets deletionTimestamp (a MODIFIED
//     event) instead; an update or patch that leaves such an object without finalizers deletes it
//     (a DELETED event). New finalizers on an object being deleted are Invalid (422). Delete
//     preconditions (uid, resourceVersion) that do not hold are Conflict.
//   - list_raw: a `<Kind>List` page of the items matching the label selector (label_selector.h)
//     and the field selector (`path=value`, `path==value`, `path!=value`, joined by ',', the path
//     a dotted JSON path of the object: metadata.name, spec.nodeName, involvedObject.name; a
//     missing field is ""; `source` on an object-valued source means source.component), sorted
//     by namespace and name. `limit` pages with an opaque `continue` token whose later pages come
//     from the snapshot of the first (a consistent list); compact() expires the tokens (410).
//   - watch: events for the objects matching the same filters, from the given resourceVersion
//     (replayed from a bounded history; a version older than the history is an ERROR event with
//     410 Expired, "too old resource version", as the watch cache sends it). "" or "0" starts
//     with a synthetic ADDED per existing object. An object that stops matching the selectors is
//     DELETED for that watch, one that starts matching is ADDED. The server ends a watch normally
//     after WatchOptions::timeout; a watch silent for its idle_timeout fails with kTimeout.
//     Bookmarks are sent by send_bookmarks().
//   - evict: deletes the pod (or marks it for deletion when it has finalizers) and answers
//     kEvicted; a missing pod is kNotFound; a uid precondition that does not hold is a 409
//     refusal. Faults with an HTTP status become the EvictionResult of that answer (a 429 with
//     a DisruptionBudget cause is kBlockedByPdb: pdb_refusal()), faults without one an Error.
//   - Names in messages as the API server writes them: `nodes "n1" not found`,
//     `leases.coordination.k8s.io "x" already exists`; errors are nmo::Error values decoded from a
//     metav1.Status by the real client's decoder (kube/api/status.h).
//
// Scripting (each rule names a verb, "*" for any, and a path prefix that matches whole path
// segments: "/api/v1/nodes/n1" matches /api/v1/nodes/n1/status but not /api/v1/nodes/n10; ""
// matches every path). A call is recorded, then runs the matching before_next() hooks, waits for
// its latency and holds, and then fails when forbidden or when a fail_next() rule is left;
// otherwise it is served. Verbs: "get", "list", "watch", "create", "update", "patch",
// "delete", "evict" (a get_json of a collection path is a "list").
//
// Threading: single-threaded. Every call, and every scripting and inspection method, runs on the
// thread that runs the executor given to the constructor (one io_context run by one thread, as
// in unit tests); callers may be coroutines on strands of that io_context. A call that needs no
// latency completes without suspending, so io_context::poll() drains it. Destroy the server after
// the last call into it has finished; WatchStreams it handed out may outlive it (their next()
// then fails with kCancelled).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "base/error.h"
#include "base/result.h"
#include "http/asio.h"
#include "kube/client/client.h"

namespace nmo::kube::testing {

namespace internal {
struct FakePath;        // a parsed request path
struct FakeWatchState;  // what an open watch shares with the server
}  // namespace internal

/// One call the server received, in order (requests()).
struct FakeRequest {
  std::string verb;  ///< "get", "list", "watch", "create", "update", "patch", "delete", "evict"
  std::string path;  ///< as passed (a get_json path keeps its query); evict: .../pods/<n>/eviction
  /// create/update: the object; patch: the patch document (a string when it is not JSON);
  /// delete: the DeleteOptions; evict: the policy/v1 Eviction; null otherwise.
  boost::json::value body;
  std::optional<PatchType> patch_type;        ///< patch
  std::optional<ListOptions> list_options;    ///< list (a get_json's: from its query)
  std::optional<WatchOptions> watch_options;  ///< watch
};

struct FakeApiServerOptions {
  /// Watch events kept for watches that resume from a resourceVersion; older versions are
  /// "too old" (410). The watch cache keeps a few minutes' worth.
  std::size_t history_limit = 1000;
  /// Who the RBAC-like messages of forbid() name.
  std::string user = "system:serviceaccount:default:fake";
};

class FakeApiServer final : public Client {
 public:
  /// fail_next()'s count for "every call until clear_faults()".
  static constexpr int kEveryCall = -1;

  /// Computes the answer to a create (on_create()); its object is the request's body.
  using CreateHandler = std::function<Result<boost::json::value>(const boost::json::value&)>;

  explicit FakeApiServer(asio::any_io_executor executor, FakeApiServerOptions options = {});
  ~FakeApiServer() override;
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // ---- kube::Client (see the file comment for the semantics) ----

  const RestConfig& config() const override { return config_; }
  asio::awaitable<Result<boost::json::value>> get_json(std::string path) override;
  asio::awaitable<Result<boost::json::value>> create(std::string path, boost::json::value object,
                                                     WriteOptions options) override;
  asio::awaitable<Result<boost::json::value>> update(std::string path, boost::json::value object,
                                                     WriteOptions options) override;
  asio::awaitable<Result<boost::json::value>> patch(std::string path, PatchType type,
                                                    std::string body,
                                                    WriteOptions options) override;
  asio::awaitable<Result<void>> remove(std::string path, DeleteOptions options) override;
  asio::awaitable<Result<EvictionResult>> evict(std::string namespace_, std::string name,
                                                EvictOptions options) override;
  asio::awaitable<Result<std::string>> list_raw(std::string path, ListOptions options) override;
  asio::awaitable<Result<std::unique_ptr<WatchStream>>> watch(std::string path,
                                                              WatchOptions options) override;
  /// Every later call fails with kCancelled (unrecorded); open watches end with kCancelled and
  /// waiting calls wake with kCancelled. Idempotent.
  void shutdown() override;

  // ---- seeding and inspection ----

  /// Stores `object` directly, as another writer would: its path comes from apiVersion, kind
  /// (see set_kind()) and metadata.namespace/name. A new object gets uid, creationTimestamp and
  /// generation unless it has them, and a resourceVersion (an ADDED event); an existing one is
  /// replaced, keeping its uid and creationTimestamp, its generation bumped when its spec changed
  /// (a MODIFIED event; none when nothing changed). No validation, no status or finalizer rules:
  /// an object may be seeded already being deleted. Returns the stored object. Aborts when
  /// `object` has no name, or (this overload) no apiVersion or kind.
  boost::json::value put(boost::json::value object);
  /// The same, with the collection path given (for kinds whose plural put() would not guess).
  boost::json::value put(std::string_view collection_path, boost::json::value object);
  /// Removes the object at `path` at once, finalizers or not (a DELETED event); false when absent.
  bool erase(std::string_view path);
  /// The stored object at `path` (a /status path names the object too).
  [[nodiscard]] std::optional<boost::json::value> object(std::string_view path) const;
  /// The stored objects of a collection path (every namespace when it names none), in list order.
  [[nodiscard]] std::vector<boost::json::value> objects(std::string_view collection_path) const;
  /// The current resourceVersion (of the last write).
  [[nodiscard]] std::string resource_version() const;

  /// Every call received, in order.
  [[nodiscard]] const std::vector<FakeRequest>& requests() const { return requests_; }
  void clear_requests() { requests_.clear(); }
  /// How many received calls have `verb` ("*": any) and a path under `path_prefix`.
  [[nodiscard]] std::size_t count(std::string_view verb, std::string_view path_prefix = "") const;

  // ---- kinds ----

  /// Names the kind of `resource` (a plural: "nodemaintenances"), for list bodies, for objects
  /// created without a kind and for put(). Built in: the core and apps kinds, events, leases,
  /// PDBs, TokenReview, SubjectAccessReview, NodeMaintenance and MaintenancePlan; otherwise the
  /// plural is singularised and capitalised ("items" -> "Item"). put() derives the plural from
  /// the kind the other way round ("Item" -> "items").
  void set_kind(std::string resource, std::string kind);
  /// Whether `resource` (a plural) has a status subresource (see the file comment).
  void set_status_subresource(std::string resource, bool has_status);
  /// A create under `path_prefix` (a collection) is answered by `handler` instead of being
  /// stored, as the API server answers TokenReviews and SubjectAccessReviews. Replaces an
  /// earlier handler of the same prefix.
  void on_create(std::string path_prefix, CreateHandler handler);
  /// A get of the API group version `group_version` ("kubevirt.io/v1") answers its discovery
  /// document (an APIResourceList naming no resources), as the API server does for an installed
  /// CRD's group; otherwise such a path is 404, an API that is not served.
  void serve_group_version(std::string group_version);

  // ---- faults and latency ----

  /// The next `count` matching calls (kEveryCall: all, until clear_faults()) fail with `error`.
  void fail_next(std::string verb, std::string path_prefix, Error error, int count = 1);
  /// Every matching call fails with Forbidden (403) and an RBAC message, until allow().
  void forbid(std::string verb, std::string path_prefix);
  /// Undoes forbid() of the same verb and prefix.
  void allow(std::string_view verb, std::string_view path_prefix);
  /// Matching calls wait `latency` on a timer of the executor first (zero: no more latency).
  void set_latency(std::string verb, std::string path_prefix, std::chrono::milliseconds latency);
  /// Matching calls wait until release() (or shutdown()).
  void hold(std::string verb, std::string path_prefix);
  /// Ends every hold() and lets the held calls go on.
  void release();
  /// How many calls are waiting for their latency or a hold.
  [[nodiscard]] std::size_t waiting() const { return waiters_.size(); }
  /// `hook` runs once, when the next matching call arrives (after it was recorded, before it is
  /// served): the place for "another writer changes the object between our read and our write".
  void before_next(std::string verb, std::string path_prefix, std::function<void()> hook);
  /// Forgets every fail_next(), forbid(), set_latency() and before_next() rule, and release()s.
  void clear_faults();

  /// The 429 answer of an eviction refused by PodDisruptionBudget `pdb_name`, for fail_next().
  [[nodiscard]] static Error pdb_refusal(std::string_view pdb_name);

  // ---- watches ----

  /// Open watches (handed out, not ended, not cancelled, not destroyed).
  [[nodiscard]] std::size_t open_watches() const;
  /// Open watches of collection paths under `path_prefix`.
  [[nodiscard]] std::size_t open_watches(std::string_view path_prefix) const;
  /// Ends every open watch normally (its next() gives std::nullopt after the queued events).
  void end_watches();
  /// Ends every open watch with an ERROR event 410 Expired (kExpired: relist).
  void expire_watches();
  /// Ends every open watch with `error`, as a broken connection would.
  void break_watches(Error error);
  /// A BOOKMARK with the current resourceVersion to every open watch that allows bookmarks.
  void send_bookmarks();
  /// Forgets the watch history and the list snapshots: a watch from any earlier version, or a
  /// continue token issued before, is 410 Expired.
  void compact();

 private:
  struct Stored {
    boost::json::value object;
    std::string ns;  // "" for cluster-scoped objects
  };
  struct HistoryEvent {
    std::int64_t version = 0;
    WatchEventType type = WatchEventType::kAdded;
    std::string collection;  // storage prefix of the object's collection (root + resource)
    std::string ns;
    boost::json::value object;  // the state after the write (the last state for DELETED)
    boost::json::value before;  // the state before (null for ADDED)
  };
  struct Rule {
    std::string verb;
    std::string prefix;
    [[nodiscard]] bool matches(std::string_view call_verb, std::string_view path) const;
  };
  struct Failure {
    Rule rule;
    Error error;
    int remaining = 0;
  };
  struct Latency {
    Rule rule;
    std::chrono::milliseconds latency{0};
  };
  struct Hook {
    Rule rule;
    std::function<void()> run;
  };
  struct Waiter {
    explicit Waiter(const asio::any_io_executor& executor) : timer(executor) {}
    asio::steady_timer timer;
    bool held = false;      // waits for release()
    bool released = false;  // release() woke it
  };
  // A list being paged: the items of its first page's moment, and where the next page starts.
  struct Snapshot {
    std::string resource_version;
    std::shared_ptr<const std::vector<boost::json::value>> items;
    std::size_t offset = 0;
    bool selected = false;  // a selector filtered it (no remainingItemCount then)
  };

  // The part every call shares (see the file comment): hooks, latency, holds, faults.
  asio::awaitable<Result<void>> admit(const std::string& verb, const std::string& path);
  asio::awaitable<Result<void>> delay(const std::string& verb, const std::string& path);
  Result<void> check_faults(const std::string& verb, const std::string& path);
  void record(FakeRequest request);

  Result<boost::json::value> do_get(const std::string& path);
  Result<std::string> do_list(const std::string& path, const ListOptions& options);
  Result<boost::json::value> do_create(const std::string& path, boost::json::value object,
                                       bool dry_run);
  Result<boost::json::value> do_update(const std::string& path, boost::json::value object,
                                       bool dry_run);
  Result<boost::json::value> do_patch(const std::string& path, PatchType type,
                                      const std::string& body, bool dry_run);
  Result<void> do_remove(const std::string& path, const DeleteOptions& options);
  Result<std::unique_ptr<WatchStream>> do_watch(const std::string& path,
                                                const WatchOptions& options);

  // Replaces the stored object at `key` by `next` (an update or patch after its checks):
  // versions, system fields, status and finalizer rules, the event.
  Result<boost::json::value> write(const internal::FakePath& at, const std::string& key,
                                   boost::json::value next, bool dry_run);
  // Deletes or marks for deletion; `preconditions` checked first.
  Result<void> delete_object(const internal::FakePath& at, const std::string& key,
                             const std::string& precondition_uid,
                             const std::string& precondition_version);
  // Stores `object` at `key` with the next version and tells the watches.
  boost::json::value commit(const std::string& key, const std::string& collection,
                            const std::string& ns, boost::json::value object, WatchEventType type,
                            boost::json::value before);
  void remove_stored(const std::string& key, const std::string& collection);
  void publish(HistoryEvent event);
  void end_all(const std::function<void(internal::FakeWatchState&)>& how);
  [[nodiscard]] bool has_status(std::string_view resource) const;
  [[nodiscard]] std::string kind_of(std::string_view resource) const;
  [[nodiscard]] std::string resource_of(std::string_view kind) const;
  [[nodiscard]] std::string next_uid();

  asio::any_io_executor executor_;
  FakeApiServerOptions options_;
  RestConfig config_;
  bool shut_down_ = false;

  std::map<std::string, Stored> objects_;  // storage key (see the .cc) -> object
  std::int64_t version_ = 1;
  std::uint64_t uids_ = 0;
  std::deque<HistoryEvent> history_;
  std::int64_t compacted_through_ = 0;         // watches from an older version are too old
  std::map<std::string, Snapshot> snapshots_;  // continue token -> rest of a list
  std::uint64_t snapshot_ids_ = 0;
  std::vector<std::shared_ptr<internal::FakeWatchState>> watches_;

  std::map<std::string, std::string, std::less<>> kinds_;         // plural -> kind
  std::map<std::string, bool, std::less<>> status_subresources_;  // overrides
  std::vector<std::pair<std::string, CreateHandler>> create_handlers_;
  std::set<std::string, std::less<>> served_group_versions_;  // serve_group_version()

  std::vector<FakeRequest> requests_;
  std::vector<Failure> failures_;
  std::vector<Rule> forbidden_;
  std::vector<Latency> latencies_;
  std::vector<Rule> holds_;
  std::vector<Hook> hooks_;
  std::vector<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace nmo::kube::testing
