// qkv: train and use attention-based sequence-to-sequence models.
//   qkv vocab --train-sets SRC TGT --vocab-size N -o FILE
//   qkv train --model DIR --train-sets SRC TGT [--vocab FILE] [flags]
//   qkv translate --model DIR [flags] < SRC > HYPS
//   qkv score --model DIR [--src SRC --tgt TGT] (else `src ||| tgt` lines on stdin)
//   qkv eval --ref REF [--by-length SRC] < HYPS
//   qkv attend --model DIR [--svg DIR --png DIR] < SRC
//   qkv compare --train-sets SRC TGT --test-sets SRC REF [--variants LIST] [train flags]
//   qkv report --compare DIR [-o FILE]
//   qkv demo [--minutes 15] [--out DIR]
//   qkv gradflow --model DIR... --src SRC --ref REF [--csv FILE] [--svg FILE]
#include <iostream>
#include <string_view>

#include "command.h"
#include "decode_commands.h"
#include "experiment_commands.h"
#include "qkv/base/memory.h"

namespace {

constexpr const char* kUsage =
    "usage: qkv <command> [flags]\n"
    "\n"
    "Attention-based sequence-to-sequence models: train an RNN encoder-decoder (with or\n"
    "without attention) or a Transformer on parallel text.\n"
    "\n"
    "commands:\n"
    "  vocab   train a joint SentencePiece vocabulary on the training corpora\n"
    "  train   train a model into a model directory (--model DIR)\n"
    "  translate  translate stdin to stdout (beam search), one line per input line\n"
    "  score   the model's log-probability of given translations (forced decoding)\n"
    "  eval    BLEU and chrF of translations (stdin) against references (--ref)\n"
    "  attend  translations with their attention heatmaps (terminal, SVG, PNG)\n"
    "  compare train several systems under one budget and compare them in one table\n"
    "  report  the HTML report of a comparison (table, chart, attention heatmaps)\n"
    "  demo    the main job: three systems on Multi30k En-De in 15 minutes, with a report\n"
    "  gradflow  the loss gradient's norm at each source position (does it reach early words?)\n"
    "\n"
    "`qkv <command> --help` lists a command's flags with their defaults.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace qkv::tool;  // NOLINT
  // Training repeats the same large allocations every update: without this glibc maps
  // and unmaps them each time and the kernel zeroes every page again (qkv/base/memory.h).
  qkv::keep_freed_memory_for_reuse();
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string_view command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "--version") {
    std::cout << "qkv " << QKV_TOOL_VERSION << "\n";
    return kExitOk;
  }
  if (command == "vocab") return vocab_main(argc - 1, argv + 1);
  if (command == "train") return train_main(argc - 1, argv + 1);
  if (command == "translate") return translate_main(argc - 1, argv + 1);
  if (command == "score") return score_main(argc - 1, argv + 1);
  if (command == "eval") return eval_main(argc - 1, argv + 1);
  if (command == "attend") return attend_main(argc - 1, argv + 1);
  if (command == "compare") return compare_main(argc - 1, argv + 1);
  if (command == "report") return report_main(argc - 1, argv + 1);
  if (command == "demo") return demo_main(argc - 1, argv + 1);
  if (command == "gradflow") return gradflow_main(argc - 1, argv + 1);
  std::cerr << "qkv: error: unknown command '" << command
            << "'; the commands are vocab, train, translate, score, eval, attend, compare, report, "
               "demo and gradflow (see qkv --help)\n";
  return kExitUsage;
}
