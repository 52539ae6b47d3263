#include "qkv/eval/tokenize_13a.h"

#include "detail/text.h"
#include "detail/tokenize.h"

namespace qkv::eval {
namespace detail {
namespace {

// Python's str.replace: every non-overlapping occurrence, left to right.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit = s.find(from); hit != std::string_view::npos; hit = s.find(from, pos)) {
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(s, pos);
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// The character class of the first regex: ASCII punctuation and space, except ' , - .
bool is_split_punct(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

bool is_period_comma(char c) {
  return c == '.' || c == ',';
}

// re.sub with a two-character pattern (first, second) and a replacement built from the
// two matched characters: a scan where a match consumes both characters, as in Python.
// Working on bytes equals working on code points here: both classes that can match a
// non-ASCII character are negations ([^0-9]), and the other half of every pattern is
// ASCII, which never occurs inside a multi-byte sequence.
template <class First, class Second, class Emit>
std::string substitute_pairs(std::string_view s, First first, Second second, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

std::string tokenize_13a_unchecked(std::string_view line) {
  // Language-independent part (mteval-v13a's normalisation).
  std::string s = replace_all(line, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    s = replace_all(s, "&quot;", "\"");
    s = replace_all(s, "&amp;", "&");
    s = replace_all(s, "&lt;", "<");
    s = replace_all(s, "&gt;", ">");
  }
  s = " " + s + " ";

  // 1. ([{-~[-` -&(-+:-@/]) -> " \1 "
  std::string split;
  split.reserve(s.size() * 2);
  for (char c : s) {
    if (is_split_punct(c)) {
      split += ' ';
      split += c;
      split += ' ';
    } else {
      split += c;
    }
  }
  // 2. ([^0-9])([.,]) -> "\1 \2 "
  const auto not_digit = [](char c) { return !is_digit(c); };
  s = substitute_pairs(split, not_digit, is_period_comma, [](std::string& out, char a, char b) {
    out += a;
    out += ' ';
    out += b;
    out += ' ';
  });
  // 3. ([.,])([^0-9]) -> " \1 \2"
  s = substitute_pairs(s, is_period_comma, not_digit, [](std::string& out, char a, char b) {
    out += ' ';
    out += a;
    out += ' ';
    out += b;
  });
  // 4. ([0-9])(-) -> "\1 \2 "
  s = substitute_pairs(
      s, is_digit, [](char c) { return c == '-'; },
      [](std::string& out, char a, char b) {
        out += a;
        out += ' ';
        out += b;
        out += ' ';
      });
  return normalize_whitespace(s);
}

}  // namespace detail

std::string tokenize_13a(std::string_view line) {
  detail::check_utf8(line, "tokenize_13a: the input");
  return detail::tokenize_13a_unchecked(line);
}

}  // namespace qkv::eval
