// write_file_atomically: content, replacement, retries, and above all that a save
// failing at any step leaves the previous file intact and no temporary file behind.
#include "qkv/io/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "io_test_util.h"
#include "qkv/io/fault_injection.h"

namespace qkv::io {
namespace {

using test::ScratchDir;
using test::throws_exactly;
using test::to_bytes;

// A payload of `size` bytes that differs at every position mod 251.
std::string pattern(std::size_t size, int seed) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = char((i * 7 + std::size_t(seed)) % 251);
  return s;
}

TEST(AtomicFile, WritesTheBytesAndLeavesNoTemporaryFile) {
  ScratchDir dir;
  const std::string content = pattern(1000, 1);
  write_file_atomically(dir / "model.bin", to_bytes(content));
  EXPECT_EQ(::qkv::testing::read_file(dir / "model.bin"), content);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.bin"});
}

TEST(AtomicFile, ReplacesAnExistingFileAndWritesEmptyFiles) {
  ScratchDir dir;
  ::qkv::testing::write_file(dir / "f", "previous content");
  write_file_atomically(dir / "f", to_bytes("new"));
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), "new");
  write_file_atomically(dir / "f", std::span<const std::byte>());
  EXPECT_TRUE(std::filesystem::exists(dir / "f"));
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), "");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, WriterGathersSmallWritesAndPassesLargeOnes) {
  ScratchDir dir;
  const std::string small = pattern(100, 2), large = pattern(3 << 20, 3);
  std::uint64_t reported = 0;
  write_file_atomically(dir / "f", [&](Writer& w) {
    for (int i = 0; i < 50; ++i) w.write(small.data(), small.size());
    w.write(large.data(), large.size());
    w.write(small.data(), small.size());
    reported = w.bytes_written();
  });
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += small;
  expected += large + small;
  EXPECT_EQ(reported, expected.size());
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), expected);
}

TEST(AtomicFile, RetriesShortWritesAndEintr) {
  ScratchDir dir;
  const std::string content = pattern(10000, 4);
  {
    testing::ShortWrites short_writes(333);  // 31 partial writes, each after an EINTR
    write_file_atomically(dir / "f", to_bytes(content));
  }
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), content);
}

// One attempted save under FailNthWrite(n).
struct Attempt {
  bool threw = false;
  std::string message;
  std::string content;  // of the target afterwards ("<missing>" when absent)
  std::vector<std::string> entries;
};

// Saves `content` to dir/"model.bin" with step n failing, until a save succeeds.
// Writes of at most 1 MiB (ShortWrites) make the 2.5 MiB payload take several write
// steps. Returns the failed attempts in step order.
std::vector<Attempt> fail_every_step(const ScratchDir& dir, const std::string& content,
                                     const std::string& previous) {
  std::vector<Attempt> failed;
  const auto path = dir / "model.bin";
  for (std::int64_t n = 1;; ++n) {
    if (n > 100) {
      ADD_FAILURE() << "the save never succeeded";
      break;
    }
    Attempt a;
    bool triggered = false;
    {
      testing::ShortWrites cap(1 << 20);
      testing::FailNthWrite fail(n);
      try {
        write_file_atomically(path, [&](Writer& w) {
          w.write(content.data(), 100);  // gathered, then flushed before the large write
          w.write(content.data() + 100, content.size() - 100);
        });
      } catch (const IoError& e) {
        a.threw = true;
        a.message = e.what();
      }
      triggered = fail.triggered();
    }
    if (!triggered) {
      EXPECT_FALSE(a.threw) << a.message;
      EXPECT_EQ(::qkv::testing::read_file(path), content);
      break;
    }
    a.content = std::filesystem::exists(path) ? ::qkv::testing::read_file(path) : "<missing>";
    a.entries = dir.entries();
    failed.push_back(a);
    // Put the previous state back for the next attempt.
    if (previous == "<missing>") {
      std::filesystem::remove(path);
    } else {
      ::qkv::testing::write_file(path, previous);
    }
  }
  return failed;
}

TEST(AtomicFile, PreviousFileSurvivesAFailureAtEveryStep) {
  ScratchDir dir;
  const std::string previous = pattern(5000, 5), content = pattern(5 << 19, 6);
  ::qkv::testing::write_file(dir / "model.bin", previous);
  const std::vector<Attempt> failed = fail_every_step(dir, content, previous);
  // open, >= 4 writes (100 bytes, then 1 MiB pieces), fsync, close, rename, open dir,
  // fsync dir.
  ASSERT_GE(failed.size(), 10u);
  const std::size_t after_rename = failed.size() - 2;  // open dir, fsync dir
  for (std::size_t i = 0; i < failed.size(); ++i) {
    SCOPED_TRACE("failing step " + std::to_string(i + 1));
    const Attempt& a = failed[i];
    EXPECT_TRUE(a.threw);
    EXPECT_NE(a.message.find((dir / "model.bin").string()), std::string::npos) << a.message;
    EXPECT_NE(a.message.find("No space left on device"), std::string::npos) << a.message;
    EXPECT_EQ(a.entries, std::vector<std::string>{"model.bin"});  // no temporary file
    if (i < after_rename) {
      EXPECT_TRUE(a.content == previous) << "the previous file was damaged";
      EXPECT_NE(a.message.find("previous file (if any) is unchanged"), std::string::npos);
    } else {
      // The rename happened: the new file is complete, and the caller hears that it
      // may not be durable yet.
      EXPECT_TRUE(a.content == content);
      EXPECT_NE(a.message.find("fsync of its directory"), std::string::npos) << a.message;
    }
  }
}

TEST(AtomicFile, NoFileAppearsWhenTheFirstSaveFails) {
  ScratchDir dir;
  const std::vector<Attempt> failed = fail_every_step(dir, pattern(5 << 19, 7), "<missing>");
  ASSERT_GE(failed.size(), 10u);
  for (std::size_t i = 0; i + 2 < failed.size(); ++i) {
    EXPECT_EQ(failed[i].content, "<missing>") << "step " << i + 1;
    EXPECT_TRUE(failed[i].entries.empty()) << "step " << i + 1;
  }
}

TEST(AtomicFile, ExceptionFromTheCallbackKeepsThePreviousFile) {
  ScratchDir dir;
  ::qkv::testing::write_file(dir / "f", "previous");
  EXPECT_THROW(write_file_atomically(dir / "f",
                                     [](Writer& w) {
                                       w.write("partial", 7);
                                       throw std::runtime_error("serialisation failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), "previous");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, MissingDirectoryRaisesIoErrorNamingIt) {
  ScratchDir dir;
  const auto missing = dir / "no_such_dir";
  EXPECT_TRUE(throws_exactly<IoError>(
      [&] { write_file_atomically(missing / "f", to_bytes("x")); },
      {"cannot write '" + (missing / "f").string() + "'", "in directory '" + missing.string() + "'",
       "No such file or directory"}));
}

TEST(AtomicFile, UnwritableDirectoryRaisesIoErrorNamingIt) {
  ScratchDir dir;
  const auto locked = dir / "locked";
  std::filesystem::create_directory(locked);
  ::qkv::testing::write_file(locked / "f", "previous");
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  const bool writable = ::access(locked.c_str(), W_OK) == 0;
  if (!writable) {
    EXPECT_TRUE(
        throws_exactly<IoError>([&] { write_file_atomically(locked / "f", to_bytes("x")); },
                                {"in directory '" + locked.string() + "'", "Permission denied"}));
    EXPECT_EQ(::qkv::testing::read_file(locked / "f"), "previous");
  }
  ::chmod(locked.c_str(), 0755);  // so the scratch directory can be removed
  if (writable) GTEST_SKIP() << "permissions do not apply to this user (root?)";
}

TEST(AtomicFile, TargetThatIsADirectoryRaisesIoError) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "d");
  EXPECT_TRUE(throws_exactly<IoError>([&] { write_file_atomically(dir / "d", to_bytes("x")); },
                                      {"renaming temporary file", (dir / "d").string()}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"d"});
}

// The kill test's window: while the pause lasts the complete temporary file sits next to
// the untouched previous target; afterwards the content is as without the pause.
TEST(AtomicFile, DelayBeforeRenameHoldsTheTemporaryFileAndChangesNothing) {
  ScratchDir dir;
  ::qkv::testing::write_file(dir / "f", "previous");
  const std::string content = pattern(3000, 8);
  testing::DelayBeforeRename delay(std::chrono::milliseconds(300));
  std::atomic<bool> done{false};
  std::thread saver([&] {
    write_file_atomically(dir / "f", to_bytes(content));
    done.store(true);
  });
  bool seen_window = false;
  while (!done.load() && !seen_window) {
    const std::vector<std::string> entries = dir.entries();
    std::error_code renamed_meanwhile;
    if (entries.size() == 2 && entries[1].rfind("f.tmp.", 0) == 0 &&
        std::filesystem::file_size(dir / entries[1], renamed_meanwhile) == content.size() &&
        !renamed_meanwhile) {
      seen_window = true;
      EXPECT_EQ(::qkv::testing::read_file(dir / "f"), "previous");
    }
  }
  saver.join();
  EXPECT_TRUE(seen_window) << "the complete temporary file was never seen before the rename";
  EXPECT_EQ(::qkv::testing::read_file(dir / "f"), content);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, DelayBeforeRenameRejectsOutOfRangeDelays) {
  EXPECT_THROW(testing::DelayBeforeRename(std::chrono::milliseconds(-1)), ValueError);
  EXPECT_THROW(testing::DelayBeforeRename(std::chrono::hours(2)), ValueError);
}

// What a process killed mid-save leaves is removed by the next run, and nothing else: not
// the temporary file of a live process (it may be saving now), not other names.
TEST(AtomicFile, RemoveStaleTemporariesRemovesOnlyThoseOfGoneProcesses) {
  ScratchDir dir;
  const std::string gone = "2147483646";  // above any pid_max: no such process
  const std::string self = std::to_string(::getpid()), parent = std::to_string(::getppid());
  const std::vector<std::string> kept = {
      "f",      "f.tmp." + parent + ".1", "f.tmp.x.1", "f.tmp.12", "f.tmp.12.",
      "f.tmpx", "g.tmp." + gone + ".0"};
  for (const std::string& name : kept) ::qkv::testing::write_file(dir / name, "x");
  ::qkv::testing::write_file(dir / ("f.tmp." + gone + ".0"), "stale");
  ::qkv::testing::write_file(dir / ("f.tmp." + self + ".3"),
                             "stale");  // an earlier process, same pid
  EXPECT_EQ(remove_stale_temporaries(dir / "f"), 2);
  std::vector<std::string> expected = kept;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(dir.entries(), expected);
  EXPECT_EQ(remove_stale_temporaries(dir / "no_such_dir" / "f"), 0);
}

TEST(AtomicFile, ConcurrentSavesToOnePathLeaveOneCompleteVersion) {
  ScratchDir dir;
  std::vector<std::string> versions;
  for (int t = 0; t < 4; ++t) versions.push_back(pattern(20000 + std::size_t(t), t));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) write_file_atomically(dir / "f", to_bytes(versions[size_t(t)]));
    });
  for (auto& th : threads) th.join();
  const std::string final_content = ::qkv::testing::read_file(dir / "f");
  EXPECT_NE(std::find(versions.begin(), versions.end(), final_content), versions.end());
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace qkv::io
