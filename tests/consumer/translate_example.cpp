// Translating from C++ through decode::Translator, as the README shows it: stdin lines in,
// one translation per line out (an empty line for one that cannot be translated).
//   qkv_translate_example MODEL_DIR < input.txt
#include <iostream>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/decode/translator.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: qkv_translate_example MODEL_DIR < input.txt\n";
    return 2;
  }
  try {
    const qkv::decode::Translator translator = qkv::decode::Translator::load(argv[1]);
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    qkv::decode::TranslateOptions options;  // documented defaults, beam search of 5
    options.search.beam_size = 4;
    for (const qkv::decode::SentenceResult& r : translator.translate(lines, options))
      std::cout << (r.ok() ? r.hypotheses.front().text : "") << "\n";
  } catch (const qkv::Error& e) {
    std::cerr << "qkv_translate_example: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
