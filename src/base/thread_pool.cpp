#include "qkv/base/thread_pool.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "qkv/base/error.h"

namespace qkv {
namespace {

thread_local bool t_in_region = false;

// Marks the current thread as inside a parallel region for the scope's duration.
class RegionScope {
 public:
  RegionScope() noexcept : previous_(t_in_region) { t_in_region = true; }
  ~RegionScope() { t_in_region = previous_; }

 private:
  bool previous_;
};

void run_serially(int64_t begin, int64_t end, int64_t grain, ChunkFn fn) {
  RegionScope scope;
  for (int64_t b = begin; b < end; b += grain) fn(b, b + grain < end ? b + grain : end);
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    workers_.reserve(static_cast<size_t>(threads - 1));
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t begin, int64_t end, int64_t grain, ChunkFn fn) {
    std::unique_lock submit(submit_mutex_, std::try_to_lock);
    if (!submit.owns_lock()) return run_serially(begin, end, grain, fn);  // pool busy
    Job job{fn, begin, end, grain, num_chunks(begin, end, grain)};
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    work_on(job);
    // Wait until every worker that joined this job has left it.
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return job.active_workers == 0; });
    job_ = nullptr;
    lock.unlock();
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    ChunkFn fn;
    int64_t begin, end, grain, chunks;
    std::atomic<int64_t> next{0};
    std::atomic<bool> failed{false};
    int active_workers = 0;    // guarded by mutex_
    std::exception_ptr error;  // guarded by error_mutex
    std::mutex error_mutex;
  };

  static void work_on(Job& job) {
    RegionScope scope;
    for (;;) {
      const int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.chunks || job.failed.load(std::memory_order_relaxed)) return;
      const int64_t b = job.begin + c * job.grain;
      const int64_t e = b + job.grain < job.end ? b + job.grain : job.end;
      try {
        job.fn(b, e);
      } catch (...) {
        std::lock_guard lock(job.error_mutex);
        if (!job.error) job.error = std::current_exception();
        job.failed.store(true);
      }
    }
  }

  // Spins briefly before sleeping: training runs many short kernels back to back, and
  // waking a sleeping thread through the kernel costs tens of microseconds each time.
  void spin_for_next_job(uint64_t seen) const noexcept {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (int i = 0;; ++i) {
      if (published_.load(std::memory_order_acquire) != seen) return;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      lock.unlock();
      spin_for_next_job(seen);
      lock.lock();
      wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_ != nullptr); });
      if (stopping_) return;
      seen = generation_;
      Job& job = *job_;
      ++job.active_workers;
      lock.unlock();
      work_on(job);
      lock.lock();
      if (--job.active_workers == 0) done_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;  // one job at a time
  std::mutex mutex_;         // guards job_, generation_, stopping_, active_workers
  std::condition_variable wake_, done_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the mutex
  bool stopping_ = false;
  static constexpr std::chrono::microseconds kSpinTime{50};
};

int parse_thread_count(std::string_view text, std::string_view source) {
  int n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  QKV_CHECK(ec == std::errc() && ptr == text.data() + text.size() && n >= 1 && n <= kMaxThreads,
            ConfigError, source, "='", text, "' is not a thread count (use an integer in 1..",
            kMaxThreads, ")");
  return n;
}

int default_thread_count() {
  if (const char* env = std::getenv("QKV_NUM_THREADS"))
    return parse_thread_count(env, "QKV_NUM_THREADS");
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw < kMaxThreads ? hw : kMaxThreads);
}

std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool> g_pool;

ThreadPool& global_pool() {
  std::lock_guard lock(g_pool_mutex);
  if (!g_pool) g_pool = std::make_unique<ThreadPool>(default_thread_count());
  return *g_pool;
}

}  // namespace

int num_threads() {
  return global_pool().size();
}

void set_num_threads(int n) {
  QKV_CHECK(n >= 1 && n <= kMaxThreads, ConfigError, "--threads ", n, " is out of range (use 1..",
            kMaxThreads, ")");
  QKV_CHECK(!t_in_region, InternalError, "set_num_threads called inside a parallel region");
  std::lock_guard lock(g_pool_mutex);
  if (g_pool && g_pool->size() == n) return;
  g_pool.reset();  // joins the old workers first
  g_pool = std::make_unique<ThreadPool>(n);
}

bool in_parallel_region() noexcept {
  return t_in_region;
}

void parallel_for(int64_t begin, int64_t end, int64_t grain, ChunkFn fn) {
  QKV_CHECK(grain >= 1, ValueError, "parallel_for: grain must be >= 1, got ", grain);
  if (end <= begin) return;
  if (t_in_region || num_chunks(begin, end, grain) == 1) return run_serially(begin, end, grain, fn);
  ThreadPool* pool = nullptr;
  try {
    pool = &global_pool();
  } catch (const ConfigError&) {
    // A malformed QKV_NUM_THREADS: num_threads()/set_num_threads() report it to the
    // caller; noexcept kernels calling here must not terminate, so they run serially.
  }
  if (pool == nullptr || pool->size() == 1) return run_serially(begin, end, grain, fn);
  pool->run(begin, end, grain, fn);
}

}  // namespace qkv
