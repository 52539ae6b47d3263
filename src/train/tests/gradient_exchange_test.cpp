// The single-process exchange and the start-up check, without MPI: a fake "other rank"
// answers gather() with its own fingerprints.
#include "qkv/train/gradient_exchange.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv::train {
namespace {

TEST(GradientExchange, LocalReduceSumsInOrderFromPositiveZero) {
  const std::vector<float> a = {1e8f, -0.0f, 3.0f}, b = {-1e8f, -0.0f, 0.25f},
                           c = {1.0f, -0.0f, 0.0f};
  std::vector<float> sum(3, 42.0f);  // ignored: the sum starts at +0
  const std::vector<WeightedGradient> own = {{a, 1.0f}, {b, 1.0f}, {c, 1.0f}};
  LocalExchange().reduce(sum, own);
  EXPECT_EQ(sum[0], 1.0f);             // (1e8 - 1e8) + 1; 1e8 + (-1e8 + 1) would be 0
  EXPECT_FALSE(std::signbit(sum[1]));  // +0 + -0 = +0
  EXPECT_EQ(sum[2], 3.25f);
  // Summed as it goes (rank 0): `own` empty leaves the sum as it is.
  std::vector<float> done = {7.0f};
  LocalExchange().reduce(done, {});
  EXPECT_EQ(done[0], 7.0f);
}

// The default start_reduce / gradient_ready / finish_reduce (what LocalExchange uses):
// the same bits as reduce(), where the last micro-batch's gradient is read only at the end.
TEST(GradientExchange, TheOverlappedStepsGiveReducesBits) {
  const std::vector<float> a = {1e8f, -0.0f, 3.0f}, b = {-1e8f, -0.0f, 0.25f};
  std::vector<float> last = {1.0f, -0.0f, 0.0f};
  const std::vector<WeightedGradient> all = {{a, 0.5f}, {b, 0.5f}, {last, 2.0f}};
  std::vector<float> expected(3);
  LocalExchange().reduce(expected, all);
  // Rank 0 sums as it goes: the sum holds a and b when the steps start.
  std::vector<float> sum(3, 0.0f);
  add_weighted(sum, a, 0.5f);
  add_weighted(sum, b, 0.5f);
  LocalExchange local;
  std::vector<float> filling(3, 99.0f);  // the backward pass fills it in after the start
  local.start_reduce(sum, {}, {filling, 2.0f});
  filling[0] = last[0], filling[1] = last[1];
  local.gradient_ready(0, 2);
  filling[2] = last[2];
  local.gradient_ready(2, 1);
  local.finish_reduce();
  EXPECT_EQ(0, std::memcmp(sum.data(), expected.data(), sizeof(float) * 3));
}

TEST(GradientExchange, AddWeightedRefusesMismatchedSizes) {
  std::vector<float> sum(3), grad(2);
  EXPECT_THROW(add_weighted(sum, grad, 1.0f), ShapeError);
}

// Rank 1 whose fingerprints are rank 0's with item `differs` changed (or none).
class TwoRanks final : public GradientExchange {
 public:
  explicit TwoRanks(int differs) : differs_(differs) {}
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 2; }
  ExchangeMode mode() const noexcept override { return ExchangeMode::Ordered; }
  void reduce(std::span<float>, std::span<const WeightedGradient>) override {}
  std::vector<double> gather(std::span<const double> mine) override {
    std::vector<double> all(mine.begin(), mine.end());
    all.insert(all.end(), mine.begin(), mine.end());
    return all;
  }
  std::vector<uint64_t> gather(std::span<const uint64_t> mine) override {
    std::vector<uint64_t> all(mine.begin(), mine.end());
    all.insert(all.end(), mine.begin(), mine.end());
    if (differs_ >= 0) all[mine.size() + size_t(differs_)] += 1;
    return all;
  }
  int64_t max_over_ranks(int64_t value) override { return value; }

 private:
  int differs_;
};

const std::vector<FingerprintItem> kItems = {{"the vocabulary", 11}, {"the flags", 22}};

TEST(GradientExchange, TheStartUpCheckNamesWhatDiffersAndTheRank) {
  TwoRanks same(-1);
  EXPECT_NO_THROW(check_same_run(same, kItems));
  for (const auto& [index, what] : {std::pair{1, "the vocabulary of rank 1 differs from rank 0's"},
                                    std::pair{2, "the flags of rank 1 differs from rank 0's"},
                                    std::pair{0, "rank 1 checks 3 fingerprints but rank 0 2"}}) {
    TwoRanks other(index);
    try {
      check_same_run(other, kItems);
      ADD_FAILURE() << "no error for item " << index;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  // One process: nothing to compare, nothing gathered.
  LocalExchange alone;
  EXPECT_NO_THROW(check_same_run(alone, kItems));
}

TEST(DataParallel, AutoFollowsTheLauncherAndOffRefusesSeveralRanks) {
  EXPECT_FALSE(trains_with_others(DataParallel::Auto, 0));
  EXPECT_FALSE(trains_with_others(DataParallel::Auto, 1));
  EXPECT_TRUE(trains_with_others(DataParallel::Auto, 2));
  EXPECT_TRUE(trains_with_others(DataParallel::Mpi, 0));  // mpi alone: a world of one
  EXPECT_FALSE(trains_with_others(DataParallel::Off, 1));
  try {
    trains_with_others(DataParallel::Off, 3);
    ADD_FAILURE() << "off under a launcher of 3 ranks was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.fields().front(), "data_parallel");
    EXPECT_NE(std::string(e.what()).find("mpirun started 3 ranks but data_parallel is off"),
              std::string::npos)
        << e.what();
  }
}

TEST(DataParallel, TheLauncherSaysHowManyProcessesItStarted) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) ::unsetenv(name);
  EXPECT_EQ(launcher_world_size(), 0);
  ::setenv("PMI_SIZE", "4", 1);
  EXPECT_EQ(launcher_world_size(), 4);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // Open MPI's own variable first
  EXPECT_EQ(launcher_world_size(), 2);
  ::unsetenv("PMI_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}

}  // namespace
}  // namespace qkv::train
