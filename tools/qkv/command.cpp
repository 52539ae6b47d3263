#include "command.h"

#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "qkv/base/error.h"
#include "qkv/cli/field_names.h"

namespace qkv::tool {
namespace {

// One line: a message with line breaks would read as several errors.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

int report(std::string_view command, std::string_view message, int code) {
  std::cerr << "qkv " << command << ": error: " << one_line(std::string(message)) << std::endl;
  return code;
}

// The library marks the option fields it names (FieldError, FieldIoError,
// FieldResourceError, DivergenceError's advice); users know them as flags.
std::string message_of(const Error& e) {
  const auto* fields = dynamic_cast<const FieldMessage*>(&e);
  return fields != nullptr ? cli::flag_message(*fields) : std::string(e.what());
}

}  // namespace

int run_guarded(std::string_view command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    return report(command, message_of(e), kExitUsage);
  } catch (const InternalError& e) {
    return report(command,
                  std::string("internal error (a bug in qkv, please report it): ") + e.what() +
                      " [" + e.where() + "]",
                  kExitRuntime);
  } catch (const Error& e) {
    return report(command, message_of(e), kExitRuntime);
  } catch (const std::bad_alloc&) {
    return report(command,
                  "out of memory; try a smaller --mini-batch-words, a smaller model or fewer "
                  "--threads",
                  kExitRuntime);
  } catch (const std::exception& e) {
    return report(command, std::string("unexpected error: ") + e.what(), kExitRuntime);
  } catch (...) {
    return report(command, "unexpected error of unknown type", kExitRuntime);
  }
}

int run_subcommand(const Subcommand& command, int argc, const char* const* argv) {
  return run_guarded(command.name, [&] {
    const cli::OptionSet options = command.options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help("qkv", command.name, command.description);
      return kExitOk;
    }
    return command.run(p, std::span(argv + 1, size_t(argc > 0 ? argc - 1 : 0)));
  });
}

}  // namespace qkv::tool
