// The HTML report as a browser shows it: `qkv compare --report` on a tiny corpus, then
// headless Chromium (Debian's `chromium`, installed by scripts/setup.sh) renders the page.
// Checked: the DOM after the page's script ran has the table rows, the chart and the
// heatmap cells; nothing is logged to the console (an uncaught error would be); hovering
// a target word shades source words; the finding line comes first, the method is
// collapsed, the table fits a 1200 px window with no number broken. A screenshot is left in the
// test's output directory (QKV_TEST_OUTPUT_DIR) for a human to look at.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "experiment_tool_util.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

bool have_chromium() {
  return std::system("command -v chromium > /dev/null 2>&1") == 0;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Runs headless Chromium on `page` with `flags`; stdout (the DOM for --dump-dom) and
// stderr (the log, with console messages) go to files in `work`.
ToolResult chromium(const fs::path& work, const fs::path& page, const std::string& flags) {
  const std::string cmd = "cd '" + work.string() +
                          "' && timeout 120 chromium --headless --disable-gpu --no-sandbox "
                          "--no-first-run --user-data-dir='" +
                          (work / "profile").string() + "' --enable-logging=stderr --v=0 " + flags +
                          " 'file://" + fs::absolute(page).string() +
                          "' > dom.html 2> chromium.log";
  const int status = std::system(cmd.c_str());
  return {.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
          .out = read_text(work / "dom.html"),
          .err = read_text(work / "chromium.log")};
}

// Console messages Chromium logged (a page error shows as "Uncaught ...").
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (has(line, ":CONSOLE") || has(line, "Uncaught")) out.push_back(line);
  return out;
}

// The page with two probes: an error recorder as the first script of <head> (so it sees
// the report's own script fail), and after the report's script a hover on the first target
// word whose outcome is written into the DOM.
std::string with_probes(std::string html) {
  const std::string recorder =
      "<script>window.addEventListener('error', function (e) {"
      " document.documentElement.setAttribute('data-js-error', String(e.message)); });"
      "</script>";
  const std::string hover =
      "<script>(function () {"
      " var word = document.querySelector('.sample .tw');"
      " if (!word) { document.body.setAttribute('data-hover', 'no target word'); return; }"
      " word.dispatchEvent(new MouseEvent('mouseenter'));"
      " var sample = word.closest('.sample');"
      " var shaded = Array.prototype.filter.call(sample.querySelectorAll('.sw'),"
      "   function (s) { return s.style.backgroundColor !== ''; }).length;"
      " var active = word.classList.contains('active');"
      " document.body.setAttribute('data-hover', 'shaded=' + shaded + ' active=' + active);"
      "})();</script>";
  // The page's layout at the window's width: the finding right under the title, the
  // method collapsed, the table inside the page without a scroll bar, and no number
  // broken over two lines (a text range with more than one line box).
  const std::string layout =
      "<script>(function () {"
      " var first = document.querySelector('h1').nextElementSibling;"
      " var finding = first && first.className === 'finding' ? first.textContent : '';"
      " var wrap = document.querySelector('.table-wrap');"
      " var fits = !!wrap && wrap.scrollWidth <= wrap.clientWidth + 1 &&"
      "   wrap.getBoundingClientRect().right <= window.innerWidth;"
      " var broken = 0;"
      " document.querySelectorAll('td').forEach(function (td) {"
      "   var r = document.createRange(); r.selectNodeContents(td);"
      "   if (r.getClientRects().length > 1) broken++; });"
      " var method = document.querySelector('details.method');"
      " document.body.setAttribute('data-layout', 'fits=' + fits + ' broken=' + broken +"
      "   ' method=' + (method ? (method.open ? 'open' : 'closed') : 'none'));"
      " document.body.setAttribute('data-finding', finding);"
      "})();</script>";
  html.insert(html.find("<head>") + 6, recorder);
  html.insert(html.rfind("</body>"), hover + layout);
  return html;
}

TEST(ReportRender, ChromiumShowsTableChartAndHeatmapsWithoutConsoleErrors) {
  if (!have_chromium())
    GTEST_SKIP() << "chromium is not installed, so the report was not rendered: install it "
                    "with `apt-get install chromium` (scripts/setup.sh does)";
  const fs::path dir = make_corpus_dir("report_render");
  std::vector<std::string> args = tiny_compare_args("out");
  args.push_back("--report");
  const ToolResult compare = run_qkv(dir, args);
  ASSERT_EQ(compare.code, 0) << compare.err;

  const fs::path shown = fs::path(QKV_TEST_OUTPUT_DIR);
  fs::create_directories(shown);
  fs::copy_file(dir / "out" / "report.html", shown / "report.html",
                fs::copy_options::overwrite_existing);

  // The page as it is: its DOM after the script ran, and its console.
  const ToolResult page = chromium(dir, shown / "report.html", "--dump-dom");
  ASSERT_EQ(page.code, 0) << page.err;
  EXPECT_TRUE(console_lines(page.err).empty()) << "console output:\n"
                                               << console_lines(page.err).front();
  const std::string& dom = page.out;
  EXPECT_TRUE(has(dom, "<h1>qkv comparison</h1>")) << dom.substr(0, 500);
  for (const char* v : {"rnn:none", "rnn:additive", "transformer"})
    EXPECT_EQ(count(dom, std::string("<tr><td>") + v + "</td>"), 1u) << v;
  EXPECT_EQ(count(dom, "class=\"qkv-chart\""), 1u);
  EXPECT_EQ(count(dom, "<svg") - count(dom, "class=\"qkv-chart\""),
            count(dom, "class=\"qkv-heatmap\""));
  EXPECT_GE(count(dom, "class=\"sample\""), 2u);  // two variants with attention
  EXPECT_GT(count(dom, "<rect class=\"cell\""), 10u);

  // Hovering a target word shades source words.
  const fs::path probed = dir / "probed.html";
  { std::ofstream(probed) << with_probes(read_text(shown / "report.html")); }
  const ToolResult hover = chromium(dir, probed, "--window-size=1200,2400 --dump-dom");
  ASSERT_EQ(hover.code, 0) << hover.err;
  // The recorder's own text names the attribute in single quotes; set, it has a value.
  EXPECT_FALSE(has(hover.out, "data-js-error=\"")) << hover.out.substr(0, 300);
  // data-hover="shaded=N active=true"
  const size_t at = hover.out.find("data-hover=\"shaded=");
  ASSERT_NE(at, std::string::npos) << "the hover probe did not run";
  const std::string probe = hover.out.substr(at + 19, hover.out.find('"', at + 19) - at - 19);
  EXPECT_GT(std::stoi(probe), 0) << "no source word was shaded: " << probe;
  EXPECT_TRUE(has(probe, "active=true")) << probe;

  // What the page says first, and how its table sits at a 1200 px window.
  EXPECT_TRUE(has(hover.out, "data-layout=\"fits=true broken=0 method=closed\""))
      << hover.out.substr(hover.out.find("data-layout"), 80);
  const size_t f = hover.out.find("data-finding=\"");
  ASSERT_NE(f, std::string::npos);
  const std::string finding = hover.out.substr(f + 14, hover.out.find('"', f + 14) - f - 14);
  EXPECT_TRUE(has(finding, " is best: ") || has(finding, " tie for best: ") ||
              has(finding, "no variant scored"))
      << finding;
  EXPECT_TRUE(has(compare.out, finding)) << "qkv compare prints the same finding:\n" << compare.out;

  // A screenshot for people.
  fs::remove(shown / "report.png");
  const ToolResult shot =
      chromium(dir, shown / "report.html",
               "--window-size=1200,2400 --screenshot='" + (shown / "report.png").string() + "'");
  EXPECT_EQ(shot.code, 0) << shot.err;
  EXPECT_GT(fs::file_size(shown / "report.png"), 10000u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qkv
