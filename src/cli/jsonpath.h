// kubectl's JSONPath templates for `-o jsonpath=...`: literal text with actions in braces.
//
// Supported, as kubectl reads them (k8s.io/client-go/util/jsonpath, documented at
// kubernetes.io/docs/reference/kubectl/jsonpath/):
//   {.metadata.name}  {['metadata']['name']}       fields, `@` for the current object
//   {.items[0]}  {.items[-1]}  {.items[1:3]}  {.items[*]}        indexes, slices, every element
//   {.items[?(@.spec.nodeName=="node-1")]}         filters with == or != against a string or
//                                                  number literal, or with a bare path (exists)
//   {range .items[*]}{.metadata.name}{"\n"}{end}  loops, nested as needed
//   {"text"}                                       string literals (\n, \t, \", \\ escapes)
// Several results of one action are joined by a space; strings print as they are, other values
// as compact JSON. A field that is missing prints nothing (kubectl's default,
// --allow-missing-template-keys=true). Not supported: recursive descent (`..`), unions
// (`[0,1]`), and the comparison operators other than == and !=.
//
// Threading: pure functions; a parsed JsonPath is immutable and may be shared between threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"

namespace nmo::cli {

class JsonPath {
 public:
  // Parses `text`. Errors are kInvalid, e.g. `unclosed action at byte 0` or `unexpected "}"`.
  [[nodiscard]] static Result<JsonPath> parse(std::string_view text);

  // The template's output for `root`.
  [[nodiscard]] std::string render(const boost::json::value& root) const;

  struct Node;  // one piece of the parsed template (defined in jsonpath.cc)

 private:
  explicit JsonPath(std::vector<std::shared_ptr<const Node>> nodes) : nodes_(std::move(nodes)) {}
  std::vector<std::shared_ptr<const Node>> nodes_;
};

}  // namespace nmo::cli
