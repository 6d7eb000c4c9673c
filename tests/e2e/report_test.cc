// `inferbench report`: a real sweep on serve-sim, the HTML report of it, and that page run in a
// headless Chromium (the DOM after its JavaScript ran, a screenshot), with a proxy trap that
// proves the page fetched nothing.
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <set>

#include "browser_util.h"
#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

std::string own_model() {
  return "sim-report-" + std::to_string(::getpid());
}

// Two configurations (two series: bf16 and fp8 labels) × three concurrencies, simple timing model.
// The head run (`head`) also has a third configuration whose `expect` fails (its one point is
// measured but invalid), and a recipe string that tries to close the page's data element.
std::string report_recipe(const std::string& fast_decode_ms, bool head) {
  auto key = [&](const std::string& name, const std::string& precision, const std::string& ms,
                 const std::string& concs, const std::string& extra) {
    return name + ":\n  image: inferbench/serve-sim\n  model: " + own_model() +
           "\n  model-prefix: sim\n  precision: " + precision +
           "\n  framework: serve-sim\n  runner: local\n  multinode: false\n" + extra +
           "  serve:\n"
           "    command: [inferbench, serve-sim, --timing-model, simple, --decode-base-ms, \"" +
           ms +
           "\",\n"
           "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\"]\n"
           "    env: { SIM_NOTE: \"</script><script>document.title='broken out'</script>\" }\n"
           "  workload: { prompts-per-conc: 4, min-prompts: 8, warmups-per-conc: 1 }\n"
           "  scenarios:\n"
           "    fixed-seq-len:\n"
           "    - isl: 32\n"
           "      osl: 32\n"
           "      search-space:\n"
           "      - { tp: 1, conc-list: [" +
           concs + "] }\n";
  };
  std::string text =
      key("sim-a", "bf16", fast_decode_ms, "1, 4, 8", "") + key("sim-b", "fp8", "4", "1, 4, 8", "");
  if (head) {
    text += key("sim-c", "fp8", "3", "2", "  expect:\n    server-metrics: ['sglang:']\n");
  }
  return text;
}

// Runs a sweep of `recipe_text` into dir/runs; returns the run's name. A sweep with an invalid
// point exits 1 (the head run's sim-c always; any run whose client was starved on a busy
// machine may too, which the assertions below take from the store instead of assuming).
std::string sweep(const TempDir& dir, const std::string& recipe_text, const std::string& tag) {
  const fs::path file = dir.path() / ("recipe-" + tag + ".yaml");
  std::ofstream(file) << recipe_text;
  auto r = run_inferbench(
      {"sweep", file.string(), "--runs-dir", (dir.path() / "runs").string(), "--startup-timeout",
       "30", "--point-timeout", "60", "--slice-duration", "0.1"},
      dir.path() / ("sweep-" + tag + ".log"));
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_TRUE(r.exit.code == 0 || r.exit.code == 1) << r.output;
  auto st = store::Store::open_existing(dir.path() / "runs" / "inferbench.db");
  EXPECT_TRUE(st.ok());
  auto runs = st->list_runs();
  EXPECT_TRUE(runs.ok() && !runs->empty());
  return runs->front().run.name;  // newest first
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The value of attribute `attr` of every element carrying data-point, in document order.
std::vector<double> point_attr(const std::string& dom, const std::string& attr) {
  std::vector<double> out;
  std::regex re("data-point=\"[^\"]+\" " + attr + "=\"([-0-9.e+]+)\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(std::stod((*it)[1].str()));
  }
  return out;
}

std::string axis_title(const std::string& dom) {
  std::smatch m;
  std::regex re("class=\"axis-title x-title\"[^>]*>([^<]*)<");
  return std::regex_search(dom, m, re) ? m[1].str() : "";
}

fs::path artifacts_dir() {
  if (const char* env = std::getenv("IB_ARTIFACTS_DIR"); env && *env) return env;
  // INFERBENCH_BIN is build/src/inferbench.
  return fs::path(INFERBENCH_BIN).parent_path().parent_path() / "artifacts";
}

// The page outside its data block: what the browser would act on. Only the SVG namespace name
// may look like a URL there (it is an identifier, never fetched).
std::string page_code(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"ib-data\">";
  const size_t a = html.find(open);
  const size_t b = html.find("</script>", a);
  std::string code = a == std::string::npos ? html : html.substr(0, a) + html.substr(b);
  for (size_t at; (at = code.find("http://www.w3.org/2000/svg")) != std::string::npos;) {
    code.erase(at, 26);
  }
  return code;
}

TEST(Report, UsageErrorsNameWhatIsWrong) {
  TempDir dir;
  const fs::path db = dir.path() / "runs" / "inferbench.db";
  // No database.
  auto r = run_inferbench({"report", "r1", "--db", db.string()}, dir.path() / "a.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find(db.string()), std::string::npos) << r.output;
  {
    auto st = store::Store::open(db);
    ASSERT_TRUE(st.ok());
    store::RunRecord run;
    run.name = "empty-run";
    run.tool_version = INFERBENCH_VERSION;
    ASSERT_TRUE(st->begin_run(run).ok());
  }
  r = run_inferbench({"report", "no-such-run", "--db", db.string()}, dir.path() / "b.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no run 'no-such-run'"), std::string::npos) << r.output;
  r = run_inferbench({"report", "empty-run", "--db", db.string()}, dir.path() / "c.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("'empty-run'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no points"), std::string::npos) << r.output;
  r = run_inferbench({"report", "empty-run", "--baseline", "gone", "--db", db.string()},
                     dir.path() / "d.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  r = run_inferbench({"report", "--db", db.string()}, dir.path() / "e.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;  // RUN is required
}

// Cost: about 25 s, most of it two headless Chromium starts (the page is rendered and its script
// run, as a person's browser would); a smaller sweep would not make it cheaper.
TEST(Report, SweepReportAndChromium) {
  TempDir dir;
  const std::string base = sweep(dir, report_recipe("2", false), "base");
  const std::string head = sweep(dir, report_recipe("1", true), "head");
  ASSERT_NE(base, head);
  const fs::path db = dir.path() / "runs" / "inferbench.db";
  auto st = store::Store::open_existing(db);
  ASSERT_TRUE(st.ok());
  auto head_run = st->find_run(head);
  ASSERT_TRUE(head_run.ok() && head_run->has_value());
  auto stored = st->points((*head_run)->id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 7u);
  auto base_run = st->find_run(base);
  ASSERT_TRUE(base_run.ok() && base_run->has_value());
  auto base_points = st->points((*base_run)->id);
  ASSERT_TRUE(base_points.ok());
  // Drawn as invalid: measured, but not a success or with a validity reason. sim-c's expect
  // fails, so it is one of them.
  size_t invalid = 0;
  for (const auto& p : *stored) {
    const bool valid = metrics::is_success(p.status) && p.validity.valid();
    const bool measured = !p.result.empty() && !p.headline.empty();
    invalid += !valid && measured;
    if (p.concurrency == 2) {
      EXPECT_EQ(p.status, metrics::PointStatus::kInvalid) << p.error;
    }
  }
  ASSERT_GE(invalid, 1u);

  // An output in a "folder" that is a file: a usage error naming it, before any work, nothing
  // left behind.
  const fs::path blocked = dir.path() / "file-not-folder";
  std::ofstream(blocked) << "x";
  auto bad =
      run_inferbench({"report", head, "--db", db.string(), "-o", (blocked / "r.html").string()},
                     dir.path() / "bad.log");
  EXPECT_EQ(bad.exit.code, 2) << bad.output;
  EXPECT_NE(bad.output.find((blocked / "r.html").string()), std::string::npos) << bad.output;

  const fs::path single = dir.path() / "r.html";
  auto r = run_inferbench({"report", head, "--db", db.string(), "-o", single.string()},
                          dir.path() / "report.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const fs::path cmp = dir.path() / "cmp.html";
  r = run_inferbench({"report", head, "--baseline", base, "--db", db.string(), "-o", cmp.string()},
                     dir.path() / "report-cmp.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  {
    // The head run as its own baseline, named by its id: no comparison (issue 30).
    auto reader = store::Store::open_read_only(db);
    ASSERT_TRUE(reader.ok());
    auto found = reader->find_run(head);
    ASSERT_TRUE(found.ok() && found->has_value());
    auto self = run_inferbench({"report", head, "--baseline", std::to_string((*found)->id), "--db",
                                db.string(), "-o", (dir.path() / "self.html").string()},
                               dir.path() / "report-self.log");
    EXPECT_EQ(self.exit.code, 2) << self.output;
    EXPECT_NE(self.output.find("both reported and the --baseline"), std::string::npos)
        << self.output;
  }

  auto html = read_file(single);
  ASSERT_TRUE(html.ok());
  EXPECT_NE(html->find("default-src 'none'; style-src 'unsafe-inline'; script-src "
                       "'unsafe-inline'; img-src data:"),
            std::string::npos);
  const std::string code = page_code(*html);
  EXPECT_EQ(code.find("http://"), std::string::npos);
  EXPECT_EQ(code.find("https://"), std::string::npos);
  EXPECT_EQ(code.find("<link"), std::string::npos);
  EXPECT_EQ(code.find(" src="), std::string::npos);

  REQUIRE_CHROMIUM(chromium);
  Browser browser{*chromium, dir.path()};
  std::vector<std::string> leaks;

  // The trap works: a page that does fetch is seen (else "no request" would prove nothing).
  const fs::path probe = dir.path() / "probe.html";
  std::ofstream(probe) << "<!DOCTYPE html><img src=\"http://inferbench-probe.example/x.png\">";
  std::vector<std::string> probe_requests;
  browser.load("file://" + probe.string(), probe_requests);
  EXPECT_GE(probe_requests.size(), 1u) << "the proxy trap did not see a page's fetch";

  const std::string dom = browser.load("file://" + single.string(), leaks);
  ASSERT_NE(dom.find("data-point="), std::string::npos) << dom.substr(0, 2000);
  // The hostile recipe string stayed data: the page's scripts ran and nothing else did.
  EXPECT_EQ(dom.find("broken out</title>"), std::string::npos);
  // One marker per stored point; a frontier line per series (two: bf16 and fp8).
  EXPECT_EQ(count(dom, "data-point=\""), stored->size());
  std::set<std::string> series;
  std::regex fr("class=\"frontier head\" data-series=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), fr); it != std::sregex_iterator();
       ++it) {
    series.insert((*it)[1].str());
  }
  EXPECT_EQ(series.size(), 2u);
  // The invalid point is drawn, marked, counted and on no frontier.
  EXPECT_EQ(count(dom, "class=\"pt head invalid\""), invalid);
  std::regex inv(
      "class=\"pt head invalid\" data-point=\"[^\"]+\" data-x=\"[^\"]+\" "
      "data-y=\"[^\"]+\" data-frontier=\"0\"");
  EXPECT_EQ(static_cast<size_t>(std::distance(std::sregex_iterator(dom.begin(), dom.end(), inv),
                                              std::sregex_iterator())),
            invalid);
  EXPECT_NE(dom.find("id=\"invalid-count\""), std::string::npos);
  EXPECT_NE(dom.find(fmt::format("{} invalid (\u2715, excluded from frontiers)", invalid)),
            std::string::npos);
  EXPECT_EQ(count(dom, "data-row=\""), stored->size());  // the points table
  EXPECT_NE(dom.find("id=\"tail-semantics\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"dl-csv\""), std::string::npos);
  const std::string title50 = axis_title(dom);
  EXPECT_NE(title50.find("median (p50)"), std::string::npos) << title50;
  const auto x50 = point_attr(dom, "data-x");
  ASSERT_EQ(x50.size(), stored->size());

  // The percentile selector, from the URL hash: the axis says p99 and the values move to the
  // slow tail (interactivity at p99 <= at the median, for every point).
  const std::string dom99 = browser.load("file://" + single.string() + "#pct=p99", leaks);
  const std::string title99 = axis_title(dom99);
  EXPECT_NE(title99.find("p99"), std::string::npos) << title99;
  const auto x99 = point_attr(dom99, "data-x");
  ASSERT_EQ(x99.size(), x50.size());
  bool moved = false;
  for (size_t i = 0; i < x50.size(); ++i) {
    EXPECT_LE(x99[i], x50[i] * (1 + 1e-9)) << i;
    moved |= x99[i] < x50[i];
  }
  EXPECT_TRUE(moved);
  // x = E2E latency: lower is better, seconds.
  const std::string dom_e2e = browser.load("file://" + single.string() + "#x=e2el", leaks);
  EXPECT_NE(axis_title(dom_e2e).find("End-to-end latency at median (p50) (s)"), std::string::npos)
      << axis_title(dom_e2e);

  // Comparison: both runs overlaid, deltas, matched concurrencies, confounders.
  const std::string dcmp = browser.load("file://" + cmp.string(), leaks);
  EXPECT_EQ(count(dcmp, "data-point=\""), stored->size() + base_points->size());
  EXPECT_GE(count(dcmp, "class=\"frontier base\""), 1u);
  EXPECT_GE(count(dcmp, "class=\"frontier head\""), 1u);
  EXPECT_NE(dcmp.find("class=\"matched-table\""), std::string::npos);
  EXPECT_NE(dcmp.find("class=\"iso-table\""), std::string::npos);
  EXPECT_NE(dcmp.find("id=\"confounders\""), std::string::npos);

  // A point's detail from the hash: its telemetry charts and effective configuration.
  const std::string first = "hp" + std::to_string(stored->front().id);
  // At 1,400 px the points tables fit the page, the invalid point's reasons and the comparison's
  // Run column included (issue 30: the last column was cut); narrower, the frame says it scrolls.
  const std::string kPointsOverflow = "data-overflow=\"yes\"><table class=\"points\"";
  EXPECT_EQ(dom.find(kPointsOverflow), std::string::npos);
  EXPECT_EQ(dcmp.find(kPointsOverflow), std::string::npos);
  EXPECT_NE(browser.load("file://" + cmp.string(), leaks, {}, 700).find(kPointsOverflow),
            std::string::npos);
  const std::string ddet = browser.load("file://" + cmp.string() + "#point=" + first, leaks);
  EXPECT_NE(ddet.find("data-point-detail=\"" + first + "\""), std::string::npos);
  EXPECT_GE(count(ddet, "class=\"timeseries\""), 4u);
  EXPECT_NE(ddet.find("Effective configuration"), std::string::npos);
  // Tokens, not events: per-token ITL beside the inter-chunk latency, and the stream's cadence.
  EXPECT_NE(ddet.find("inter-chunk latency, per event (ms)"), std::string::npos);
  EXPECT_NE(ddet.find("tokens per event"), std::string::npos);

  EXPECT_TRUE(leaks.empty()) << "the report fetched: " << fmt::format("{}", fmt::join(leaks, "\n"));

  // Screenshots for people (docs/report.md says where).
  const fs::path art = artifacts_dir();
  fs::create_directories(art);
  browser.load("file://" + cmp.string(), leaks, art / "report.png");
  browser.load("file://" + cmp.string() + "#point=" + first, leaks, art / "report-detail.png");
  EXPECT_TRUE(fs::exists(art / "report.png"));
  EXPECT_GT(fs::file_size(art / "report.png"), 10000u);
  EXPECT_TRUE(leaks.empty()) << "the report fetched: " << fmt::format("{}", fmt::join(leaks, "\n"));
}

// A disaggregated point's detail: where TTFT went by part, which side requests waited for, each
// role's energy, and each role's queues over time.
TEST(Report, DisaggregatedPointShowsItsRoles) {
  TempDir dir;
  const std::string worker =
      "[inferbench, serve-sim, --role, {0}, --timing-model, roofline, --hardware, H100, "
      "--model-preset, llama-3.1-8b, --time-scale, \"20\", --power-model, --model, "
      "\"{{served-model}}\", --host, \"{{host}}\", --port, \"{{port}}\"]";
  const std::string text = fmt::format(
      "dis:\n  image: inferbench/serve-sim\n  model: {0}\n  model-prefix: sim\n"
      "  precision: bf16\n  framework: serve-sim\n  runner: local\n  multinode: true\n"
      "  disagg: true\n  kv-p2p-transfer: sim-tcp\n  serve:\n    prefill:\n      command: {1}\n"
      "    decode:\n      command: {2}\n    router:\n"
      "      command: [inferbench, serve-sim, --role, router, --model, \"{{served-model}}\",\n"
      "                --prefill, \"{{prefill-urls}}\", --decode, \"{{decode-urls}}\",\n"
      "                --host, \"{{host}}\", --port, \"{{port}}\"]\n"
      "  workload: {{ prompts-per-conc: 4, min-prompts: 16, warmups-per-conc: 1 }}\n"
      "  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 64\n      search-space:\n"
      "      - {{ conc-list: [4], prefill: {{ num-worker: 1, tp: 1 }}, decode: {{ num-worker: 1, "
      "tp: 1 }} }}\n",
      own_model(), fmt::format(fmt::runtime(worker), "prefill"),
      fmt::format(fmt::runtime(worker), "decode"));
  const fs::path file = dir.path() / "dis.yaml";
  std::ofstream(file) << text;
  const fs::path runs = dir.path() / "runs";
  auto s = run_inferbench(
      {"sweep", file.string(), "--runs-dir", runs.string(), "--startup-timeout", "30"},
      dir.path() / "sweep.log");
  ASSERT_EQ(s.exit.code, 0) << s.output;
  auto st = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(st.ok());
  auto list = st->list_runs();
  ASSERT_TRUE(list.ok() && list->size() == 1u);
  auto points = st->points(list->front().run.id);
  ASSERT_TRUE(points.ok() && points->size() == 1u);
  const fs::path page = dir.path() / "dis.html";
  auto r = run_inferbench({"report", list->front().run.name, "--db",
                           (runs / "inferbench.db").string(), "-o", page.string()},
                          dir.path() / "report.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  REQUIRE_CHROMIUM(chromium);
  Browser browser{*chromium, dir.path()};
  std::vector<std::string> leaks;
  const std::string uid = "hp" + std::to_string(points->front().id);
  const std::string dom = browser.load("file://" + page.string() + "#point=" + uid, leaks);
  ASSERT_NE(dom.find("data-disagg=\"1\""), std::string::npos) << dom.substr(0, 3000);
  EXPECT_NE(dom.find("data-ttft-parts=\"1\""), std::string::npos);
  for (const char* part : {"prefill queue", "kv transfer", "first decode", "unattributed"}) {
    EXPECT_NE(dom.find(fmt::format("<td>{}</td>", part)), std::string::npos) << part;
  }
  EXPECT_NE(dom.find("rate match"), std::string::npos);
  EXPECT_NE(dom.find("J/input token"), std::string::npos);  // the prefill role's energy
  EXPECT_NE(dom.find("Requests at the decode workers"), std::string::npos);
  EXPECT_TRUE(leaks.empty()) << fmt::format("{}", fmt::join(leaks, "\n"));
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// An evals-only run of a serve-sim that answers 80% of GSM8K right, gated at 0.9: the report shows
// its Accuracy section (both filters with standard errors, the gate) and the failed-gate badge,
// and draws no throughput panel for it.
TEST(Report, AccuracySectionAndGateBadge) {
  TempDir dir;
  const std::string text =
      "simacc:\n  image: inferbench/serve-sim\n  model: " + own_model() +
      "\n  model-prefix: sim\n  precision: bf16\n  framework: serve-sim\n  runner: local\n"
      "  multinode: false\n  serve:\n"
      "    command: [inferbench, serve-sim, --timing-model, simple, --time-scale, \"50\",\n"
      "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\",\n"
      "              --gsm8k-correct, \"0.8\"]\n"
      "  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n"
      "      search-space:\n      - { tp: 1, conc-list: [16] }\n";
  const fs::path file = dir.path() / "acc.yaml";
  std::ofstream(file) << text;
  const fs::path runs = dir.path() / "runs";
  auto s = run_inferbench({"sweep", file.string(), "--runs-dir", runs.string(), "--labels",
                           "evals-only", "--eval-limit", "50", "--min-score", "0.9"},
                          dir.path() / "sweep.log");
  ASSERT_EQ(s.exit.code, 1) << s.output;  // the gate failed
  auto st = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(st.ok());
  auto list = st->list_runs();
  ASSERT_TRUE(list.ok() && list->size() == 1u);
  const fs::path page = dir.path() / "acc.html";
  auto r = run_inferbench({"report", list->front().run.name, "--db", (runs / "inferbench.db").string(),
                           "-o", page.string()},
                          dir.path() / "report.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  REQUIRE_CHROMIUM(chromium);
  Browser browser{*chromium, dir.path()};
  std::vector<std::string> leaks;
  const std::string dom = browser.load("file://" + page.string(), leaks);
  ASSERT_NE(dom.find("id=\"accuracy\""), std::string::npos) << dom.substr(0, 3000);
  EXPECT_EQ(count(dom, "data-eval=\""), 1u);
  EXPECT_NE(dom.find("accuracy gate failed: 1 of 1 eval"), std::string::npos);
  // 40 of 50 right: 0.8000 ± sqrt(50 x 0.8 x 0.2 / 49 / 50) = 0.0571.
  EXPECT_NE(dom.find("0.8000 ± 0.0571"), std::string::npos);
  EXPECT_NE(dom.find(">FAILED<"), std::string::npos);
  EXPECT_EQ(count(dom, "data-point=\""), 0u);  // no throughput marker for an eval
  EXPECT_TRUE(leaks.empty()) << fmt::format("{}", fmt::join(leaks, "\n"));
}

}  // namespace
}  // namespace ib::e2e
