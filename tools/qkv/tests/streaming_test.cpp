// Streaming end to end: translate, score and attend answer a slow writer line by line.
// The program runs with its stdin and stdout on pipes; the test writes one line, waits
// (with a timeout, so a regression fails instead of hanging) for its output, and only then
// writes the next line, keeping stdin open throughout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "decode_tool_util.h"

namespace qkv {
namespace {

// The program with its stdin and stdout on pipes (stderr to a file in the test dir).
class Piped {
 public:
  Piped(const std::filesystem::path& dir, std::vector<std::string> args) {
    // A child that died early makes write() fail with EPIPE instead of killing the test.
    ::signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(in[0], STDIN_FILENO);
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open((dir / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(err, STDERR_FILENO);
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      if (::chdir(dir.c_str()) != 0) ::_exit(126);
      std::vector<char*> argv{const_cast<char*>(QKV_TOOL_PATH)};
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(QKV_TOOL_PATH, argv.data());
      ::_exit(127);
    }
    ::close(in[0]), ::close(out[1]);
    to_ = in[1], from_ = out[0];
  }
  ~Piped() {
    if (to_ >= 0) ::close(to_);
    ::close(from_);
    // Only a child still running: kill(-1, ...) would signal every process of the user.
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void write_line(const std::string& line) { write(line + "\n"); }
  void write(const std::string& text) {
    ASSERT_EQ(::write(to_, text.data(), text.size()), ssize_t(text.size()));
  }
  // Reads stdout until `done(output)`; false if `seconds` pass first (or stdout ends).
  template <class Done>
  bool wait_until(Done done, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done(out_)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd fd{from_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&fd, 1, int(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n <= 0) return false;
      out_.append(buf, size_t(n));
    }
    return true;
  }
  bool wait_for(const std::string& part, double seconds) {
    return wait_until([&](const std::string& out) { return contains(out, part); }, seconds);
  }
  bool wait_for_lines(ptrdiff_t n, double seconds) {
    return wait_until(
        [&](const std::string& out) { return std::count(out.begin(), out.end(), '\n') >= n; },
        seconds);
  }
  // Closes stdin and waits for the exit code.
  int finish() {
    ::close(to_);
    to_ = -1;
    wait_until([](const std::string&) { return false; }, 60);  // read to the end of stdout
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  const std::string& out() const { return out_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string out_;
};

// Generous: a tiny model translates a line in milliseconds, also under sanitizers.
constexpr double kSeconds = 60;

const std::string kLines[] = {"the red dog runs", "a small cat sits", "a man walks"};

// Each line's output must arrive while stdin is still open: with blocking 64 KiB reads all
// of them came at the end of input. One output line per input line (and per pair).
void expect_line_by_line(Piped& run, const std::string& name, const std::string& suffix = "") {
  for (size_t i = 0; i < std::size(kLines); ++i) {
    run.write_line(kLines[i] + suffix);
    ASSERT_TRUE(run.wait_for_lines(ptrdiff_t(i + 1), kSeconds))
        << name << ": no output for line " << i + 1 << " before the next was written";
  }
  EXPECT_EQ(run.finish(), 0) << name;
  EXPECT_EQ(std::count(run.out().begin(), run.out().end(), '\n'), ptrdiff_t(std::size(kLines)))
      << name << ": " << run.out();
}

TEST_F(DecodeToolTest, TranslateAndScoreAnswerEachLineBeforeTheNextArrives) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  {
    Piped run(dir_, {"translate", "--model", "tf", "--beam-size", "2"});
    expect_line_by_line(run, "translate");
  }
  {
    Piped run(dir_, {"translate", "--model", "tf", "--n-best", "1", "--beam-size", "1"});
    expect_line_by_line(run, "translate --n-best 1");
  }
  {
    Piped run(dir_, {"score", "--model", "tf"});
    expect_line_by_line(run, "score", " ||| der hund");
  }
}

// A line written in two parts: the line before it is not held back until the writer
// finishes it.
TEST_F(DecodeToolTest, TranslateDoesNotWaitForTheRestOfAHalfWrittenLine) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  Piped run(dir_, {"translate", "--model", "tf", "--beam-size", "1"});
  run.write(kLines[0] + "\nthe red");
  ASSERT_TRUE(run.wait_for_lines(1, kSeconds)) << "line 1 waited for line 2 to be finished";
  run.write(" dog runs\r\nno final newline");
  ASSERT_TRUE(run.wait_for_lines(2, kSeconds));
  EXPECT_EQ(run.finish(), 0);
  EXPECT_EQ(std::count(run.out().begin(), run.out().end(), '\n'), 3) << run.out();
}

TEST_F(DecodeToolTest, AttendShowsEachHeatmapBeforeTheNextLineArrives) {
  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::Additive);
  Piped run(dir_, {"attend", "--model", "rnn", "--beam-size", "1"});
  for (size_t i = 0; i < std::size(kLines); ++i) {
    run.write_line(kLines[i]);
    // Each heatmap is titled with its line number.
    ASSERT_TRUE(run.wait_for("line " + std::to_string(i + 1), kSeconds))
        << "attend: no heatmap for line " << i + 1 << " before the next was written";
  }
  EXPECT_EQ(run.finish(), 0);
}

}  // namespace
}  // namespace qkv
