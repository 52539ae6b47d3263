// Errors about a field of a typed options struct (ModelSettings::heads,
// ComparisonSpec::test_sets, ...). The library does not know which front end filled the
// struct, so its messages mark each field they name as {field}; every front end renders
// the marks in its own terms: the CLI as the flag that sets the field ("--heads"), the
// Python module as the keyword argument. what() shows the bare field name ("heads").
//
//   QKV_CHECK(dim_emb % heads == 0, FieldError, "{heads} ", heads, " must divide {dim_emb} ",
//             dim_emb);
//   e.what()                        -> "heads 3 must divide dim_emb 256"
//   e.render(cli::flag_for_field)   -> "--heads 3 must divide --dim-emb 256"
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qkv/base/error.h"

namespace qkv {

// The marked text of a field error; a base of FieldError, FieldIoError and
// FieldResourceError, so that a front end renders them all with one catch.
class FieldMessage {
 public:
  explicit FieldMessage(std::string text) : text_(std::move(text)) {}
  virtual ~FieldMessage() = default;
  FieldMessage(const FieldMessage&) = default;
  FieldMessage& operator=(const FieldMessage&) = default;

  // The message with its {field} marks.
  const std::string& marked_text() const noexcept { return text_; }
  // The message with each {field} replaced by name(field).
  std::string render(const std::function<std::string(std::string_view field)>& name) const;
  // The fields marked, in the order they appear (repeats kept): the first is the one a
  // front end blames when it can name only one (the server's "field" of a 400 reply).
  std::vector<std::string> fields() const;

 private:
  std::string text_;
};

// "{heads} 3" -> "heads 3": the marks removed.
std::string plain_fields(std::string_view marked);

// A bad value or combination of fields: a ConfigError (a usage error for the CLI).
class FieldError : public ConfigError, public FieldMessage {
 public:
  FieldError(const std::string& marked, std::string where)
      : ConfigError(plain_fields(marked), std::move(where)), FieldMessage(marked) {}
};

// A file or directory a field names cannot be used: an IoError (a runtime error).
class FieldIoError : public IoError, public FieldMessage {
 public:
  FieldIoError(const std::string& marked, std::string where)
      : IoError(plain_fields(marked), std::move(where)), FieldMessage(marked) {}
};

// Too little memory for what the fields ask: a ResourceError whose remedy names the
// fields to reduce ("reduce {mini_batch_words} or {max_length}"); check_memory
// (qkv/base/memory.h) throws it.
class FieldResourceError : public ResourceError, public FieldMessage {
 public:
  FieldResourceError(const std::string& marked, std::string where)
      : ResourceError(plain_fields(marked), std::move(where)), FieldMessage(marked) {}
};

}  // namespace qkv
