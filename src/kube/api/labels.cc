#include "kube/api/labels.h"

#include <algorithm>
#include <iterator>

namespace nmo::kube {
namespace {

bool key_less(const Labels::Entry& a, const Labels::Entry& b) { return a.first < b.first; }

}  // namespace

Labels::Labels(std::initializer_list<Entry> entries)
    : Labels(std::vector<Entry>(entries.begin(), entries.end())) {}

Labels::Labels(std::vector<Entry> entries) : entries_(std::move(entries)) {
  // Go's encoding/json writes map keys sorted, so objects from the API server take the fast path.
  const auto strictly_ascending = [](const Entry& a, const Entry& b) { return a.first >= b.first; };
  if (std::adjacent_find(entries_.begin(), entries_.end(), strictly_ascending) == entries_.end()) {
    return;
  }
  std::stable_sort(entries_.begin(), entries_.end(), key_less);
  // Keep the last entry of each run of equal keys.
  auto out = entries_.begin();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const auto next = std::next(it);
    if (next != entries_.end() && next->first == it->first) {
      continue;
    }
    if (out != it) {
      *out = std::move(*it);
    }
    ++out;
  }
  entries_.erase(out, entries_.end());
}

const std::string* Labels::find(std::string_view key) const noexcept {
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), key,
      [](const Entry& entry, std::string_view wanted) { return entry.first < wanted; });
  if (it == entries_.end() || it->first != key) {
    return nullptr;
  }
  return &it->second;
}

void Labels::set(std::string key, std::string value) {
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), key,
      [](const Entry& entry, const std::string& wanted) { return entry.first < wanted; });
  if (it != entries_.end() && it->first == key) {
    it->second = std::move(value);
    return;
  }
  entries_.emplace(it, std::move(key), std::move(value));
}

}  // namespace nmo::kube
