#include "cli/jsonpath.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <utility>
#include <variant>

#include <boost/json.hpp>

#include "base/strings.h"

namespace nmo::cli {
namespace {

namespace json = boost::json;
using Values = std::vector<const json::value*>;

Error invalid(std::string message) { return Error(ErrorCode::kInvalid, std::move(message)); }

struct Segment;

// A path: from the root (`$`) or from the current object (`@`, or a leading `.` / `[`).
struct Path {
  bool from_root = false;
  std::vector<Segment> segments;
};

struct FieldSegment {
  std::string name;
};
struct AllSegment {};
struct IndexSegment {
  std::int64_t index = 0;
};
struct SliceSegment {
  std::optional<std::int64_t> begin;
  std::optional<std::int64_t> end;
};
struct FilterSegment {
  std::shared_ptr<const Path> path;  // relative to each element
  std::string op;                    // "==", "!=", or "" (the path exists)
  json::value literal;
};

struct Segment {
  std::variant<FieldSegment, AllSegment, IndexSegment, SliceSegment, FilterSegment> kind;
};

Values evaluate(const Path& path, const json::value& root, const json::value& current);

bool scalar_equal(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) return a.to_number<double>() == b.to_number<double>();
  return a == b;
}

bool keep(const FilterSegment& filter, const json::value& root, const json::value& element) {
  const Values found = evaluate(*filter.path, root, element);
  if (filter.op.empty()) return !found.empty();
  const bool equal = !found.empty() && scalar_equal(*found.front(), filter.literal);
  return filter.op == "==" ? equal : !equal;
}

void apply(const Segment& segment, const json::value& root, const Values& in, Values& out) {
  for (const json::value* value : in) {
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, FieldSegment>) {
            if (const auto* object = value->if_object()) {
              if (const auto* field = object->if_contains(s.name)) out.push_back(field);
            }
          } else if constexpr (std::is_same_v<S, AllSegment>) {
            if (const auto* array = value->if_array()) {
              for (const auto& element : *array) out.push_back(&element);
            } else if (const auto* object = value->if_object()) {
              for (const auto& entry : *object) out.push_back(&entry.value());
            }
          } else if constexpr (std::is_same_v<S, IndexSegment>) {
            if (const auto* array = value->if_array()) {
              const auto size = static_cast<std::int64_t>(array->size());
              const std::int64_t i = s.index < 0 ? size + s.index : s.index;
              if (i >= 0 && i < size) out.push_back(&(*array)[static_cast<std::size_t>(i)]);
            }
          } else if constexpr (std::is_same_v<S, SliceSegment>) {
            if (const auto* array = value->if_array()) {
              const auto size = static_cast<std::int64_t>(array->size());
              auto clamp = [size](std::int64_t i) {
                if (i < 0) i += size;
                return std::max<std::int64_t>(0, std::min(i, size));
              };
              const std::int64_t begin = clamp(s.begin.value_or(0));
              const std::int64_t end = clamp(s.end.value_or(size));
              for (std::int64_t i = begin; i < end; ++i) {
                out.push_back(&(*array)[static_cast<std::size_t>(i)]);
              }
            }
          } else {
            if (const auto* array = value->if_array()) {
              for (const auto& element : *array) {
                if (keep(s, root, element)) out.push_back(&element);
              }
            } else if (keep(s, root, *value)) {
              out.push_back(value);
            }
          }
        },
        segment.kind);
  }
}

Values evaluate(const Path& path, const json::value& root, const json::value& current) {
  Values values{path.from_root ? &root : &current};
  for (const Segment& segment : path.segments) {
    Values next;
    apply(segment, root, values, next);
    values = std::move(next);
  }
  return values;
}

// Reads one path at `text[pos]` up to the end of `text`, which the caller has cut out.
class PathParser {
 public:
  explicit PathParser(std::string_view text) : text_(text) {}

  Result<Path> parse() {
    Path path;
    skip_spaces();
    if (peek() == '$') {
      path.from_root = true;
      ++pos_;
    } else if (peek() == '@') {
      ++pos_;
    }
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '.') {
        ++pos_;
        if (peek() == '.') return invalid("recursive descent (..) is not supported");
        if (pos_ >= text_.size()) break;  // a lone "." is the current object
        std::string name;
        while (pos_ < text_.size() && text_[pos_] != '.' && text_[pos_] != '[' &&
               text_[pos_] != ' ' && text_[pos_] != '=' && text_[pos_] != '!' &&
               text_[pos_] != ')') {
          if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
          name += text_[pos_++];
        }
        if (name == "*") {
          path.segments.push_back({AllSegment{}});
        } else if (!name.empty()) {
          path.segments.push_back({FieldSegment{std::move(name)}});
        }
      } else if (c == '[') {
        NMO_TRY_ASSIGN(Segment segment, bracket());
        path.segments.push_back(std::move(segment));
      } else {
        break;
      }
    }
    return path;
  }

  [[nodiscard]] std::size_t position() const { return pos_; }

 private:
  [[nodiscard]] char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  Result<Segment> bracket() {
    ++pos_;  // '['
    if (peek() == '?') {
      ++pos_;
      if (peek() != '(') return invalid("expected ( after [? in a filter");
      const std::size_t close = text_.find(")]", pos_);
      if (close == std::string_view::npos) return invalid("unclosed filter [?(...)]");
      const std::string_view inside = text_.substr(pos_ + 1, close - pos_ - 1);
      pos_ = close + 2;
      return filter(inside);
    }
    const std::size_t close = text_.find(']', pos_);
    if (close == std::string_view::npos) return invalid("unclosed [");
    const std::string_view inside = text_.substr(pos_, close - pos_);
    pos_ = close + 1;
    if (inside == "*") return Segment{AllSegment{}};
    if (inside.size() >= 2 && (inside.front() == '\'' || inside.front() == '"') &&
        inside.back() == inside.front()) {
      return Segment{FieldSegment{std::string(inside.substr(1, inside.size() - 2))}};
    }
    if (const std::size_t colon = inside.find(':'); colon != std::string_view::npos) {
      SliceSegment slice;
      NMO_TRY_ASSIGN(slice.begin, optional_number(inside.substr(0, colon)));
      NMO_TRY_ASSIGN(slice.end, optional_number(inside.substr(colon + 1)));
      return Segment{slice};
    }
    NMO_TRY_ASSIGN(const std::optional<std::int64_t> index, optional_number(inside));
    if (!index.has_value()) return invalid("empty []");
    return Segment{IndexSegment{*index}};
  }

  static Result<std::optional<std::int64_t>> optional_number(std::string_view text) {
    if (text.empty()) return std::optional<std::int64_t>();
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return invalid("[" + std::string(text) + "]: not an index");
    }
    return std::optional<std::int64_t>(n);
  }

  static Result<Segment> filter(std::string_view inside) {
    FilterSegment filter;
    std::size_t op = inside.find("==");
    if (op == std::string_view::npos) op = inside.find("!=");
    PathParser left(inside.substr(0, op));
    NMO_TRY_ASSIGN(Path path, left.parse());
    filter.path = std::make_shared<const Path>(std::move(path));
    if (op != std::string_view::npos) {
      filter.op = std::string(inside.substr(op, 2));
      const std::string_view literal = trim(inside.substr(op + 2));
      if (literal.size() >= 2 && (literal.front() == '\'' || literal.front() == '"') &&
          literal.back() == literal.front()) {
        filter.literal = json::string(literal.substr(1, literal.size() - 2));
      } else {
        boost::system::error_code ec;
        filter.literal = json::parse(literal, ec);
        if (ec ||
            !(filter.literal.is_number() || filter.literal.is_bool() || filter.literal.is_null())) {
          return invalid("filter literal " + std::string(literal) +
                         " is neither a quoted string nor a number");
        }
      }
    }
    return Segment{std::move(filter)};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// The text of a string literal action, `"..."` with its escapes.
std::string string_literal(std::string_view text) {
  std::string out;
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 2 < text.size()) {
      c = text[++i];
      switch (c) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case 'r':
          c = '\r';
          break;
        default:
          break;
      }
    }
    out += c;
  }
  return out;
}

}  // namespace

struct JsonPath::Node {
  enum class Kind { kText, kPath, kRange };
  Kind kind = Kind::kText;
  std::string text;
  Path path;
  std::vector<std::shared_ptr<const Node>> body;  // kRange
};

namespace {

void render_nodes(const std::vector<std::shared_ptr<const JsonPath::Node>>& nodes,
                  const json::value& root, const json::value& current, std::string& out) {
  for (const auto& node : nodes) {
    switch (node->kind) {
      case JsonPath::Node::Kind::kText:
        out += node->text;
        break;
      case JsonPath::Node::Kind::kPath: {
        bool first = true;
        for (const json::value* value : evaluate(node->path, root, current)) {
          if (!first) out += ' ';
          first = false;
          out += value->is_string() ? std::string(value->get_string()) : json::serialize(*value);
        }
        break;
      }
      case JsonPath::Node::Kind::kRange:
        for (const json::value* value : evaluate(node->path, root, current)) {
          if (const auto* array = value->if_array()) {
            for (const auto& element : *array) render_nodes(node->body, root, element, out);
          } else {
            render_nodes(node->body, root, *value, out);
          }
        }
        break;
    }
  }
}

}  // namespace

Result<JsonPath> JsonPath::parse(std::string_view text) {
  // The open loops: the outermost list first, each range's body after it.
  std::vector<std::vector<std::shared_ptr<const Node>>> stack(1);
  std::vector<Node> ranges;  // the range nodes whose bodies are being read
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find('{', pos);
    if (open != pos) {
      const std::size_t end = open == std::string_view::npos ? text.size() : open;
      if (text.substr(pos, end - pos).find('}') != std::string_view::npos) {
        return invalid("unexpected \"}\" outside an action");
      }
      stack.back().push_back(std::make_shared<const Node>(
          Node{.kind = Node::Kind::kText, .text = std::string(text.substr(pos, end - pos))}));
      pos = end;
      continue;
    }
    // The action's end: the first '}' outside a string literal.
    std::size_t close = open + 1;
    char quote = '\0';
    for (; close < text.size(); ++close) {
      const char c = text[close];
      if (quote != '\0') {
        if (c == '\\') {
          ++close;
        } else if (c == quote) {
          quote = '\0';
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '}') {
        break;
      }
    }
    if (close >= text.size()) return invalid("unclosed action at byte " + std::to_string(open));
    std::string_view action = trim(text.substr(open + 1, close - open - 1));
    pos = close + 1;
    if (action == "end") {
      if (ranges.empty()) return invalid("{end} without {range}");
      Node range = std::move(ranges.back());
      ranges.pop_back();
      range.body = std::move(stack.back());
      stack.pop_back();
      stack.back().push_back(std::make_shared<const Node>(std::move(range)));
      continue;
    }
    if (!action.empty() && action.front() == '"') {
      stack.back().push_back(std::make_shared<const Node>(
          Node{.kind = Node::Kind::kText, .text = string_literal(action)}));
      continue;
    }
    const bool is_range = action.starts_with("range ");
    if (is_range) action.remove_prefix(6);
    PathParser parser(action);
    Result<Path> path = parser.parse();
    if (!path) return invalid("{" + std::string(action) + "}: " + path.error().message);
    if (parser.position() != action.size()) {
      return invalid("{" + std::string(action) + "}: unexpected " +
                     std::string(action.substr(parser.position())));
    }
    if (is_range) {
      ranges.push_back(Node{.kind = Node::Kind::kRange, .path = std::move(*path)});
      stack.emplace_back();
    } else {
      stack.back().push_back(
          std::make_shared<const Node>(Node{.kind = Node::Kind::kPath, .path = std::move(*path)}));
    }
  }
  if (!ranges.empty()) return invalid("{range} without {end}");
  return JsonPath(std::move(stack.front()));
}

std::string JsonPath::render(const json::value& root) const {
  std::string out;
  render_nodes(nodes_, root, root, out);
  return out;
}

}  // namespace nmo::cli
