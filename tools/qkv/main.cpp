// qkv: train and use attention-based sequence-to-sequence models. The commands are the
// rows of kCommands below, the one list that usage (`qkv --help`), dispatch, `qkv help CMD`
// and the suggestion for a misspelled command read; each command's flags are in its
// `qkv CMD --help`.
#include <algorithm>
#include <array>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "qkv/base/memory.h"
#include "qkv/cli/options.h"

namespace {

using qkv::tool::kExitOk;
using qkv::tool::kExitUsage;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*main)(int argc, const char* const* argv);
};

// The one list of commands: usage, dispatch, `qkv help CMD` and the suggestion for a
// misspelled command all read it.
constexpr std::array kCommands{
    Command{"vocab", "train a joint SentencePiece vocabulary on the training corpora",
            qkv::tool::vocab_main},
    Command{"train", "train a model into a model directory (--model DIR)", qkv::tool::train_main},
    Command{"translate", "translate stdin to stdout (beam search), one line per input line",
            qkv::tool::translate_main},
    Command{"score", "the model's log-probability of given translations (forced decoding)",
            qkv::tool::score_main},
    Command{"eval", "BLEU and chrF of translations against references (--ref)",
            qkv::tool::eval_main},
    Command{"attend", "translations with their attention heatmaps (terminal, SVG, PNG)",
            qkv::tool::attend_main},
    Command{"serve", "a translation server: LibreTranslate's API, batching, attention, a web page",
            qkv::tool::serve_main},
    Command{"compare", "train several systems under one budget and compare them in one table",
            qkv::tool::compare_main},
    Command{"report", "the HTML report of a comparison (table, chart, attention heatmaps)",
            qkv::tool::report_main},
    Command{"demo", "the main job: three systems on Multi30k En-De in 15 minutes, with a report",
            qkv::tool::demo_main},
    Command{"gradflow",
            "the loss gradient's norm at each source position (does it reach early words?)",
            qkv::tool::gradflow_main},
};

std::string usage() {
  size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, c.name.size());
  std::string text =
      "usage: qkv <command> [flags]\n"
      "\n"
      "Attention-based sequence-to-sequence models: train an RNN encoder-decoder (with or\n"
      "without attention) or a Transformer on parallel text.\n"
      "\n"
      "commands:\n";
  for (const Command& c : kCommands) {
    text += "  ";
    text += c.name;
    text.append(width - c.name.size() + 2, ' ');
    text += c.summary;
    text += '\n';
  }
  text +=
      "\n"
      "`qkv <command> --help` (or `qkv help <command>`) lists a command's flags with their\n"
      "defaults.\n";
  return text;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

int unknown_command(std::string_view name) {
  std::vector<std::string> names;
  for (const Command& c : kCommands) names.emplace_back(c.name);
  std::string message = "qkv: error: unknown command '" + std::string(name) + "'";
  const std::string guess = qkv::cli::closest_word(name, names);
  if (!guess.empty()) message += "; did you mean '" + guess + "'?";
  message += " The commands are:";
  for (const std::string& n : names) message += " " + n;
  std::cerr << message << " (see qkv --help)\n";
  return kExitUsage;
}

// `qkv help` prints the usage; `qkv help CMD` is `qkv CMD --help`.
int help(int argc, const char* const* argv) {
  if (argc < 3) {
    std::cout << usage();
    return kExitOk;
  }
  const Command* command = find_command(argv[2]);
  if (command == nullptr) return unknown_command(argv[2]);
  const std::array<const char*, 2> args{argv[2], "--help"};
  return command->main(int(args.size()), args.data());
}

}  // namespace

int main(int argc, char** argv) {
  // Training repeats the same large allocations every update: without this glibc maps
  // and unmaps them each time and the kernel zeroes every page again (qkv/base/memory.h).
  qkv::keep_freed_memory_for_reuse();
  if (argc < 2) {
    std::cerr << usage();
    return kExitUsage;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") return help(argc, argv);
  if (name == "--version") {
    std::cout << "qkv " << QKV_TOOL_VERSION << "\n";
    return kExitOk;
  }
  const Command* command = find_command(name);
  if (command == nullptr) return unknown_command(name);
  return command->main(argc - 1, argv + 1);
}
