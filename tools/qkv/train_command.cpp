// qkv train: corpora + flags -> a model directory, new or resumed.
#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>

#include "command.h"
#include "qkv/base/env.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/experiment/train_session.h"
#include "qkv/io/fault_injection.h"
#ifdef QKV_HAVE_MPI
#include "qkv/train/mpi_exchange.h"
#endif

namespace qkv::tool {
namespace {

// Set by SIGINT/SIGTERM: the trainer stops after the current update and saves. The
// handler restores the default action, so a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop{false};

extern "C" void request_stop(int signal) {
  g_stop.store(true);
  std::signal(signal, SIG_DFL);
}

// The exchange --data-parallel asks for; nullptr: this process trains alone. Here, not in
// the library session: only the launcher knows whether this binary has MPI.
std::shared_ptr<train::GradientExchange> make_exchange(const cli::ParsedOptions& p) {
  const std::string mode = p.get<std::string>("data-parallel");
  const int world = train::launcher_world_size();
  if (!train::trains_with_others(mode == "mpi"   ? train::DataParallel::Mpi
                                 : mode == "off" ? train::DataParallel::Off
                                                 : train::DataParallel::Auto,
                                 world))
    return nullptr;
#ifdef QKV_HAVE_MPI
  // Test-only: QKV_TEST_EXCHANGE_CHUNK=N floats per message, so that tiny test models
  // still cut their gradient into many chunks (overlap and chunk order exercised).
  const auto chunk = qkv::env_int("QKV_TEST_EXCHANGE_CHUNK", 1, int64_t{1} << 30);
  return train::make_mpi_exchange(p.get<std::string>("gradient-exchange") == "allreduce"
                                      ? train::ExchangeMode::Allreduce
                                      : train::ExchangeMode::Ordered,
                                  chunk ? size_t(*chunk) : train::kAutoChunk);
#else
  QKV_THROW(ConfigError,
            mode == "mpi" ? std::string("--data-parallel mpi:")
                          : "mpirun started " + std::to_string(world) + " ranks, but",
            " this qkv was built without MPI; install Open MPI (libopenmpi-dev openmpi-bin, "
            "scripts/setup.sh) and rebuild, or train in one process");
#endif
}

int train(const cli::ParsedOptions& p, std::shared_ptr<train::GradientExchange>& exchange) {
  // Test-only faults (tests/reliability/*.sh); none unless their variables are set.
  const io::testing::FaultsFromEnvironment test_faults;
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
                                           },
                                       .make_exchange =
                                           [&] {
                                             exchange = make_exchange(p);
                                             return exchange;
                                           }});
  return kExitOk;
}

}  // namespace

int train_main(int argc, const char* const* argv) {
  std::shared_ptr<train::GradientExchange> exchange;
  const int rc = run_guarded("train", [&] {
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
    return train(p, exchange);
  });
  // A rank that fails alone (a full disk on rank 0, say) must not leave the others
  // waiting for it in the next exchange: end the whole job, with this rank's message
  // already printed.
#ifdef QKV_HAVE_MPI
  if (rc != kExitOk && exchange != nullptr && exchange->size() > 1) train::abort_mpi_job(rc);
#endif
  return rc;
}

}  // namespace qkv::tool
