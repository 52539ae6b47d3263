// The subcommands that use a trained model or score its output: translate, score, eval,
// attend. Each takes argv with argv[0] the subcommand's name, as OptionSet::parse expects,
// and returns an exit code (command.h: 0, 1 runtime error, 2 usage error).
#pragma once

namespace qkv::tool {

int translate_main(int argc, const char* const* argv);
int score_main(int argc, const char* const* argv);
int eval_main(int argc, const char* const* argv);
int attend_main(int argc, const char* const* argv);
int serve_main(int argc, const char* const* argv);  // the HTTP server (serve_command.cpp)

}  // namespace qkv::tool
