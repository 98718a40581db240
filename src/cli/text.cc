#include "cli/text.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

namespace nmo::cli {

std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows, bool with_header) {
  std::vector<std::size_t> widths(header.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  if (with_header) measure(header);
  for (const auto& row : rows) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : std::string();
      line += cell;
      if (i + 1 < widths.size()) line.append(widths[i] - cell.size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  };
  if (with_header) emit(header);
  for (const auto& row : rows) emit(row);
  return out;
}

std::string format_age(std::chrono::seconds age) {
  const long long s = std::max<long long>(0, age.count());
  const long long m = s / 60;
  const long long h = s / 3600;
  const long long d = h / 24;
  auto str = [](long long v) { return std::to_string(v); };
  if (s < 120) return str(s) + "s";
  if (m < 10) return s % 60 == 0 ? str(m) + "m" : str(m) + "m" + str(s % 60) + "s";
  if (h < 3) return str(m) + "m";
  if (h < 8) return m % 60 == 0 ? str(h) + "h" : str(h) + "h" + str(m % 60) + "m";
  if (h < 48) return str(h) + "h";
  if (d < 8) return h % 24 == 0 ? str(d) + "d" : str(d) + "d" + str(h % 24) + "h";
  if (d < 365LL * 2) return str(d) + "d";
  return str(d / 365) + "y";
}

std::string format_elapsed(std::chrono::seconds elapsed) {
  const long long s = std::max<long long>(0, elapsed.count());
  auto two = [](long long v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + two(s / 60 % 60) + "m" + two(s % 60) + "s";
}

std::string cut_to_columns(std::string_view line, std::size_t columns) {
  std::size_t characters = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    // A UTF-8 continuation byte (10xxxxxx) belongs to the character before it.
    if ((static_cast<unsigned char>(line[i]) & 0xC0U) == 0x80U) continue;
    if (characters == columns) return std::string(line.substr(0, i));
    ++characters;
  }
  return std::string(line);
}

namespace {

// True for a string that a YAML 1.1 reader (kubectl's included) would take for something else:
// a boolean, null, or a number.
bool needs_quotes(std::string_view text) {
  if (text.empty()) return true;
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view word : {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"}) {
    if (lower == word) return true;
  }
  const bool numeric = std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '+' ||
           c == 'e' || c == 'E';
  });
  return numeric;
}

void emit_yaml(YAML::Emitter& out, const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::object: {
      const auto& object = value.get_object();
      if (object.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : object) {
        out << YAML::Key << std::string(key) << YAML::Value;
        emit_yaml(out, item);
      }
      out << YAML::EndMap;
      return;
    }
    case boost::json::kind::array: {
      const auto& array = value.get_array();
      if (array.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : array) emit_yaml(out, item);
      out << YAML::EndSeq;
      return;
    }
    case boost::json::kind::string: {
      const std::string text(value.get_string());
      if (needs_quotes(text)) out << YAML::DoubleQuoted;
      out << text;
      return;
    }
    case boost::json::kind::int64:
      out << value.get_int64();
      return;
    case boost::json::kind::uint64:
      out << value.get_uint64();
      return;
    case boost::json::kind::double_:
      out << value.get_double();
      return;
    case boost::json::kind::bool_:
      out << value.get_bool();
      return;
    case boost::json::kind::null:
      out << YAML::Null;
      return;
  }
}

void pretty(std::string& out, const boost::json::value& value, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  const std::string inner(static_cast<std::size_t>(indent + 1) * 2, ' ');
  if (value.is_object() && !value.get_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& [key, item] : value.get_object()) {
      if (!first) out += ",\n";
      first = false;
      out += inner + boost::json::serialize(boost::json::value(key)) + ": ";
      pretty(out, item, indent + 1);
    }
    out += "\n" + pad + "}";
    return;
  }
  if (value.is_array() && !value.get_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& item : value.get_array()) {
      if (!first) out += ",\n";
      first = false;
      out += inner;
      pretty(out, item, indent + 1);
    }
    out += "\n" + pad + "]";
    return;
  }
  out += boost::json::serialize(value);
}

}  // namespace

std::string to_yaml(const boost::json::value& value) {
  YAML::Emitter out;
  out.SetBoolFormat(YAML::TrueFalseBool);
  emit_yaml(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string to_pretty_json(const boost::json::value& value) {
  std::string out;
  pretty(out, value, 0);
  out += '\n';
  return out;
}

}  // namespace nmo::cli
