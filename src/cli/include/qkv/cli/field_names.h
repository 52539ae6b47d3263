// The CLI's side of the library's field errors (qkv/base/field_error.h): a typed options
// field is set by the flag of the same name in kebab-case (ModelSettings::dim_emb by
// --dim-emb, ComparisonSpec::test_sets by --test-sets), so a message about fields reads
// as one about flags. The few fields whose flag is named otherwise are listed in
// field_names.cpp (TrainerOptions::model_dir is set by --model).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qkv/base/field_error.h"

namespace qkv::cli {

// "dim_emb" -> "--dim-emb"; "model_dir" -> "--model".
std::string flag_for_field(std::string_view field);

// The message with every field named as its flag: "--heads 3 must divide --dim-emb 256".
std::string flag_message(const FieldMessage& e);

// Runs `body`; a FieldError comes out as a ConfigError (a FieldIoError as an IoError, a
// FieldResourceError as a ResourceError) whose message names flags: what the flag layers
// of the library (train_flags.h) use, so that every front end that parses flags shows
// flag names.
template <class F>
decltype(auto) naming_flags(F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (const FieldError& e) {
    throw ConfigError(flag_message(e), e.where());
  } catch (const FieldIoError& e) {
    throw IoError(flag_message(e), e.where());
  } catch (const FieldResourceError& e) {
    throw ResourceError(flag_message(e), e.where());
  }
}

// The arguments as a shell would need them (single-quoted where necessary): a command
// line recorded for the reader ("Command: qkv compare ..." in a report).
std::string shell_quote(const std::vector<std::string>& args);

}  // namespace qkv::cli
