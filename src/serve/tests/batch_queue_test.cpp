#include "qkv/serve/batch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace qkv::serve {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct TestJob {
  std::string key = "k";
  int64_t size = 1;
  std::atomic<bool> cancelled{false};
  int id = 0;
};

std::shared_ptr<TestJob> job(int id, std::string key = "k", int64_t size = 1) {
  auto j = std::make_shared<TestJob>();
  j->id = id;
  j->key = std::move(key);
  j->size = size;
  return j;
}

// Records each batch as the ids it held; lets a test wait for a number of batches and hold
// the runner until released.
class Recorder {
 public:
  void run(BatchQueue<TestJob>::Batch& batch) {
    std::unique_lock lock(mutex_);
    std::vector<int> ids;
    for (const auto& j : batch) ids.push_back(j->id);
    batches_.push_back(ids);
    changed_.notify_all();
    changed_.wait_for(lock, 10s, [this] { return !held_; });
  }
  bool wait_for_batches(size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return batches_.size() >= n; });
  }
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    changed_.notify_all();
  }
  std::vector<std::vector<int>> batches() {
    std::lock_guard lock(mutex_);
    return batches_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<int>> batches_;
  bool held_ = false;
};

BatchQueue<TestJob>::Runner runner(Recorder& r) {
  return [&r](int, BatchQueue<TestJob>::Batch& batch) { r.run(batch); };
}

TEST(BatchQueue, JobsArrivingWithinTheWindowShareOneBatch) {
  Recorder r;
  BatchQueue<TestJob> q({.workers = 1, .window = 2s, .max_batch = 3}, runner(r));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.try_push(job(i)));
  ASSERT_TRUE(r.wait_for_batches(1));  // 3 sentences fill the batch: no waiting for 2 s
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{0, 1, 2}}));
}

TEST(BatchQueue, ALoneJobWaitsOutTheWindowThenRuns) {
  Recorder r;
  BatchQueue<TestJob> q({.workers = 1, .window = 60ms, .max_batch = 8}, runner(r));
  const auto start = Clock::now();
  ASSERT_TRUE(q.try_push(job(7)));
  ASSERT_TRUE(r.wait_for_batches(1));
  EXPECT_GE(Clock::now() - start, 55ms);  // it waited for company
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{7}}));
}

TEST(BatchQueue, AJobAfterABatchClosedStartsTheNext) {
  Recorder r;
  BatchQueue<TestJob> q({.workers = 1, .window = 10ms, .max_batch = 8}, runner(r));
  ASSERT_TRUE(q.try_push(job(1)));
  ASSERT_TRUE(r.wait_for_batches(1));
  ASSERT_TRUE(q.try_push(job(2)));
  ASSERT_TRUE(r.wait_for_batches(2));
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{1}, {2}}));
}

TEST(BatchQueue, DifferentKeysNeverShareABatch) {
  Recorder r;
  BatchQueue<TestJob> q({.workers = 1, .window = 30ms, .max_batch = 8}, runner(r));
  ASSERT_TRUE(q.try_push(job(1, "a")));
  ASSERT_TRUE(q.try_push(job(2, "b")));
  ASSERT_TRUE(q.try_push(job(3, "a")));
  ASSERT_TRUE(r.wait_for_batches(2));
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{1, 3}, {2}}));
}

TEST(BatchQueue, ABatchHoldsAtMostMaxBatchSentencesAndNeverSplitsAJob) {
  Recorder r;
  BatchQueue<TestJob> q({.workers = 1, .window = 300ms, .max_batch = 4}, runner(r));
  r.hold();
  ASSERT_TRUE(q.try_push(job(0, "other", 4)));
  ASSERT_TRUE(r.wait_for_batches(1));  // the worker is busy while the rest queue up
  ASSERT_TRUE(q.try_push(job(1, "k", 3)));
  ASSERT_TRUE(q.try_push(job(2, "k", 2)));  // 3 + 2 > 4: the next batch
  ASSERT_TRUE(q.try_push(job(3, "k", 2)));
  r.release();
  ASSERT_TRUE(r.wait_for_batches(3));
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{0}, {1}, {2, 3}}));
}

TEST(BatchQueue, AFullQueueRefusesUntilItDrains) {
  Recorder r;
  r.hold();
  BatchQueue<TestJob> q({.workers = 1, .window = 0ms, .max_batch = 1, .capacity = 2}, runner(r));
  ASSERT_TRUE(q.try_push(job(0)));
  ASSERT_TRUE(r.wait_for_batches(1));  // the worker is busy with job 0
  EXPECT_TRUE(q.try_push(job(1)));
  EXPECT_TRUE(q.try_push(job(2)));
  EXPECT_FALSE(q.try_push(job(3)));  // 2 sentences waiting: full
  EXPECT_EQ(q.queued(), 2);
  r.release();
  ASSERT_TRUE(r.wait_for_batches(3));
  EXPECT_TRUE(q.try_push(job(4)));
  ASSERT_TRUE(r.wait_for_batches(4));
}

TEST(BatchQueue, AJobLargerThanTheCapacityIsTakenIntoAnEmptyQueueOnly) {
  Recorder r;
  r.hold();
  BatchQueue<TestJob> q({.workers = 1, .window = 0ms, .max_batch = 1, .capacity = 2}, runner(r));
  ASSERT_TRUE(q.try_push(job(0)));
  ASSERT_TRUE(r.wait_for_batches(1));
  EXPECT_TRUE(q.try_push(job(1, "k", 5)));  // nothing waiting
  EXPECT_FALSE(q.try_push(job(2)));
  r.release();
  ASSERT_TRUE(r.wait_for_batches(2));
}

TEST(BatchQueue, CancelledJobsNeverRun) {
  Recorder r;
  r.hold();
  BatchQueue<TestJob> q({.workers = 1, .window = 0ms, .max_batch = 8}, runner(r));
  ASSERT_TRUE(q.try_push(job(0)));
  ASSERT_TRUE(r.wait_for_batches(1));
  auto gone = job(1);
  ASSERT_TRUE(q.try_push(gone));
  ASSERT_TRUE(q.try_push(job(2)));
  gone->cancelled = true;  // its requester timed out
  r.release();
  ASSERT_TRUE(r.wait_for_batches(2));
  q.shutdown();
  EXPECT_EQ(r.batches(), (std::vector<std::vector<int>>{{0}, {2}}));
  EXPECT_EQ(q.queued(), 0);
}

TEST(BatchQueue, ShutdownRunsEverythingQueuedThenRefuses) {
  Recorder r;
  r.hold();
  BatchQueue<TestJob> q({.workers = 2, .window = 5s, .max_batch = 4}, runner(r));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.try_push(job(i, i % 2 ? "odd" : "even")));
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    r.release();
  });
  const auto start = Clock::now();
  q.shutdown();  // no 5 s windows while stopping
  releaser.join();
  EXPECT_LT(Clock::now() - start, 4s);
  EXPECT_FALSE(q.try_push(job(99)));
  std::vector<int> ran;
  for (const auto& b : r.batches()) ran.insert(ran.end(), b.begin(), b.end());
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(BatchQueue, WorkersRunBatchesConcurrently) {
  std::mutex m;
  std::condition_variable cv;
  int inside = 0;
  bool met = false;
  BatchQueue<TestJob> q({.workers = 2, .window = 0ms, .max_batch = 1},
                        [&](int, BatchQueue<TestJob>::Batch&) {
                          std::unique_lock lock(m);
                          if (++inside == 2) met = true;
                          cv.notify_all();
                          cv.wait_for(lock, 10s, [&] { return met; });
                        });
  ASSERT_TRUE(q.try_push(job(0)));
  ASSERT_TRUE(q.try_push(job(1)));
  q.shutdown();
  EXPECT_TRUE(met);  // both runners were inside at once
}

TEST(BatchQueue, ARunnerThatThrowsDoesNotStopItsWorker) {
  std::atomic<int> calls{0};
  BatchQueue<TestJob> q({.workers = 1, .window = 0ms, .max_batch = 1},
                        [&](int, BatchQueue<TestJob>::Batch&) {
                          if (calls++ == 0) throw std::runtime_error("boom");
                        });
  ASSERT_TRUE(q.try_push(job(0)));
  ASSERT_TRUE(q.try_push(job(1)));
  q.shutdown();
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace qkv::serve
