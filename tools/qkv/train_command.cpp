// qkv train: corpora + flags -> a model directory, new or resumed.
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "command.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/experiment/train_session.h"
#include "qkv/io/fault_injection.h"

namespace qkv::tool {
namespace {

// Set by SIGINT/SIGTERM: the trainer stops after the current update and saves. The
// handler restores the default action, so a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop{false};

extern "C" void request_stop(int signal) {
  g_stop.store(true);
  std::signal(signal, SIG_DFL);
}

// Test-only hooks armed from the environment by tests/reliability/*.sh; with both
// variables unset nothing changes. QKV_TEST_SAVE_DELAY_MS=N (0..60000) pauses every
// atomic save N ms between its complete temporary file and the rename, so the kill test
// can land SIGKILLs inside a checkpoint write; QKV_TEST_FAIL_NTH_WRITE=N (>= 1) makes the
// N-th low-level write step of this command (counted from its start: vocab.spm, train.yml,
// then the checkpoints) fail with ENOSPC, as a full disk would.
struct TestHooks {
  std::optional<io::testing::DelayBeforeRename> delay;
  std::optional<io::testing::FailNthWrite> fail;
};

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  QKV_CHECK(
      !s.empty() && ec == std::errc() && end == s.data() + s.size() && value >= min && value <= max,
      ConfigError, "environment variable ", name, "='", s, "' must be an integer in [", min, ", ",
      max, "] (a test-only setting; unset it for normal training)");
  return value;
}

void arm_test_hooks(TestHooks& hooks) {
  if (const auto ms = env_int("QKV_TEST_SAVE_DELAY_MS", 0, 60'000))
    hooks.delay.emplace(std::chrono::milliseconds(*ms));
  if (const auto n = env_int("QKV_TEST_FAIL_NTH_WRITE", 1, int64_t{1} << 40))
    hooks.fail.emplace(*n);
}

int train(const cli::ParsedOptions& p) {
  TestHooks test_hooks;
  arm_test_hooks(test_hooks);
  experiment::run_training_session(p, {.log = &std::cerr,
                                       .stop_requested = &g_stop,
                                       .before_loop =
                                           [] {
                                             std::signal(SIGINT, request_stop);
                                             std::signal(SIGTERM, request_stop);
                                           },
                                       .after_loop =
                                           [] {
                                             std::signal(SIGINT, SIG_DFL);
                                             std::signal(SIGTERM, SIG_DFL);
                                           }});
  return kExitOk;
}

}  // namespace

int train_main(int argc, const char* const* argv) {
  return run_guarded("train", [&] {
    const cli::OptionSet options = experiment::train_options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "train",
          "Trains an RNN encoder-decoder (without attention, with Luong or Bahdanau attention) "
          "or a Transformer on parallel text, into a model directory. Flags can also come from "
          "a YAML file (-c FILE) whose keys are the flag names.");
      return kExitOk;
    }
    return train(p);
  });
}

}  // namespace qkv::tool
