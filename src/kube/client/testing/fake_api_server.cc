#include "kube/client/testing/fake_api_server.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include "base/check.h"
#include "base/strings.h"
#include "kube/api/label_selector.h"
#include "kube/api/labels.h"
#include "kube/api/status.h"
#include "kube/api/time.h"
#include "kube/client/testing/json_patch.h"

namespace nmo::kube::testing {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace internal {

// A request path taken apart (see the file comment of the header for the shapes).
struct FakePath {
  std::string group;  // "" for the core group
  std::string version;
  std::string ns;  // "" for cluster-scoped objects and all-namespace collections
  std::string resource;
  std::string name;  // "" for a collection
  std::string subresource;

  [[nodiscard]] std::string root() const {
    return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  }
  [[nodiscard]] std::string api_version() const {
    return group.empty() ? version : group + "/" + version;
  }
  // The storage prefix of the collection, whatever the namespace.
  [[nodiscard]] std::string collection() const { return root() + "/" + resource; }
  // "nodes", "leases.coordination.k8s.io": how the API server names the resource in messages.
  [[nodiscard]] std::string group_resource() const {
    return group.empty() ? resource : resource + "." + group;
  }
  // The storage key of the object: sorts by collection, then namespace, then name.
  [[nodiscard]] std::string key() const { return collection() + '\n' + ns + '\n' + name; }
  // The storage key prefix of what a list of this collection path returns.
  [[nodiscard]] std::string list_prefix() const {
    return ns.empty() ? collection() + '\n' : collection() + '\n' + ns + '\n';
  }
};

// A field selector requirement: `path` equals (or not) `value`.
struct FieldRequirement {
  std::string path;
  bool equal = true;
  std::string value;
};

// What a list or watch returns: one collection (one namespace or all) and the selectors.
struct Filter {
  std::string collection;
  std::string ns;
  LabelSelector labels;
  std::vector<FieldRequirement> fields;
};

// One thing a watch hands out next.
struct QueuedItem {
  enum class Kind { kEvent, kError, kEnd };
  Kind kind = Kind::kEvent;
  WatchEvent event;
  Error error;
};

struct FakeWatchState {
  explicit FakeWatchState(const asio::any_io_executor& executor) : wake(executor) {}

  std::string path;  // the collection path as watched, for open_watches(prefix)
  std::string kind;  // of the objects, for bookmarks
  std::string api_version;
  Filter filter;
  bool allow_bookmarks = false;
  Clock::time_point deadline = Clock::time_point::max();  // the server's timeout
  std::chrono::milliseconds idle_timeout{0};

  std::deque<QueuedItem> queue;
  bool open = true;         // still receiving events (counted by open_watches())
  bool cancelled = false;   // cancel() was called
  bool finished = false;    // its end or error was handed out
  asio::steady_timer wake;  // next() waits on it; cancelled when something is queued

  void push(QueuedItem item) {
    queue.push_back(std::move(item));
    wake.cancel();
  }
};

}  // namespace internal

namespace {

using internal::FakePath;
using internal::FakeWatchState;
using internal::FieldRequirement;
using internal::Filter;
using internal::QueuedItem;

// Resources without a status subresource (their .status, if any, is written with the object).
constexpr std::string_view kWithoutStatus[] = {"events",  "leases",          "configmaps",
                                               "secrets", "serviceaccounts", "endpoints"};

// Built-in kinds, by plural.
constexpr std::pair<std::string_view, std::string_view> kBuiltinKinds[] = {
    {"pods", "Pod"},
    {"nodes", "Node"},
    {"namespaces", "Namespace"},
    {"events", "Event"},
    {"leases", "Lease"},
    {"configmaps", "ConfigMap"},
    {"secrets", "Secret"},
    {"services", "Service"},
    {"endpoints", "Endpoints"},
    {"serviceaccounts", "ServiceAccount"},
    {"persistentvolumeclaims", "PersistentVolumeClaim"},
    {"persistentvolumes", "PersistentVolume"},
    {"deployments", "Deployment"},
    {"replicasets", "ReplicaSet"},
    {"statefulsets", "StatefulSet"},
    {"daemonsets", "DaemonSet"},
    {"jobs", "Job"},
    {"poddisruptionbudgets", "PodDisruptionBudget"},
    {"tokenreviews", "TokenReview"},
    {"subjectaccessreviews", "SubjectAccessReview"},
    {"nodemaintenances", "NodeMaintenance"},
    {"maintenanceplans", "MaintenancePlan"},
};

// ---- paths and queries ----------------------------------------------------------------------

std::string_view without_query(std::string_view path) { return path.substr(0, path.find('?')); }

Error no_such_resource() {
  json::object status{
      {"kind", "Status"},     {"apiVersion", "v1"},
      {"status", "Failure"},  {"message", "the server could not find the requested resource"},
      {"reason", "NotFound"}, {"code", 404}};
  return error_from_status(status);
}

Result<FakePath> parse_path(std::string_view full) {
  const std::string_view path = without_query(full);
  std::vector<std::string_view> parts = split(path, '/');
  if (parts.size() < 2 || !parts.front().empty()) return no_such_resource();
  parts.erase(parts.begin());
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // a trailing '/'
  FakePath at;
  std::size_t next = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    at.version = std::string(parts[1]);
    next = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    at.group = std::string(parts[1]);
    at.version = std::string(parts[2]);
    next = 3;
  } else {
    return no_such_resource();
  }
  std::vector<std::string_view> rest(parts.begin() + static_cast<std::ptrdiff_t>(next),
                                     parts.end());
  if (rest.size() >= 2 && rest[0] == "namespaces") {
    // /namespaces/<n> and /namespaces/<n>/{status,finalize} name the Namespace object itself.
    const bool namespace_object =
        rest.size() == 2 || (rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"));
    if (!namespace_object) {
      at.ns = std::string(rest[1]);
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) return no_such_resource();
  for (const std::string_view part : rest) {
    if (part.empty()) return no_such_resource();
  }
  at.resource = std::string(rest[0]);
  if (rest.size() >= 2) at.name = std::string(rest[1]);
  if (rest.size() == 3) at.subresource = std::string(rest[2]);
  return at;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size()) {
      unsigned value = 0;
      const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec == std::errc() && end == text.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
      } else {
        out += text[i];
      }
    } else {
      out += text[i];
    }
  }
  return out;
}

// The list options a query string carries (for get_json of a collection).
ListOptions list_options_of(std::string_view path) {
  ListOptions options;
  options.limit = 0;
  const std::size_t question = path.find('?');
  if (question == std::string_view::npos) return options;
  for (const std::string_view pair : split(path.substr(question + 1), '&')) {
    const std::size_t equals = pair.find('=');
    const std::string_view key = pair.substr(0, equals);
    const std::string value =
        equals == std::string_view::npos ? std::string() : percent_decode(pair.substr(equals + 1));
    if (key == "labelSelector") {
      options.label_selector = value;
    } else if (key == "fieldSelector") {
      options.field_selector = value;
    } else if (key == "limit") {
      std::from_chars(value.data(), value.data() + value.size(), options.limit);
    } else if (key == "continue") {
      options.continue_token = value;
    } else if (key == "resourceVersion") {
      options.resource_version = value;
    }
  }
  return options;
}

// The selectors of `path`'s query where `options` (ListOptions or WatchOptions) sets none.
template <typename Options>
void take_path_selectors(std::string_view path, Options& options) {
  const ListOptions from_path = list_options_of(path);
  if (options.label_selector.empty()) options.label_selector = from_path.label_selector;
  if (options.field_selector.empty()) options.field_selector = from_path.field_selector;
}

// Whether `prefix` covers `path` in whole segments.
bool under(std::string_view prefix, std::string_view path) {
  path = without_query(path);
  if (prefix.empty()) return true;
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

// ---- errors, as the API server words them -----------------------------------------------------

Error api_error(int code, std::string_view reason, std::string message, json::object details = {}) {
  json::object status{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                      {"message", message}, {"reason", reason},   {"code", code}};
  if (!details.empty()) status["details"] = std::move(details);
  return error_from_status(status);
}

json::object details_of(const FakePath& at) {
  return {{"name", at.name}, {"group", at.group}, {"kind", at.resource}};
}

Error not_found(const FakePath& at) {
  return api_error(404, "NotFound", at.group_resource() + " \"" + at.name + "\" not found",
                   details_of(at));
}

Error conflict(const FakePath& at, const std::string& why) {
  return api_error(
      409, "Conflict",
      "Operation cannot be fulfilled on " + at.group_resource() + " \"" + at.name + "\": " + why,
      details_of(at));
}

Error stale(const FakePath& at) {
  return conflict(at,
                  "the object has been modified; please apply your changes to the latest version "
                  "and try again");
}

Error bad_request(std::string message) { return api_error(400, "BadRequest", std::move(message)); }

Error method_not_allowed() {
  return api_error(405, "MethodNotAllowed",
                   "the server does not allow this method on the requested resource");
}

Error invalid(std::string_view kind, const FakePath& at, std::string field, std::string why) {
  json::object details = details_of(at);
  details["kind"] = kind;
  details["causes"] =
      json::array{{{"reason", "FieldValueInvalid"}, {"message", why}, {"field", field}}};
  return api_error(422, "Invalid",
                   std::string(kind) + " \"" + at.name + "\" is invalid: " + field + ": " + why,
                   std::move(details));
}

// A patch the patch library could not apply: the API server's generic 422 with the library's
// message as the cause.
Error unprocessable_patch(const std::string& why) {
  return api_error(
      422, "Invalid", "the server rejected our request due to an error in our request",
      {{"causes", json::array{{{"reason", "UnexpectedServerResponse"}, {"message", why}}}}});
}

Error expired(std::string message) { return api_error(410, "Expired", std::move(message)); }

Error cancelled() { return {ErrorCode::kCancelled, "the fake API server was shut down"}; }

// The RBAC verb of a call and the resource it names ("pods/eviction" for an eviction).
std::string forbidden_message(const std::string& user, std::string verb, const std::string& path) {
  Result<FakePath> parsed = parse_path(path);
  if (!parsed) {
    return "forbidden: User \"" + user + "\" cannot " + verb + " path \"" +
           std::string(without_query(path)) + "\"";
  }
  const FakePath& at = *parsed;
  std::string resource = at.resource;
  if (!at.subresource.empty()) resource += "/" + at.subresource;
  if (verb == "evict") verb = "create";
  std::string subject = at.group_resource();
  if (!at.name.empty()) subject += " \"" + at.name + "\"";
  return subject + " is forbidden: User \"" + user + "\" cannot " + verb + " resource \"" +
         resource + "\" in API group \"" + at.group + "\"" +
         (at.ns.empty() ? std::string(" at the cluster scope")
                        : " in the namespace \"" + at.ns + "\"");
}

// ---- object fields ----------------------------------------------------------------------------

json::object& metadata(json::value& object) {
  json::value& meta = object.as_object()["metadata"];
  if (!meta.is_object()) meta = json::object();
  return meta.as_object();
}

const json::value* field(const json::value& object, std::string_view key) {
  const json::object* members = object.if_object();
  return members == nullptr ? nullptr : members->if_contains(key);
}

std::string meta_string(const json::value& object, std::string_view key) {
  const json::value* meta = field(object, "metadata");
  const json::value* value = meta == nullptr ? nullptr : field(*meta, key);
  return value != nullptr && value->is_string() ? std::string(value->get_string()) : std::string();
}

bool has_meta(const json::value& object, std::string_view key) {
  const json::value* meta = field(object, "metadata");
  const json::value* value = meta == nullptr ? nullptr : field(*meta, key);
  return value != nullptr && !value->is_null();
}

std::vector<std::string> finalizers(const json::value& object) {
  std::vector<std::string> out;
  const json::value* meta = field(object, "metadata");
  const json::value* list = meta == nullptr ? nullptr : field(*meta, "finalizers");
  if (list == nullptr || !list->is_array()) return out;
  for (const json::value& item : list->get_array()) {
    if (item.is_string()) out.emplace_back(item.get_string());
  }
  return out;
}

// The object without metadata and status: what its generation counts changes of.
json::value spec_part(const json::value& object) {
  json::value copy = object;
  if (json::object* members = copy.if_object()) {
    members->erase("metadata");
    members->erase("status");
  }
  return copy;
}

// metadata.generation of `next` one past `old`'s when anything outside metadata and status changed.
void bump_generation(const json::value& old, json::value& next) {
  if (spec_part(next) == spec_part(old)) return;
  const json::value* meta = field(old, "metadata");
  const json::value* generation = meta == nullptr ? nullptr : field(*meta, "generation");
  metadata(next)["generation"] =
      (generation != nullptr && generation->is_int64() ? generation->get_int64() : 0) + 1;
}

// Sets or removes the member `key` of `to` after `from`'s.
void copy_member(const json::value& from, json::value& to, std::string_view key) {
  const json::value* value = field(from, key);
  if (value != nullptr) {
    to.as_object()[key] = *value;
  } else {
    to.as_object().erase(key);
  }
}

void copy_meta(const json::value& from, json::value& to, std::string_view key) {
  const json::value* meta = field(from, "metadata");
  const json::value* value = meta == nullptr ? nullptr : field(*meta, key);
  if (value != nullptr) {
    metadata(to)[key] = *value;
  } else {
    metadata(to).erase(key);
  }
}

bool is_builtin_group(std::string_view group) {
  return group.empty() || group.find('.') == std::string_view::npos || group.ends_with(".k8s.io");
}

// ---- selectors --------------------------------------------------------------------------------

Result<std::vector<FieldRequirement>> parse_field_selector(std::string_view text) {
  std::vector<FieldRequirement> out;
  if (trim(text).empty()) return out;
  for (const std::string_view part : split(text, ',')) {
    const std::string_view term = trim(part);
    FieldRequirement requirement;
    std::size_t at = term.find("!=");
    std::size_t skip = 2;
    if (at != std::string_view::npos) {
      requirement.equal = false;
    } else if (at = term.find("=="); at == std::string_view::npos) {
      at = term.find('=');
      skip = 1;
    }
    if (at == std::string_view::npos || trim(term.substr(0, at)).empty()) {
      return bad_request("invalid field selector: \"" + std::string(text) +
                         "\": expected key=value, key==value or key!=value");
    }
    requirement.path = std::string(trim(term.substr(0, at)));
    requirement.value = std::string(trim(term.substr(at + skip)));
    out.push_back(std::move(requirement));
  }
  return out;
}

// The text a field selector compares: strings as they are, numbers and booleans spelled, a
// missing field "" (so spec.nodeName= selects unscheduled pods).
std::string field_text(const json::value& object, const std::string& path) {
  const json::value* at = &object;
  for (const std::string_view key : split(path, '.')) {
    at = field(*at, key);
    if (at == nullptr) return "";
  }
  if (path == "source" && at->is_object()) {  // an Event's source selects by its component
    at = field(*at, "component");
    if (at == nullptr) return "";
  }
  if (at->is_string()) return std::string(at->get_string());
  if (at->is_null()) return "";
  return json::serialize(*at);
}

Labels labels_of(const json::value& object) {
  std::vector<Labels::Entry> entries;
  const json::value* meta = field(object, "metadata");
  const json::value* labels = meta == nullptr ? nullptr : field(*meta, "labels");
  if (labels != nullptr && labels->is_object()) {
    for (const auto& label : labels->get_object()) {
      if (label.value().is_string()) {
        entries.emplace_back(std::string(label.key()), std::string(label.value().get_string()));
      }
    }
  }
  return Labels(std::move(entries));
}

Result<Filter> make_filter(const FakePath& at, std::string_view label_selector,
                           std::string_view field_selector) {
  Filter filter{at.collection(), at.ns, {}, {}};
  Result<LabelSelector> labels = parse_selector(label_selector);
  if (!labels) return bad_request(labels.error().message);
  filter.labels = std::move(*labels);
  NMO_TRY_ASSIGN(filter.fields, parse_field_selector(field_selector));
  return filter;
}

bool selects(const Filter& filter, const json::value& object) {
  if (!filter.labels.empty() && !filter.labels.matches(labels_of(object))) return false;
  return std::all_of(
      filter.fields.begin(), filter.fields.end(), [&](const FieldRequirement& requirement) {
        return (field_text(object, requirement.path) == requirement.value) == requirement.equal;
      });
}

// ---- the watch stream -------------------------------------------------------------------------

class FakeWatch final : public WatchStream {
 public:
  explicit FakeWatch(std::shared_ptr<FakeWatchState> state) : state_(std::move(state)) {}
  ~FakeWatch() override {
    state_->open = false;
    state_->cancelled = true;
  }
  FakeWatch(const FakeWatch&) = delete;
  FakeWatch& operator=(const FakeWatch&) = delete;

  asio::awaitable<Result<std::optional<WatchEvent>>> next() override {
    FakeWatchState& s = *state_;
    for (;;) {
      if (s.cancelled) co_return Error(ErrorCode::kCancelled, "watch cancelled");
      if (!s.queue.empty()) {
        QueuedItem item = std::move(s.queue.front());
        s.queue.pop_front();
        if (item.kind == QueuedItem::Kind::kEvent) {
          co_return std::optional<WatchEvent>(std::move(item.event));
        }
        s.open = false;
        s.finished = true;
        if (item.kind == QueuedItem::Kind::kError) co_return std::move(item.error);
        co_return std::optional<WatchEvent>();
      }
      const Clock::time_point now = Clock::now();
      if (s.finished || now >= s.deadline) {
        s.open = false;
        s.finished = true;
        co_return std::optional<WatchEvent>();
      }
      const Clock::time_point idle =
          s.idle_timeout.count() > 0 && s.idle_timeout < Clock::time_point::max() - now
              ? now + s.idle_timeout
              : Clock::time_point::max();
      s.wake.expires_at(std::min(s.deadline, idle));
      boost::system::error_code ec;
      co_await s.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        if (Clock::now() < s.deadline && s.queue.empty() && !s.cancelled) {
          s.open = false;
          s.finished = true;
          co_return Error(ErrorCode::kTimeout, "the watch stream was silent for " +
                                                   std::to_string(s.idle_timeout.count()) + "ms");
        }
        continue;
      }
      // Woken by the server or cancel(), or our caller was cancelled.
      const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
      if (s.queue.empty() && !s.cancelled && state.cancelled() != asio::cancellation_type::none) {
        co_return Error(ErrorCode::kCancelled, "watch cancelled");
      }
    }
  }

  void cancel() override {
    state_->cancelled = true;
    state_->open = false;
    state_->wake.cancel();
  }

 private:
  std::shared_ptr<FakeWatchState> state_;
};

// What a watch with `filter` sees of `event` (see the header: selector transitions).
std::optional<WatchEvent> seen_by(const Filter& filter, WatchEventType type,
                                  const json::value& object, const json::value& before,
                                  std::int64_t version) {
  const bool now = selects(filter, object);
  const bool was = !before.is_null() && selects(filter, before);
  switch (type) {
    case WatchEventType::kAdded:
      if (now) return WatchEvent{WatchEventType::kAdded, object};
      return std::nullopt;
    case WatchEventType::kModified:
      if (now) return WatchEvent{was ? WatchEventType::kModified : WatchEventType::kAdded, object};
      if (was) {
        json::value last = before;
        metadata(last)["resourceVersion"] = std::to_string(version);
        return WatchEvent{WatchEventType::kDeleted, std::move(last)};
      }
      return std::nullopt;
    case WatchEventType::kDeleted:
      if (now) return WatchEvent{WatchEventType::kDeleted, object};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

QueuedItem event_item(WatchEvent event) {
  QueuedItem item;
  item.event = std::move(event);
  return item;
}

QueuedItem error_item(Error error) {
  QueuedItem item;
  item.kind = QueuedItem::Kind::kError;
  item.error = std::move(error);
  return item;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_vowel(char c) { return std::string_view("aeiou").find(c) != std::string_view::npos; }

// "Item" -> "items", "Policy" -> "policies", "Ingress" -> "ingresses".
std::string plural_of(std::string_view kind) {
  std::string word = lower(kind);
  if (word.ends_with("s") || word.ends_with("x") || word.ends_with("ch") || word.ends_with("sh")) {
    return word + "es";
  }
  if (word.size() >= 2 && word.back() == 'y' && !is_vowel(word[word.size() - 2])) {
    word.pop_back();
    return word + "ies";
  }
  return word + "s";
}

// "items" -> "Item", "policies" -> "Policy", "ingresses" -> "Ingress".
std::string singular_of(std::string_view resource) {
  std::string word(resource);
  if (word.ends_with("ies")) {
    word = word.substr(0, word.size() - 3) + "y";
  } else if (word.ends_with("sses") || word.ends_with("xes") || word.ends_with("ches") ||
             word.ends_with("shes")) {
    word.resize(word.size() - 2);
  } else if (word.ends_with("s")) {
    word.pop_back();
  }
  if (!word.empty()) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
  return word;
}

}  // namespace

// ---- construction -----------------------------------------------------------------------------

FakeApiServer::FakeApiServer(asio::any_io_executor executor, FakeApiServerOptions options)
    : executor_(std::move(executor)), options_(std::move(options)) {
  for (const auto& [resource, kind] : kBuiltinKinds) {
    kinds_.emplace(std::string(resource), std::string(kind));
  }
}

FakeApiServer::~FakeApiServer() { shutdown(); }

void FakeApiServer::set_kind(std::string resource, std::string kind) {
  kinds_[std::move(resource)] = std::move(kind);
}

void FakeApiServer::set_status_subresource(std::string resource, bool has_status) {
  status_subresources_[std::move(resource)] = has_status;
}

void FakeApiServer::serve_group_version(std::string group_version) {
  served_group_versions_.insert(std::move(group_version));
}

void FakeApiServer::on_create(std::string path_prefix, CreateHandler handler) {
  for (auto& [prefix, existing] : create_handlers_) {
    if (prefix == path_prefix) {
      existing = std::move(handler);
      return;
    }
  }
  create_handlers_.emplace_back(std::move(path_prefix), std::move(handler));
}

bool FakeApiServer::has_status(std::string_view resource) const {
  if (const auto found = status_subresources_.find(resource); found != status_subresources_.end()) {
    return found->second;
  }
  return std::find(std::begin(kWithoutStatus), std::end(kWithoutStatus), resource) ==
         std::end(kWithoutStatus);
}

std::string FakeApiServer::kind_of(std::string_view resource) const {
  if (const auto found = kinds_.find(resource); found != kinds_.end()) return found->second;
  return singular_of(resource);
}

std::string FakeApiServer::resource_of(std::string_view kind) const {
  for (const auto& [resource, known] : kinds_) {
    if (known == kind) return resource;
  }
  return plural_of(kind);
}

std::string FakeApiServer::next_uid() {
  char text[40];
  std::snprintf(text, sizeof(text), "00000000-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(++uids_));
  return text;
}

std::string FakeApiServer::resource_version() const { return std::to_string(version_); }

// ---- scripting --------------------------------------------------------------------------------

void FakeApiServer::fail_next(std::string verb, std::string path_prefix, Error error, int count) {
  if (count == 0) return;
  failures_.push_back({{std::move(verb), std::move(path_prefix)}, std::move(error), count});
}

void FakeApiServer::forbid(std::string verb, std::string path_prefix) {
  forbidden_.push_back({std::move(verb), std::move(path_prefix)});
}

void FakeApiServer::allow(std::string_view verb, std::string_view path_prefix) {
  std::erase_if(forbidden_,
                [&](const Rule& rule) { return rule.verb == verb && rule.prefix == path_prefix; });
}

void FakeApiServer::set_latency(std::string verb, std::string path_prefix,
                                std::chrono::milliseconds latency) {
  std::erase_if(latencies_, [&](const Latency& rule) {
    return rule.rule.verb == verb && rule.rule.prefix == path_prefix;
  });
  if (latency.count() > 0) {
    latencies_.push_back({{std::move(verb), std::move(path_prefix)}, latency});
  }
}

void FakeApiServer::hold(std::string verb, std::string path_prefix) {
  holds_.push_back({std::move(verb), std::move(path_prefix)});
}

void FakeApiServer::release() {
  holds_.clear();
  for (const std::shared_ptr<Waiter>& waiter : waiters_) {
    if (waiter->held) {
      waiter->released = true;
      waiter->timer.cancel();
    }
  }
}

void FakeApiServer::before_next(std::string verb, std::string path_prefix,
                                std::function<void()> hook) {
  hooks_.push_back({{std::move(verb), std::move(path_prefix)}, std::move(hook)});
}

void FakeApiServer::clear_faults() {
  failures_.clear();
  forbidden_.clear();
  latencies_.clear();
  hooks_.clear();
  release();
}

Error FakeApiServer::pdb_refusal(std::string_view pdb_name) {
  return api_error(
      429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
      {{"causes", json::array{{{"reason", "DisruptionBudget"},
                               {"message", "The disruption budget " + std::string(pdb_name) +
                                               " needs 1 healthy pods and has 1 currently"}}}}});
}

std::size_t FakeApiServer::count(std::string_view verb, std::string_view path_prefix) const {
  return static_cast<std::size_t>(
      std::count_if(requests_.begin(), requests_.end(), [&](const FakeRequest& request) {
        return (verb == "*" || request.verb == verb) && under(path_prefix, request.path);
      }));
}

void FakeApiServer::record(FakeRequest request) { requests_.push_back(std::move(request)); }

bool FakeApiServer::Rule::matches(std::string_view call_verb, std::string_view path) const {
  return (verb == "*" || verb == call_verb) && under(prefix, path);
}

asio::awaitable<Result<void>> FakeApiServer::admit(const std::string& verb,
                                                   const std::string& path) {
  // Hooks run once; taken out first, since a hook may script more.
  std::vector<std::function<void()>> due;
  for (auto it = hooks_.begin(); it != hooks_.end();) {
    if (it->rule.matches(verb, path)) {
      due.push_back(std::move(it->run));
      it = hooks_.erase(it);
    } else {
      ++it;
    }
  }
  for (const std::function<void()>& hook : due) hook();
  NMO_CO_TRY(co_await delay(verb, path));
  if (shut_down_) co_return cancelled();
  co_return check_faults(verb, path);
}

asio::awaitable<Result<void>> FakeApiServer::delay(const std::string& verb,
                                                   const std::string& path) {
  std::chrono::milliseconds latency{0};
  for (const Latency& rule : latencies_) {
    if (rule.rule.matches(verb, path)) latency = std::max(latency, rule.latency);
  }
  const bool held = std::any_of(holds_.begin(), holds_.end(),
                                [&](const Rule& rule) { return rule.matches(verb, path); });
  if (!held && latency.count() == 0) co_return Result<void>();
  auto waiter = std::make_shared<Waiter>(executor_);
  waiter->held = held;
  if (held) {
    waiter->timer.expires_at(asio::steady_timer::time_point::max());
  } else {
    waiter->timer.expires_after(latency);
  }
  waiters_.push_back(waiter);
  boost::system::error_code ec;
  co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  std::erase(waiters_, waiter);
  if (shut_down_) co_return cancelled();
  if (ec && !waiter->released) co_return Error(ErrorCode::kCancelled, "the call was cancelled");
  co_return Result<void>();
}

Result<void> FakeApiServer::check_faults(const std::string& verb, const std::string& path) {
  for (const Rule& rule : forbidden_) {
    if (!rule.matches(verb, path)) continue;
    Result<FakePath> at = parse_path(path);
    return api_error(403, "Forbidden", forbidden_message(options_.user, verb, path),
                     at ? details_of(*at) : json::object{});
  }
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (!it->rule.matches(verb, path)) continue;
    Error error = it->error;
    if (it->remaining > 0 && --it->remaining == 0) failures_.erase(it);
    return error;
  }
  return {};
}

// ---- storage ----------------------------------------------------------------------------------

json::value FakeApiServer::commit(const std::string& key, const std::string& collection,
                                  const std::string& ns, json::value object, WatchEventType type,
                                  json::value before) {
  metadata(object)["resourceVersion"] = std::to_string(++version_);
  objects_[key] = Stored{object, ns};
  publish({version_, type, collection, ns, object, std::move(before)});
  return object;
}

void FakeApiServer::remove_stored(const std::string& key, const std::string& collection) {
  const auto found = objects_.find(key);
  if (found == objects_.end()) return;
  Stored gone = std::move(found->second);
  objects_.erase(found);
  json::value last = gone.object;
  metadata(last)["resourceVersion"] = std::to_string(++version_);
  publish({version_, WatchEventType::kDeleted, collection, gone.ns, std::move(last),
           std::move(gone.object)});
}

void FakeApiServer::publish(HistoryEvent event) {
  std::erase_if(watches_, [](const std::shared_ptr<FakeWatchState>& w) { return !w->open; });
  for (const std::shared_ptr<FakeWatchState>& watch : watches_) {
    if (watch->filter.collection != event.collection) continue;
    if (!watch->filter.ns.empty() && watch->filter.ns != event.ns) continue;
    std::optional<WatchEvent> seen =
        seen_by(watch->filter, event.type, event.object, event.before, event.version);
    if (seen) watch->push(event_item(std::move(*seen)));
  }
  history_.push_back(std::move(event));
  while (history_.size() > options_.history_limit) {
    compacted_through_ = history_.front().version;
    history_.pop_front();
  }
}

json::value FakeApiServer::put(json::value object) {
  NMO_CHECK(object.is_object(), "FakeApiServer::put: not a JSON object");
  const json::value* api_version = field(object, "apiVersion");
  const json::value* kind = field(object, "kind");
  NMO_CHECK(
      api_version != nullptr && api_version->is_string() && kind != nullptr && kind->is_string(),
      "FakeApiServer::put: the object needs apiVersion and kind: " + json::serialize(object));
  const std::string_view version = api_version->get_string();
  const std::string root = version.find('/') == std::string_view::npos
                               ? "/api/" + std::string(version)
                               : "/apis/" + std::string(version);
  const std::string ns = meta_string(object, "namespace");
  const std::string path =
      root + (ns.empty() ? "" : "/namespaces/" + ns) + "/" + resource_of(kind->get_string());
  return put(path, std::move(object));
}

json::value FakeApiServer::put(std::string_view collection_path, json::value object) {
  Result<FakePath> parsed = parse_path(collection_path);
  NMO_CHECK(parsed && parsed->name.empty(),
            "FakeApiServer::put: not a collection path: " + std::string(collection_path));
  NMO_CHECK(object.is_object(), "FakeApiServer::put: not a JSON object");
  FakePath at = std::move(*parsed);
  at.name = meta_string(object, "name");
  NMO_CHECK(!at.name.empty(), "FakeApiServer::put: the object has no metadata.name");
  if (at.ns.empty()) at.ns = meta_string(object, "namespace");
  json::object& members = object.as_object();
  if (!members.contains("apiVersion")) members["apiVersion"] = at.api_version();
  if (!members.contains("kind")) members["kind"] = kind_of(at.resource);
  if (!at.ns.empty()) metadata(object)["namespace"] = at.ns;
  const std::string key = at.key();
  const auto found = objects_.find(key);
  if (found == objects_.end()) {
    json::object& meta = metadata(object);
    if (meta_string(object, "uid").empty()) meta["uid"] = next_uid();
    if (!has_meta(object, "creationTimestamp")) {
      meta["creationTimestamp"] = format_time(wall_now());
    }
    if (!has_meta(object, "generation")) meta["generation"] = 1;
    return commit(key, at.collection(), at.ns, std::move(object), WatchEventType::kAdded,
                  json::value());
  }
  const json::value& old = found->second.object;
  copy_meta(old, object, "uid");
  copy_meta(old, object, "creationTimestamp");
  copy_meta(old, object, "generation");
  bump_generation(old, object);
  metadata(object)["resourceVersion"] = meta_string(old, "resourceVersion");
  if (object == old) return old;
  json::value before = old;
  return commit(key, at.collection(), at.ns, std::move(object), WatchEventType::kModified,
                std::move(before));
}

bool FakeApiServer::erase(std::string_view path) {
  Result<FakePath> at = parse_path(path);
  if (!at || !objects_.contains(at->key())) return false;
  remove_stored(at->key(), at->collection());
  return true;
}

std::optional<json::value> FakeApiServer::object(std::string_view path) const {
  Result<FakePath> at = parse_path(path);
  if (!at) return std::nullopt;
  const auto found = objects_.find(at->key());
  if (found == objects_.end()) return std::nullopt;
  return found->second.object;
}

std::vector<json::value> FakeApiServer::objects(std::string_view collection_path) const {
  std::vector<json::value> out;
  Result<FakePath> at = parse_path(collection_path);
  if (!at) return out;
  const std::string prefix = at->list_prefix();
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.starts_with(prefix); ++it) {
    out.push_back(it->second.object);
  }
  return out;
}

// ---- watches ----------------------------------------------------------------------------------

std::size_t FakeApiServer::open_watches() const { return open_watches(""); }

std::size_t FakeApiServer::open_watches(std::string_view path_prefix) const {
  return static_cast<std::size_t>(std::count_if(
      watches_.begin(), watches_.end(),
      [&](const auto& watch) { return watch->open && under(path_prefix, watch->path); }));
}

void FakeApiServer::end_all(const std::function<void(FakeWatchState&)>& how) {
  for (const std::shared_ptr<FakeWatchState>& watch : watches_) {
    if (!watch->open) continue;
    how(*watch);
    watch->open = false;
  }
  watches_.clear();
}

void FakeApiServer::end_watches() {
  end_all([](FakeWatchState& watch) {
    QueuedItem end;
    end.kind = QueuedItem::Kind::kEnd;
    watch.push(std::move(end));
  });
}

void FakeApiServer::expire_watches() {
  const std::string version = resource_version();
  end_all([&](FakeWatchState& watch) {
    watch.push(error_item(expired("too old resource version: " + version + " (" + version + ")")));
  });
}

void FakeApiServer::break_watches(Error error) {
  end_all([&](FakeWatchState& watch) { watch.push(error_item(error)); });
}

void FakeApiServer::send_bookmarks() {
  for (const std::shared_ptr<FakeWatchState>& watch : watches_) {
    if (!watch->open || !watch->allow_bookmarks) continue;
    json::value bookmark{{"kind", watch->kind},
                         {"apiVersion", watch->api_version},
                         {"metadata", {{"resourceVersion", resource_version()}}}};
    watch->push(event_item(WatchEvent{WatchEventType::kBookmark, std::move(bookmark)}));
  }
}

void FakeApiServer::compact() {
  compacted_through_ = version_;
  history_.clear();
  snapshots_.clear();
}

void FakeApiServer::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  end_all([](FakeWatchState& watch) { watch.push(error_item(cancelled())); });
  for (const std::shared_ptr<Waiter>& waiter : waiters_) waiter->timer.cancel();
}

// ---- the calls --------------------------------------------------------------------------------

asio::awaitable<Result<json::value>> FakeApiServer::get_json(std::string path) {
  if (shut_down_) co_return cancelled();
  if (std::string_view root = without_query(path); root.starts_with("/apis/")) {
    const std::string group_version(root.substr(std::string_view("/apis/").size()));
    if (served_group_versions_.contains(group_version)) {
      record({"get", path, nullptr, std::nullopt, std::nullopt, std::nullopt});
      const std::string verb = "get";
      const std::string bare(root);
      asio::awaitable<Result<void>> admitted = admit(verb, bare);
      NMO_CO_TRY(co_await std::move(admitted));
      co_return json::value{{"kind", "APIResourceList"},
                            {"apiVersion", "v1"},
                            {"groupVersion", group_version},
                            {"resources", json::array{}}};
    }
  }
  Result<FakePath> at = parse_path(path);
  const std::string verb = at && at->name.empty() ? "list" : "get";
  std::optional<ListOptions> listed;
  if (verb == "list") listed = list_options_of(path);
  record({verb, path, nullptr, std::nullopt, listed, std::nullopt});
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  if (verb == "get") co_return do_get(path);
  Result<std::string> body = do_list(path, list_options_of(path));
  if (!body) co_return body.error();
  co_return json::parse(*body);
}

Result<json::value> FakeApiServer::do_get(const std::string& path) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (!at.subresource.empty() && (at.subresource != "status" || !has_status(at.resource))) {
    return no_such_resource();
  }
  const auto found = objects_.find(at.key());
  if (found == objects_.end()) return not_found(at);
  return found->second.object;
}

asio::awaitable<Result<std::string>> FakeApiServer::list_raw(std::string path,
                                                             ListOptions options) {
  if (shut_down_) co_return cancelled();
  record({"list", path, nullptr, std::nullopt, options, std::nullopt});
  const std::string verb = "list";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  take_path_selectors(path, options);
  co_return do_list(path, options);
}

Result<std::string> FakeApiServer::do_list(const std::string& path, const ListOptions& options) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (!at.name.empty()) return method_not_allowed();
  Snapshot page;
  if (!options.continue_token.empty()) {
    const auto found = snapshots_.find(options.continue_token);
    if (found == snapshots_.end()) {
      return expired(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter.");
    }
    page = found->second;
  } else {
    NMO_TRY_ASSIGN(const Filter filter,
                   make_filter(at, options.label_selector, options.field_selector));
    auto items = std::make_shared<std::vector<json::value>>();
    const std::string prefix = at.list_prefix();
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.starts_with(prefix); ++it) {
      if (selects(filter, it->second.object)) items->push_back(it->second.object);
    }
    page = {resource_version(), std::move(items), 0,
            !options.label_selector.empty() || !options.field_selector.empty()};
  }
  const std::size_t left = page.items->size() - page.offset;
  const std::size_t take =
      options.limit > 0 ? std::min(left, static_cast<std::size_t>(options.limit)) : left;
  json::array items;
  for (std::size_t i = page.offset; i < page.offset + take; ++i) items.push_back((*page.items)[i]);
  json::object meta{{"resourceVersion", page.resource_version}};
  if (take < left) {
    const std::string token = "fake-continue-" + std::to_string(++snapshot_ids_);
    snapshots_[token] =
        Snapshot{page.resource_version, page.items, page.offset + take, page.selected};
    meta["continue"] = token;
    // As the API server: the count only when no selector makes it unknowable cheaply.
    if (!page.selected) meta["remainingItemCount"] = static_cast<std::int64_t>(left - take);
  }
  const json::object list{{"apiVersion", at.api_version()},
                          {"kind", kind_of(at.resource) + "List"},
                          {"metadata", std::move(meta)},
                          {"items", std::move(items)}};
  return json::serialize(list);
}

asio::awaitable<Result<json::value>> FakeApiServer::create(std::string path, json::value object,
                                                           WriteOptions options) {
  if (shut_down_) co_return cancelled();
  record({"create", path, object, std::nullopt, std::nullopt, std::nullopt});
  const std::string verb = "create";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  for (const auto& [prefix, handler] : create_handlers_) {
    if (under(prefix, path)) co_return handler(object);
  }
  co_return do_create(path, std::move(object), options.dry_run);
}

Result<json::value> FakeApiServer::do_create(const std::string& path, json::value object,
                                             bool dry_run) {
  NMO_TRY_ASSIGN(FakePath at, parse_path(path));
  if (!at.name.empty()) return method_not_allowed();
  if (!object.is_object()) return bad_request("the body of a create must be a JSON object");
  const std::string kind = kind_of(at.resource);
  const std::string body_ns = meta_string(object, "namespace");
  if (!body_ns.empty() && !at.ns.empty() && body_ns != at.ns) {
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  if (at.ns.empty()) at.ns = body_ns;
  at.name = meta_string(object, "name");
  if (at.name.empty()) {
    const std::string generate = meta_string(object, "generateName");
    if (generate.empty()) {
      return invalid(kind, at, "metadata.name", "Required value: name or generateName is required");
    }
    // Five characters of the API server's alphabet (no vowels, no 0/1/3), from a counter.
    static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
    std::uint64_t n = ++uids_;
    at.name = generate;
    for (int i = 0; i < 5; ++i, n /= kAlphabet.size()) at.name += kAlphabet[n % kAlphabet.size()];
  }
  if (!meta_string(object, "resourceVersion").empty()) {
    return api_error(500, "InternalError",
                     "Internal error occurred: resourceVersion should not be set on objects to "
                     "be created");
  }
  if (objects_.contains(at.key())) {
    return api_error(409, "AlreadyExists",
                     at.group_resource() + " \"" + at.name + "\" already exists", details_of(at));
  }
  json::object& members = object.as_object();
  if (!members.contains("apiVersion")) members["apiVersion"] = at.api_version();
  if (!members.contains("kind")) members["kind"] = kind;
  if (has_status(at.resource) && at.resource != "nodes") members.erase("status");
  json::object& meta = metadata(object);
  meta["name"] = at.name;
  if (!at.ns.empty()) meta["namespace"] = at.ns;
  meta["uid"] = next_uid();
  meta["creationTimestamp"] = format_time(wall_now());
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (dry_run) return object;
  return commit(at.key(), at.collection(), at.ns, std::move(object), WatchEventType::kAdded,
                json::value());
}

asio::awaitable<Result<json::value>> FakeApiServer::update(std::string path, json::value object,
                                                           WriteOptions options) {
  if (shut_down_) co_return cancelled();
  record({"update", path, object, std::nullopt, std::nullopt, std::nullopt});
  const std::string verb = "update";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  co_return do_update(path, std::move(object), options.dry_run);
}

Result<json::value> FakeApiServer::do_update(const std::string& path, json::value object,
                                             bool dry_run) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (at.name.empty()) return method_not_allowed();
  const bool status = at.subresource == "status";
  if ((!at.subresource.empty() && !status) || (status && !has_status(at.resource))) {
    return no_such_resource();
  }
  if (!object.is_object()) return bad_request("the body of an update must be a JSON object");
  const auto found = objects_.find(at.key());
  if (found == objects_.end()) return not_found(at);
  const json::value& old = found->second.object;
  json::value next;
  if (status) {
    // Only .status changes; the body's resourceVersion still guards the write.
    next = old;
    copy_member(object, next, "status");
    metadata(next)["resourceVersion"] = meta_string(object, "resourceVersion");
  } else {
    next = std::move(object);
    if (has_status(at.resource)) copy_member(old, next, "status");
  }
  return write(at, at.key(), std::move(next), dry_run);
}

asio::awaitable<Result<json::value>> FakeApiServer::patch(std::string path, PatchType type,
                                                          std::string body, WriteOptions options) {
  if (shut_down_) co_return cancelled();
  boost::system::error_code ec;
  json::value document = json::parse(body, ec);
  if (ec) document = json::string(body);
  record({"patch", path, std::move(document), type, std::nullopt, std::nullopt});
  const std::string verb = "patch";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  co_return do_patch(path, type, body, options.dry_run);
}

Result<json::value> FakeApiServer::do_patch(const std::string& path, PatchType type,
                                            const std::string& body, bool dry_run) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (at.name.empty()) return method_not_allowed();
  const bool status = at.subresource == "status";
  if ((!at.subresource.empty() && !status) || (status && !has_status(at.resource))) {
    return no_such_resource();
  }
  if (type == PatchType::kApply) {
    return Error(ErrorCode::kInternal, "FakeApiServer does not implement server-side apply");
  }
  if (type == PatchType::kStrategicMerge && !is_builtin_group(at.group)) {
    return api_error(415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json-patch+json, application/merge-patch+json, "
                     "application/apply-patch+yaml");
  }
  boost::system::error_code ec;
  const json::value patch = json::parse(body, ec);
  if (ec) return bad_request("error decoding patch: " + ec.message());
  const auto found = objects_.find(at.key());
  if (found == objects_.end()) return not_found(at);
  const json::value& old = found->second.object;
  Result<json::value> patched = Error();
  switch (type) {
    case PatchType::kMergePatch:
      patched = apply_merge_patch(old, patch);
      break;
    case PatchType::kJsonPatch:
      patched = apply_json_patch(old, patch);
      break;
    default:
      patched = apply_strategic_merge_patch(old, patch);
      break;
  }
  if (!patched) {
    if (patched.error().code == ErrorCode::kInvalid) {
      return unprocessable_patch(patched.error().message);
    }
    return bad_request(patched.error().message);
  }
  if (!patched->is_object()) return bad_request("the patched object is not a JSON object");
  json::value next;
  if (status) {
    next = old;
    copy_member(*patched, next, "status");
    metadata(next)["resourceVersion"] = meta_string(*patched, "resourceVersion");
  } else {
    next = std::move(*patched);
    if (has_status(at.resource)) copy_member(old, next, "status");
  }
  return write(at, at.key(), std::move(next), dry_run);
}

Result<json::value> FakeApiServer::write(const FakePath& at, const std::string& key,
                                         json::value next, bool dry_run) {
  const json::value old = objects_.at(key).object;
  const std::string name = meta_string(next, "name");
  if (!name.empty() && name != at.name) {
    return bad_request("the name of the object (" + name +
                       ") does not match the name on the URL (" + at.name + ")");
  }
  const std::string ns = meta_string(next, "namespace");
  if (!ns.empty() && ns != meta_string(old, "namespace")) {
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  const std::string uid = meta_string(next, "uid");
  const std::string old_uid = meta_string(old, "uid");
  if (!uid.empty() && uid != old_uid) {
    return conflict(at, "Precondition failed: UID in precondition: " + uid +
                            ", UID in object meta: " + old_uid);
  }
  const std::string version = meta_string(next, "resourceVersion");
  if (!version.empty() && version != meta_string(old, "resourceVersion")) return stale(at);

  // System fields are the server's.
  copy_member(old, next, "apiVersion");
  copy_member(old, next, "kind");
  for (const std::string_view key_name :
       {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
        "deletionGracePeriodSeconds", "generation", "resourceVersion"}) {
    copy_meta(old, next, key_name);
  }
  const bool deleting = has_meta(old, "deletionTimestamp");
  const std::vector<std::string> now_finalizers = finalizers(next);
  if (deleting) {
    const std::vector<std::string> had = finalizers(old);
    std::vector<std::string> added;
    for (const std::string& f : now_finalizers) {
      if (std::find(had.begin(), had.end(), f) == had.end()) added.push_back("\"" + f + "\"");
    }
    if (!added.empty()) {
      return invalid(std::string(meta_string(old, "kind").empty() ? kind_of(at.resource)
                                                                  : meta_string(old, "kind")),
                     at, "metadata.finalizers",
                     "Forbidden: no new finalizers can be added if the object is being deleted, "
                     "found new finalizers []string{" +
                         join(added, ", ") + "}");
    }
  }
  bump_generation(old, next);
  if (next == old) return old;  // nothing changed: no write, no event
  if (dry_run) return next;
  const std::string collection = at.collection();
  const std::string object_ns = objects_.at(key).ns;
  if (deleting && now_finalizers.empty()) {
    objects_.at(key).object = next;
    remove_stored(key, collection);
    metadata(next)["resourceVersion"] = resource_version();
    return next;
  }
  return commit(key, collection, object_ns, std::move(next), WatchEventType::kModified, old);
}

asio::awaitable<Result<void>> FakeApiServer::remove(std::string path, DeleteOptions options) {
  if (shut_down_) co_return cancelled();
  boost::system::error_code ec;
  json::value body = json::parse(options.body(), ec);
  record({"delete", path, std::move(body), std::nullopt, std::nullopt, std::nullopt});
  const std::string verb = "delete";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  co_return do_remove(path, options);
}

Result<void> FakeApiServer::do_remove(const std::string& path, const DeleteOptions& options) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (at.name.empty() || !at.subresource.empty()) return method_not_allowed();
  if (!objects_.contains(at.key())) return not_found(at);
  return delete_object(at, at.key(), options.precondition_uid,
                       options.precondition_resource_version);
}

Result<void> FakeApiServer::delete_object(const FakePath& at, const std::string& key,
                                          const std::string& precondition_uid,
                                          const std::string& precondition_version) {
  const json::value& old = objects_.at(key).object;
  const std::string uid = meta_string(old, "uid");
  if (!precondition_uid.empty() && precondition_uid != uid) {
    return conflict(at, "Precondition failed: UID in precondition: " + precondition_uid +
                            ", UID in object meta: " + uid);
  }
  const std::string version = meta_string(old, "resourceVersion");
  if (!precondition_version.empty() && precondition_version != version) {
    return conflict(at, "Precondition failed: ResourceVersion in precondition: " +
                            precondition_version + ", ResourceVersion in object meta: " + version);
  }
  if (finalizers(old).empty()) {
    remove_stored(key, at.collection());
    return {};
  }
  if (has_meta(old, "deletionTimestamp")) return {};  // already being deleted
  json::value next = old;
  metadata(next)["deletionTimestamp"] = format_time(wall_now());
  metadata(next)["deletionGracePeriodSeconds"] = 0;
  const std::string ns = objects_.at(key).ns;
  commit(key, at.collection(), ns, std::move(next), WatchEventType::kModified, old);
  return {};
}

asio::awaitable<Result<EvictionResult>> FakeApiServer::evict(std::string namespace_,
                                                             std::string name,
                                                             EvictOptions options) {
  if (shut_down_) co_return cancelled();
  if (options.fence) NMO_CO_TRY(options.fence());  // checked before sending, as the client does
  const std::string path = "/api/v1/namespaces/" + namespace_ + "/pods/" + name + "/eviction";
  json::object eviction{{"apiVersion", "policy/v1"},
                        {"kind", "Eviction"},
                        {"metadata", {{"name", name}, {"namespace", namespace_}}}};
  json::object delete_options;
  if (options.grace_period_seconds) {
    delete_options["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  if (!options.precondition_uid.empty()) {
    delete_options["preconditions"] = {{"uid", options.precondition_uid}};
  }
  if (options.dry_run) delete_options["dryRun"] = json::array{"All"};
  if (!delete_options.empty()) eviction["deleteOptions"] = std::move(delete_options);
  record({"evict", path, std::move(eviction), std::nullopt, std::nullopt, std::nullopt});

  // An answer with an HTTP status is an EvictionResult; no answer at all is an Error.
  const auto answer = [](Error error) -> Result<EvictionResult> {
    if (error.http_status == 0) return error;
    EvictionResult result;
    result.outcome = classify_eviction_error(error);
    result.status = std::move(error);
    return result;
  };
  const std::string verb = "evict";
  asio::awaitable<Result<void>> admitting = admit(verb, path);
  Result<void> admitted = co_await std::move(admitting);
  if (!admitted) co_return answer(std::move(admitted).error());
  FakePath at{"", "v1", namespace_, "pods", name, ""};
  if (!objects_.contains(at.key())) co_return answer(not_found(at));
  if (options.dry_run) {
    if (!options.precondition_uid.empty() &&
        options.precondition_uid != meta_string(objects_.at(at.key()).object, "uid")) {
      co_return answer(
          conflict(at, "Precondition failed: UID in precondition: " + options.precondition_uid));
    }
    co_return EvictionResult{};
  }
  Result<void> deleted = delete_object(at, at.key(), options.precondition_uid, "");
  if (!deleted) co_return answer(std::move(deleted).error());
  co_return EvictionResult{};
}

asio::awaitable<Result<std::unique_ptr<WatchStream>>> FakeApiServer::watch(std::string path,
                                                                           WatchOptions options) {
  if (shut_down_) co_return cancelled();
  record({"watch", path, nullptr, std::nullopt, std::nullopt, options});
  const std::string verb = "watch";
  const std::string bare(without_query(path));
  asio::awaitable<Result<void>> admitted = admit(verb, bare);
  NMO_CO_TRY(co_await std::move(admitted));
  take_path_selectors(path, options);
  co_return do_watch(path, options);
}

Result<std::unique_ptr<WatchStream>> FakeApiServer::do_watch(const std::string& path,
                                                             const WatchOptions& options) {
  NMO_TRY_ASSIGN(const FakePath at, parse_path(path));
  if (!at.name.empty()) return method_not_allowed();
  auto state = std::make_shared<FakeWatchState>(executor_);
  state->path = std::string(without_query(path));
  state->kind = kind_of(at.resource);
  state->api_version = at.api_version();
  NMO_TRY_ASSIGN(state->filter, make_filter(at, options.label_selector, options.field_selector));
  state->allow_bookmarks = options.allow_bookmarks;
  if (options.timeout.count() > 0) state->deadline = Clock::now() + options.timeout;
  state->idle_timeout = options.idle_timeout;

  const std::string& from = options.resource_version;
  if (from.empty() || from == "0") {
    // "Start now": the current objects as ADDED, then what follows.
    const std::string prefix = at.list_prefix();
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.starts_with(prefix); ++it) {
      if (selects(state->filter, it->second.object)) {
        state->queue.push_back(event_item(WatchEvent{WatchEventType::kAdded, it->second.object}));
      }
    }
  } else {
    std::int64_t version = 0;
    const auto [end, ec] = std::from_chars(from.data(), from.data() + from.size(), version);
    if (ec != std::errc() || end != from.data() + from.size()) {
      return api_error(400, "BadRequest", "invalid resource version \"" + from + "\"");
    }
    if (version < compacted_through_) {
      // The watch cache's answer: an ERROR event, then the end of the stream.
      const std::string oldest = std::to_string(compacted_through_ + 1);
      const WatchEvent gone{
          WatchEventType::kError,
          json::object{{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"status", "Failure"},
                       {"message", "too old resource version: " + from + " (" + oldest + ")"},
                       {"reason", "Expired"},
                       {"code", 410}}};
      state->push(error_item(error_from_watch_error(gone)));
      state->open = false;
      return std::unique_ptr<WatchStream>(std::make_unique<FakeWatch>(std::move(state)));
    }
    for (const HistoryEvent& event : history_) {
      if (event.version <= version || event.collection != state->filter.collection) continue;
      if (!at.ns.empty() && event.ns != at.ns) continue;
      std::optional<WatchEvent> seen =
          seen_by(state->filter, event.type, event.object, event.before, event.version);
      if (seen) state->queue.push_back(event_item(std::move(*seen)));
    }
  }
  watches_.push_back(state);
  return std::unique_ptr<WatchStream>(std::make_unique<FakeWatch>(std::move(state)));
}

}  // namespace nmo::kube::testing
