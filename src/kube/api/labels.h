// Labels: the string-to-string maps of metadata.labels and metadata.annotations.
//
// A sorted vector of pairs rather than a map: cached projections hold one per object, most hold
// a handful of entries, and a vector costs one allocation (24 bytes inline) where std::map costs
// one node per entry. Lookups are binary searches.
//
// Threading: a plain value type. Distinct objects may be used from different threads; one object
// may be read concurrently but not written concurrently.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nmo::kube {

// An immutable-by-convention map from label key to value, sorted by key, keys unique.
class Labels {
 public:
  // One key/value pair.
  using Entry = std::pair<std::string, std::string>;
  // Iterates the entries in ascending key order.
  using const_iterator =  // NOLINT(readability-identifier-naming): std container vocabulary
      std::vector<Entry>::const_iterator;

  // No entries.
  Labels() = default;
  // The given entries in any order; when a key repeats, the later entry wins.
  Labels(std::initializer_list<Entry> entries);
  // The same, taking the vector over (no copy when `entries` is already sorted and unique).
  explicit Labels(std::vector<Entry> entries);

  // The value for `key`, or nullptr when the key is absent. The pointer is valid until this
  // object is modified or destroyed.
  [[nodiscard]] const std::string* find(std::string_view key) const noexcept;
  // True when `key` is present (with any value, including "").
  [[nodiscard]] bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  // Sets `key` to `value`, replacing an existing value. O(size) for a new key.
  void set(std::string key, std::string value);

  // Number of entries.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  // True when there are no entries.
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  // Entries in ascending key order.
  [[nodiscard]] const_iterator begin() const noexcept { return entries_.begin(); }
  // End of the entries.
  [[nodiscard]] const_iterator end() const noexcept { return entries_.end(); }

  // Equal when both hold the same keys with the same values.
  friend bool operator==(const Labels&, const Labels&) = default;

 private:
  std::vector<Entry> entries_;  // sorted by key, keys unique
};

}  // namespace nmo::kube
