#include "kube/api/version.h"

#include <charconv>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

// The number at the start of `text` ("27+" -> 27); std::nullopt when it does not start with a
// digit or the number does not fit.
std::optional<int> leading_number(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// Major and minor from a gitVersion "v1.27.16+03a907c"; std::nullopt when it is not of that form.
std::optional<std::pair<int, int>> from_git_version(std::string_view git_version) {
  if (!git_version.starts_with('v')) return std::nullopt;
  git_version.remove_prefix(1);
  const std::size_t dot = git_version.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::optional<int> major = leading_number(git_version.substr(0, dot));
  const std::optional<int> minor = leading_number(git_version.substr(dot + 1));
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

}  // namespace

bool ServerVersion::at_least(int wanted_major, int wanted_minor) const noexcept {
  if (major != wanted_major) return major > wanted_major;
  return minor >= wanted_minor;
}

std::string ServerVersion::minor_version() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

Result<ServerVersion> decode_server_version(const boost::json::value& body) {
  using internal::FieldPath;
  const FieldPath root;
  const boost::json::object* top = body.if_object();
  if (top == nullptr) return internal::type_error(root, "an object", body);
  NMO_TRY_ASSIGN(const std::string major, internal::get_string(*top, "major", root));
  NMO_TRY_ASSIGN(const std::string minor, internal::get_string(*top, "minor", root));
  ServerVersion version;
  NMO_TRY_ASSIGN(version.git_version, internal::get_string(*top, "gitVersion", root));
  const std::optional<int> major_number = leading_number(major);
  const std::optional<int> minor_number = leading_number(minor);
  if (major_number && minor_number) {
    version.major = *major_number;
    version.minor = *minor_number;
    return version;
  }
  if (const auto parsed = from_git_version(version.git_version)) {
    version.major = parsed->first;
    version.minor = parsed->second;
    return version;
  }
  return Error{ErrorCode::kInvalid, "no Kubernetes version in major \"" + major + "\", minor \"" +
                                        minor + "\", gitVersion \"" + version.git_version + "\""};
}

}  // namespace nmo::kube
