// Cross-request batching: jobs (one request's sentences each) wait in one bounded queue;
// a pool of workers takes them out in batches of jobs that may be decoded together (equal
// keys), waiting up to a window after the first job arrived for others to join, and runs
// each batch with the worker's own runner (its own Translator: calls on one Translator run
// one at a time, separate ones concurrently).
//
//   BatchQueue<Job> queue({.workers = 2, .window = 5ms}, [](int worker, auto& batch) {...});
//   if (!queue.try_push(job)) -> 503
//
// A Job type provides `std::string key` (jobs with equal keys may share a batch),
// `int64_t size` (its sentences, counted against max_batch and capacity) and
// `std::atomic<bool> cancelled` (a job its requester stopped waiting for: never run).
// Shutdown stops accepting and runs everything already queued, without windows, before the
// workers exit: nothing accepted is lost.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "qkv/base/error.h"

namespace qkv::serve {

struct BatchQueueOptions {
  int workers = 1;                         // threads taking batches (>= 1)
  std::chrono::microseconds window{5000};  // how long a batch waits for more jobs
  int64_t max_batch = 32;                  // sentences per batch (a job is never split)
  int64_t capacity = 1024;                 // sentences queued at most; more: refused
};

template <class Job>
class BatchQueue {
 public:
  using Batch = std::vector<std::shared_ptr<Job>>;
  // Called on worker thread `worker` (0-based) with a batch of non-cancelled jobs with equal
  // keys, at most max_batch sentences unless one job alone holds more. It must answer each
  // job (the queue never looks at results) and should not throw; what it throws is dropped.
  using Runner = std::function<void(int worker, Batch& batch)>;

  BatchQueue(const BatchQueueOptions& options, Runner runner)
      : options_(options), runner_(std::move(runner)) {
    QKV_CHECK(options.workers >= 1, ValueError, "BatchQueue: workers ", options.workers,
              " (need >= 1)");
    QKV_CHECK(options.max_batch >= 1 && options.capacity >= 1, ValueError,
              "BatchQueue: max_batch and capacity must be >= 1");
    for (int w = 0; w < options.workers; ++w) threads_.emplace_back([this, w] { work(w); });
  }
  ~BatchQueue() { shutdown(); }
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  // False (the job is not queued) when the queue holds `capacity` sentences already or is
  // shutting down. A job larger than the capacity is accepted into an empty queue only.
  bool try_push(std::shared_ptr<Job> job) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
      if (queued_ > 0 && queued_ + job->size > options_.capacity) return false;
      queued_ += job->size;
      jobs_.push_back({std::move(job), Clock::now()});
    }
    changed_.notify_all();
    return true;
  }

  // Sentences waiting (not yet taken by a worker).
  int64_t queued() const {
    std::lock_guard lock(mutex_);
    return queued_;
  }

  // Refuses new jobs, runs what is queued, joins the workers. Idempotent.
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::shared_ptr<Job> job;
    Clock::time_point arrived;
  };

  void work(int worker) {
    for (;;) {
      Batch batch = take();
      if (batch.empty()) return;  // stopping and nothing left
      try {
        runner_(worker, batch);
      } catch (...) {  // the runner answers its jobs; an escaped error must not end the worker
      }
    }
  }

  // Drops cancelled jobs at the front; under the lock.
  void drop_cancelled() {
    std::erase_if(jobs_, [this](const Entry& e) {
      if (!e.job->cancelled) return false;
      queued_ -= e.job->size;
      return true;
    });
  }

  // Moves the queued jobs with `key` into `batch` while they fit; under the lock.
  void gather(Batch& batch, int64_t& size, const std::string& key) {
    for (auto it = jobs_.begin(); it != jobs_.end() && size < options_.max_batch;) {
      if (it->job->key == key && size + it->job->size <= options_.max_batch) {
        size += it->job->size;
        queued_ -= it->job->size;
        batch.push_back(std::move(it->job));
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // The next batch: the oldest job and those with its key that arrive before its window
  // ends (or the batch is full). Empty when stopping with nothing queued.
  // A key another worker is gathering is left to it, so that concurrent requests join one
  // batch instead of each starting its own.
  Batch take() {
    std::unique_lock lock(mutex_);
    auto free_job = jobs_.end();
    for (;;) {
      changed_.wait(lock, [&] {
        drop_cancelled();
        free_job = std::find_if(jobs_.begin(), jobs_.end(), [this](const Entry& e) {
          return std::find(forming_.begin(), forming_.end(), e.job->key) == forming_.end();
        });
        return free_job != jobs_.end() || stopping_;
      });
      if (free_job != jobs_.end()) break;
      if (jobs_.empty()) return {};  // stopping, nothing left
      changed_.wait(lock);           // stopping: another worker is taking the rest
    }
    Entry first = std::move(*free_job);
    jobs_.erase(free_job);
    queued_ -= first.job->size;
    const std::string key = first.job->key;
    int64_t size = first.job->size;
    Batch batch{std::move(first.job)};
    forming_.push_back(key);
    const Clock::time_point deadline = first.arrived + options_.window;
    for (;;) {
      drop_cancelled();
      gather(batch, size, key);
      if (size >= options_.max_batch || stopping_ || Clock::now() >= deadline) break;
      changed_.wait_until(lock, deadline);
    }
    forming_.erase(std::find(forming_.begin(), forming_.end(), key));
    lock.unlock();
    changed_.notify_all();  // jobs with this key are free for the other workers again
    return batch;
  }

  BatchQueueOptions options_;
  Runner runner_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> jobs_;
  std::vector<std::string> forming_;  // keys of the batches workers are gathering
  int64_t queued_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace qkv::serve
