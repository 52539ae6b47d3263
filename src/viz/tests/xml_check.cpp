#include "xml_check.h"

#include <cctype>
#include <vector>

namespace qkv::viz::testing {
namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
         c == '.' || static_cast<unsigned char>(c) >= 0x80;
}

// An entity reference starting at s[i] == '&': &name; &#123; or &#x1F;. Returns its
// length, 0 when malformed.
size_t entity(std::string_view s, size_t i) {
  size_t j = i + 1;
  if (j < s.size() && s[j] == '#') {
    ++j;
    const bool hex = j < s.size() && s[j] == 'x';
    if (hex) ++j;
    const size_t start = j;
    while (j < s.size() && (hex ? std::isxdigit(static_cast<unsigned char>(s[j]))
                                : std::isdigit(static_cast<unsigned char>(s[j]))))
      ++j;
    if (j == start) return 0;
  } else {
    const size_t start = j;
    while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
    const std::string_view name = s.substr(start, j - start);
    if (name != "amp" && name != "lt" && name != "gt" && name != "quot" && name != "apos") return 0;
  }
  return j < s.size() && s[j] == ';' ? j + 1 - i : 0;
}

std::string at(const std::string& what, size_t pos) {
  return what + " at byte " + std::to_string(pos);
}

class Checker {
 public:
  Checker(std::string_view doc, bool html) : s_(doc), html_(html) {}

  std::string run() {
    while (i_ < s_.size()) {
      std::string err = s_[i_] == '<' ? markup() : text();
      if (!err.empty()) return err;
    }
    if (!stack_.empty()) return "unclosed <" + stack_.back() + ">";
    if (!seen_root_) return "no element";
    return "";
  }

 private:
  std::string text() {
    if (s_[i_] == '&') {
      const size_t n = entity(s_, i_);
      if (n == 0) return at("bad entity reference", i_);
      i_ += n;
      return "";
    }
    if (stack_.empty() && !std::isspace(static_cast<unsigned char>(s_[i_])))
      return at("text outside the root element", i_);
    ++i_;
    return "";
  }

  std::string skip_past(std::string_view end, const char* what) {
    const size_t e = s_.find(end, i_);
    if (e == std::string_view::npos) return at(std::string("unterminated ") + what, i_);
    i_ = e + end.size();
    return "";
  }

  std::string markup() {
    const std::string_view rest = s_.substr(i_);
    if (rest.starts_with("<!--")) return skip_past("-->", "comment");
    if (rest.starts_with("<?")) return skip_past("?>", "processing instruction");
    if (rest.starts_with("<!DOCTYPE")) {
      if (!html_ || seen_root_) return at("unexpected DOCTYPE", i_);
      return skip_past(">", "DOCTYPE");
    }
    if (rest.starts_with("</")) return close_tag();
    return open_tag();
  }

  std::string read_name(std::string& name) {
    const size_t start = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    if (i_ == start) return at("missing name", start);
    name = std::string(s_.substr(start, i_ - start));
    return "";
  }

  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  std::string close_tag() {
    i_ += 2;
    std::string name;
    if (std::string err = read_name(name); !err.empty()) return err;
    skip_space();
    if (i_ >= s_.size() || s_[i_] != '>') return at("bad closing tag", i_);
    ++i_;
    if (stack_.empty() || stack_.back() != name)
      return at(
          "</" + name + "> closes " + (stack_.empty() ? "nothing" : "<" + stack_.back() + ">"), i_);
    stack_.pop_back();
    return "";
  }

  std::string attribute(std::vector<std::string>& names) {
    std::string name;
    if (std::string err = read_name(name); !err.empty()) return err;
    for (const std::string& n : names)
      if (n == name) return at("duplicate attribute " + name, i_);
    names.push_back(name);
    if (i_ >= s_.size() || s_[i_] != '=') return at("attribute without value", i_);
    ++i_;
    if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return at("unquoted value", i_);
    const char quote = s_[i_++];
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '<') return at("'<' in an attribute value", i_);
      if (s_[i_] == '&') {
        const size_t n = entity(s_, i_);
        if (n == 0) return at("bad entity reference in an attribute", i_);
        i_ += n;
      } else {
        ++i_;
      }
    }
    if (i_ >= s_.size()) return at("unterminated attribute value", i_);
    ++i_;
    return "";
  }

  std::string open_tag() {
    if (stack_.empty() && seen_root_) return at("a second root element", i_);
    ++i_;
    std::string name;
    if (std::string err = read_name(name); !err.empty()) return err;
    std::vector<std::string> names;
    for (;;) {
      const size_t before = i_;
      skip_space();
      if (i_ >= s_.size()) return at("unterminated tag <" + name, i_);
      if (s_[i_] == '>' || s_.substr(i_).starts_with("/>")) break;
      if (i_ == before) return at("no space before an attribute", i_);
      if (std::string err = attribute(names); !err.empty()) return err;
    }
    seen_root_ = true;
    if (s_[i_] == '/') {
      i_ += 2;
      return "";
    }
    ++i_;
    if (html_ && (name == "script" || name == "style")) {
      // Raw text up to the first "</name": what an HTML parser does.
      const size_t e = s_.find("</" + name, i_);
      if (e == std::string_view::npos) return at("unterminated <" + name + ">", i_);
      i_ = e;
    }
    stack_.push_back(name);
    return "";
  }

  std::string_view s_;
  bool html_;
  size_t i_ = 0;
  bool seen_root_ = false;
  std::vector<std::string> stack_;
};

}  // namespace

std::string xml_errors(std::string_view doc, bool html) {
  return Checker(doc, html).run();
}

size_t count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string_view::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

}  // namespace qkv::viz::testing
