#include "verify/env_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/temp_dir.h"

// Real processes run through the tracer. C reads come from envprobe (testdata/envprobe.c), which
// calls getenv on the names it is given: deterministic, unlike a shell (which reads `environ`
// directly) or an interpreter's own start-up reads.
namespace ib::verify {
namespace {
namespace fs = std::filesystem;
using ib::TempDir;

EnvTraceAssets built_assets() {
  return {IB_ENVTRACE_LIB, IB_ENVTRACE_HOOK_DIR};
}

// Runs argv to completion with `env` on top of the inherited environment.
ExitInfo run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const fs::path& log) {
  auto child = ChildProcess::spawn({argv, env, log, true});
  EXPECT_TRUE(child.ok()) << (child.ok() ? "" : child.error().message);
  if (!child.ok()) return ExitInfo{127, 0, false};
  // A bound on a hung child, not a timing assertion.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(25);
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto info = child->stop(std::chrono::milliseconds(100));
  return info;
}

struct Traced {
  ExitInfo exit;
  EnvTraceReport report;
  std::string log;
};

Traced run_traced(const std::vector<std::string>& argv, std::map<std::string, std::string> env,
                  const std::vector<std::string>& watch, const TempDir& tmp,
                  const std::vector<std::string>& write_prefixes = {}) {
  fs::path trace = tmp.path() / "trace";
  add_env_trace(built_assets(), trace, watch, &env, write_prefixes);
  Traced t;
  t.exit = run(argv, env, tmp.path() / "log.txt");
  t.report = collect_env_trace(trace, watch);
  auto log = read_file(tmp.path() / "log.txt");
  if (log.ok()) t.log = *log;
  return t;
}

std::string probe_path() {
  return IB_ENVTRACE_PROBE;
}

// python3 on PATH (what a server would run), or nullopt when there is none.
std::optional<std::string> python3() {
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const fs::path candidate = fs::path(dir) / "python3";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

TEST(EnvTraceC, GetenvReadsRecordedAndUnreadVariableIsNeverRead) {
  TempDir tmp;
  auto t =
      run_traced({probe_path(), "get:IBT_A", "sget:IBT_B", "get:IBT_UNWATCHED"},
                 {{"IBT_A", "one"}, {"IBT_UNWATCHED", "x"}}, {"IBT_A", "IBT_B", "IBT_NEVER"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  const auto& r = t.report;
  EXPECT_TRUE(r.c_tracer_loaded);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.reads.count("IBT_A"), 1u);
  ASSERT_EQ(r.reads.at("IBT_A").size(), 1u);
  const EnvRead& a = r.reads.at("IBT_A")[0];
  EXPECT_EQ(a.function, "getenv");
  EXPECT_TRUE(a.was_set);
  EXPECT_EQ(a.value, "one");
  EXPECT_EQ(a.exe, fs::canonical(probe_path()).string());
  EXPECT_EQ(a.ppid, ::getpid());
  EXPECT_NE(a.cmdline.find("sget:IBT_B"), std::string::npos);
  ASSERT_EQ(r.reads.at("IBT_B").size(), 1u);
  EXPECT_EQ(r.reads.at("IBT_B")[0].function, "secure_getenv");
  EXPECT_FALSE(r.reads.at("IBT_B")[0].was_set);
  EXPECT_EQ(r.reads.count("IBT_UNWATCHED"), 0u);
  EXPECT_EQ(r.never_read, std::vector<std::string>{"IBT_NEVER"});

  auto json = r.to_json();
  EXPECT_EQ(json.at("variables").at("IBT_A").at("read"), true);
  EXPECT_EQ(json.at("variables").at("IBT_A").at("readers").at(0).at("value"), "one");
  EXPECT_EQ(json.at("variables").at("IBT_NEVER").at("read"), false);
  EXPECT_EQ(json.at("never_read"), (boost::json::array{"IBT_NEVER"}));
  EXPECT_EQ(json.at("tracer_loaded").at("c"), true);
  // The process said it ran; nothing it did hides a read.
  ASSERT_EQ(r.processes.size(), 1u);
  const TracedProcess& p = r.processes.begin()->second;
  EXPECT_TRUE(p.traced);
  EXPECT_FALSE(p.shell);
  EXPECT_EQ(p.exe, fs::canonical(probe_path()).string());
  EXPECT_TRUE(r.blind_spots().empty());
  EXPECT_TRUE(json.at("blind_spots").as_array().empty());
  EXPECT_EQ(json.at("processes").as_array().size(), 1u);
}

// The blind spots of docs/env-trace.md, each seen as such (issue 30): a shell, a process that
// cleared or copied its environment, a process of the server that the tracer never heard from.
TEST(EnvTraceC, AShellIsABlindSpot) {
  TempDir tmp;
  auto t = run_traced({"/bin/sh", "-c", "exec \"$0\" get:IBT_A", probe_path()}, {{"IBT_A", "1"}},
                      {"IBT_A", "IBT_B"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  const auto blind = t.report.blind_spots();
  ASSERT_EQ(blind.size(), 1u);
  EXPECT_NE(blind[0].what.find("a shell"), std::string::npos);
  EXPECT_NE(blind[0].exe.find("sh"), std::string::npos) << blind[0].exe;
  EXPECT_EQ(t.report.reads.at("IBT_A").size(), 1u);  // the program it became is traced as ever
}

TEST(EnvTraceCollect, AProcessTheTracerNeverHeardFromIsABlindSpot) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "t");
  TracedProcess unseen;
  unseen.pid = 4242;
  unseen.exe = "/usr/local/bin/static-engine";
  unseen.cmdline = "static-engine --port 8000";
  auto r = collect_env_trace(tmp.path() / "t", {"X"}, {unseen});
  const auto blind = r.blind_spots();
  ASSERT_EQ(blind.size(), 1u);
  EXPECT_EQ(blind[0].pid, 4242);
  EXPECT_NE(blind[0].text().find("not traced"), std::string::npos) << blind[0].text();
  EXPECT_FALSE(r.processes.at(4242).traced);
}

TEST(EnvTraceSecrets, CredentialValuesNeverReachTheTraceOrTheReport) {
  TempDir tmp;
  const std::string secret = "hf_s3cr3t_value";
  auto t = run_traced({probe_path(), "get:HF_TOKEN", "get:IBT_A"},
                      {{"HF_TOKEN", secret}, {"IBT_A", "visible"}}, {"HF_TOKEN", "IBT_A"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  ASSERT_EQ(t.report.reads.count("HF_TOKEN"), 1u);  // the read itself is recorded
  EXPECT_TRUE(t.report.reads.at("HF_TOKEN")[0].was_set);
  EXPECT_EQ(boost::json::serialize(t.report.to_json()).find(secret), std::string::npos);
  EXPECT_EQ(t.report.reads.at("IBT_A")[0].value, "visible");
  if (auto python = python3()) {
    TempDir py;
    auto p = run_traced({*python, "-c", "import os; os.environ['API_KEY']; os.getenv('IBT_A')"},
                        {{"API_KEY", secret}, {"IBT_A", "visible"}}, {"API_KEY", "IBT_A"}, py);
    ASSERT_EQ(p.exit.code, 0) << p.log;
    ASSERT_EQ(p.report.reads.count("API_KEY"), 1u);
    EXPECT_EQ(p.report.reads.at("API_KEY")[0].value, "");
  }
  // Nothing on disk holds it either.
  for (const auto& e : fs::recursive_directory_iterator(tmp.path() / "trace")) {
    auto text = read_file(e.path());
    if (text.ok()) {
      EXPECT_EQ(text->find(secret), std::string::npos) << e.path();
    }
  }
  EXPECT_TRUE(looks_secret("OPENAI_API_KEY"));
  EXPECT_TRUE(looks_secret("hf_token"));
  EXPECT_FALSE(looks_secret("SGLANG_USE_AITER"));
}

TEST(EnvTraceC, ReadsOfAForkExecGrandchildAreRecorded) {
  TempDir tmp;
  auto t = run_traced({probe_path(), "get:IBT_A", "--", probe_path(), "get:IBT_B", "get:IBT_A"},
                      {{"IBT_B", "2"}}, {"IBT_A", "IBT_B"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  const auto& r = t.report;
  ASSERT_EQ(r.reads.at("IBT_B").size(), 1u);
  ASSERT_EQ(r.reads.at("IBT_A").size(), 2u);  // once in each process
  const EnvRead& grandchild = r.reads.at("IBT_B")[0];
  EXPECT_TRUE(grandchild.was_set);
  EXPECT_EQ(grandchild.value, "2");
  std::set<int> a_pids{r.reads.at("IBT_A")[0].pid, r.reads.at("IBT_A")[1].pid};
  EXPECT_EQ(a_pids.count(grandchild.pid), 1u);
  EXPECT_EQ(a_pids.count(grandchild.ppid), 1u) << "the grandchild's parent is the first probe";
  EXPECT_TRUE(r.never_read.empty());
}

TEST(EnvTraceC, OneRecordPerProcessAndVariableUnderConcurrentReads) {
  TempDir tmp;
  auto t = run_traced({probe_path(), "threads:16:IBT_A", "get:IBT_A", "sget:IBT_A"},
                      {{"IBT_A", "1"}}, {"IBT_A"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  ASSERT_EQ(t.report.reads.at("IBT_A").size(), 1u);
  EXPECT_EQ(t.report.reads.at("IBT_A")[0].function, "getenv");
  EXPECT_TRUE(t.report.warnings.empty());
}

TEST(EnvTraceC, ClearedEnvironmentIsStillTracedButItsChildrenAreNot) {
  TempDir tmp;
  // The tracer captured its configuration before clearenv(): the process's own later read is
  // seen (and shows the variable unset); its child lost LD_PRELOAD with the environment.
  auto t = run_traced({probe_path(), "clearenv", "get:IBT_A", "--", probe_path(), "get:IBT_B"},
                      {{"IBT_A", "1"}, {"IBT_B", "1"}}, {"IBT_A", "IBT_B"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  ASSERT_EQ(t.report.reads.at("IBT_A").size(), 1u);
  EXPECT_FALSE(t.report.reads.at("IBT_A")[0].was_set);
  EXPECT_EQ(t.report.never_read, std::vector<std::string>{"IBT_B"});
  // ... and says so: "never read" cannot be claimed for what its children did.
  const auto blind = t.report.blind_spots();
  ASSERT_FALSE(blind.empty());
  EXPECT_NE(blind[0].what.find("cleared its environment"), std::string::npos);
}

TEST(EnvTraceC, RecipePreloadIsCombinedAndBothLibrariesLoad) {
  TempDir tmp;
  std::map<std::string, std::string> env{{"LD_PRELOAD", IB_ENVTRACE_OTHER_PRELOAD}, {"IBT_A", "1"}};
  fs::path trace = tmp.path() / "trace";
  add_env_trace(built_assets(), trace, {"IBT_A"}, &env);
  EXPECT_EQ(env.at("LD_PRELOAD"),
            fs::path(IB_ENVTRACE_LIB).string() + ":" + IB_ENVTRACE_OTHER_PRELOAD);
  auto exit =
      run({probe_path(), "sym:ib_envtrace_test_other_preload", "get:IBT_A"}, env, tmp.path() / "l");
  EXPECT_EQ(exit.code, 0) << "exit 3: the recipe's own preload library was not loaded";
  auto report = collect_env_trace(trace, {"IBT_A"});
  ASSERT_EQ(report.reads.count("IBT_A"), 1u);
  EXPECT_TRUE(report.reads.at("IBT_A")[0].was_set);
}

TEST(EnvTraceEnv, AddEnvTraceCombinesWithRecipeAndInheritedValues) {
  TempDir tmp;
  fs::path trace = tmp.path() / "trace";
  EnvTraceAssets assets{"/opt/ib/lib/libib_envtrace.so", "/opt/ib/share/inferbench/envtrace"};
  std::map<std::string, std::string> env{{"PYTHONPATH", "/recipe/py"},
                                         {"LD_PRELOAD", "/a.so /b.so"}};
  add_env_trace(assets, trace, {"X", "Y", "BAD,NAME", "", "X"}, &env);
  EXPECT_EQ(env.at("LD_PRELOAD"), "/opt/ib/lib/libib_envtrace.so:/a.so /b.so");
  EXPECT_EQ(env.at("PYTHONPATH"), "/opt/ib/share/inferbench/envtrace:/recipe/py");
  EXPECT_EQ(env.at("IB_ENVTRACE_DIR"), fs::weakly_canonical(trace).string());
  EXPECT_TRUE(fs::is_directory(trace));
  EXPECT_EQ(env.at("IB_ENVTRACE_WATCH"), "X,Y");
  // Idempotent: a second call adds nothing twice.
  add_env_trace(assets, trace, {"X"}, &env);
  EXPECT_EQ(env.at("LD_PRELOAD"), "/opt/ib/lib/libib_envtrace.so:/a.so /b.so");
  EXPECT_EQ(env.at("PYTHONPATH"), "/opt/ib/share/inferbench/envtrace:/recipe/py");

  // Nothing in the recipe: the inherited value is kept behind ours (env_set replaces it).
  const char* saved = std::getenv("PYTHONPATH");
  std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("PYTHONPATH", "/inherited", 1);
  std::map<std::string, std::string> plain;
  add_env_trace(assets, trace, {"X"}, &plain);
  EXPECT_EQ(plain.at("PYTHONPATH"), "/opt/ib/share/inferbench/envtrace:/inherited");
  ::unsetenv("PYTHONPATH");
  std::map<std::string, std::string> bare;
  add_env_trace(assets, trace, {"X"}, &bare);
  EXPECT_EQ(bare.at("PYTHONPATH"), "/opt/ib/share/inferbench/envtrace");  // no empty entry
  if (restore) ::setenv("PYTHONPATH", restore->c_str(), 1);
}

TEST(EnvTracePython, EnvironReadsRecordedPerProcessAndCopiesAreNotReads) {
  auto python = python3();
  if (!python) GTEST_SKIP() << "python3 not on PATH";
  TempDir tmp;
  const std::string code =
      "import os, subprocess, sys\n"
      "os.environ['IBT_A']\n"
      "'IBT_B' in os.environ\n"
      "os.environ.get('IBT_C')\n"
      "os.getenv('IBT_D')\n"
      "dict(os.environ); os.environ.copy(); {**os.environ}; list(os.environ.items())\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    os.environ.get('IBT_A'); os._exit(0)\n"
      "os.waitpid(pid, 0)\n"
      "subprocess.run([sys.executable, '-c', 'import os; os.getenv(\"IBT_F\")'], check=True)\n"
      "import multiprocessing\n"
      "p = multiprocessing.get_context('spawn').Process(target=os.getenv, args=('IBT_G',))\n"
      "p.start(); p.join(); sys.exit(p.exitcode)\n";
  auto t = run_traced({*python, "-c", code},
                      {{"IBT_A", "a"}, {"IBT_C", "c"}, {"IBT_D", "d"}, {"IBT_E", "e"}},
                      {"IBT_A", "IBT_B", "IBT_C", "IBT_D", "IBT_E", "IBT_F", "IBT_G"}, tmp);
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  EXPECT_EQ(t.log, "") << "the hook must not print";
  const auto& r = t.report;
  EXPECT_TRUE(r.python_tracer_loaded);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();

  ASSERT_EQ(r.reads.count("IBT_A"), 1u);
  const auto& a = r.reads.at("IBT_A");
  ASSERT_EQ(a.size(), 2u) << "the parent and its forked child each read IBT_A once";
  EXPECT_NE(a[0].pid, a[1].pid);
  for (const auto& read : a) {
    EXPECT_EQ(read.function, "os.environ");
    EXPECT_TRUE(read.was_set);
    EXPECT_EQ(read.value, "a");
  }
  int parent = r.reads.at("IBT_B")[0].pid;
  EXPECT_EQ(r.reads.at("IBT_B")[0].function, "os.environ");  // `in`
  EXPECT_FALSE(r.reads.at("IBT_B")[0].was_set);
  EXPECT_EQ(r.reads.at("IBT_C")[0].function, "os.environ");  // .get
  EXPECT_EQ(r.reads.at("IBT_C")[0].value, "c");
  ASSERT_EQ(r.reads.at("IBT_D").size(), 1u);
  EXPECT_EQ(r.reads.at("IBT_D")[0].function, "os.getenv");
  EXPECT_EQ(r.reads.at("IBT_D")[0].pid, parent);
  ASSERT_EQ(r.reads.at("IBT_F").size(), 1u);
  EXPECT_EQ(r.reads.at("IBT_F")[0].ppid, parent) << "the subprocess is traced too";
  EXPECT_FALSE(r.reads.at("IBT_F")[0].was_set);
  ASSERT_EQ(r.reads.at("IBT_G").size(), 1u);
  EXPECT_EQ(r.reads.at("IBT_G")[0].function, "os.getenv");
  EXPECT_NE(r.reads.at("IBT_G")[0].pid, parent) << "read in the multiprocessing child";
  // IBT_E was set and copied with the whole environment, but never read by name.
  EXPECT_EQ(r.never_read, std::vector<std::string>{"IBT_E"});
  // The copies make the parent a blind spot: it could have read IBT_E from one.
  ASSERT_EQ(r.processes.count(parent), 1u);
  EXPECT_FALSE(r.processes.at(parent).enumerated.empty());
  bool parent_blind = false;
  for (const auto& b : r.blind_spots()) parent_blind |= b.pid == parent;
  EXPECT_TRUE(parent_blind);
}

TEST(EnvTracePython, ShadowedSitecustomizeStillRuns) {
  auto python = python3();
  if (!python) GTEST_SKIP() << "python3 not on PATH";
  TempDir tmp;
  fs::path other = tmp.path() / "recipe_site";
  fs::create_directories(other);
  ASSERT_TRUE(write_file_atomic(other / "sitecustomize.py",
                                "import os\nos.environ['IBT_CHAINED'] = 'yes'\n"
                                "os.environ.get('IBT_READ_BY_OTHER')\n")
                  .ok());
  // The recipe's PYTHONPATH holds its own sitecustomize; ours goes first and must chain to it.
  auto t = run_traced({*python, "-c",
                       "import os, sys\n"
                       "sys.exit(0 if os.environ.get('IBT_CHAINED') == 'yes' else 7)\n"},
                      {{"PYTHONPATH", other.string()}}, {"IBT_READ_BY_OTHER", "IBT_NEVER"}, tmp);
  EXPECT_EQ(t.exit.code, 0) << "exit 7: the shadowed sitecustomize did not run. " << t.log;
  EXPECT_EQ(t.log, "");
  ASSERT_EQ(t.report.reads.count("IBT_READ_BY_OTHER"), 1u);
  EXPECT_EQ(t.report.never_read, std::vector<std::string>{"IBT_NEVER"});
}

TEST(EnvTraceCollect, TruncatedLastLineAndMalformedLinesAreWarnings) {
  TempDir tmp;
  std::string good =
      R"({"pid":10,"ppid":1,"exe":"/bin/x","cmdline":"x","variable":"A","was_set":true,)"
      R"("value":"1","function":"getenv"})";
  std::string other_var = R"({"pid":10,"ppid":1,"variable":"Z","was_set":false,)"
                          R"("function":"getenv"})";
  std::string no_variable = R"({"pid":10,"ppid":1,"was_set":false,"function":"getenv"})";
  std::string cut = R"({"pid":10,"ppid":1,"exe":"/bin/x","varia)";
  {
    std::ofstream f(tmp.path() / "c-10.jsonl");
    f << good << "\n" << other_var << "\n" << no_variable << "\n" << cut;
  }
  {
    std::ofstream f(tmp.path() / "py-11.jsonl");
    f << R"({"pid":11,"ppid":10,"variable":"A","was_set":false,"function":"os.getenv"})"
      << "\n";
  }
  auto r = collect_env_trace(tmp.path(), {"A", "B"});
  ASSERT_EQ(r.reads.at("A").size(), 2u);
  EXPECT_EQ(r.reads.at("A")[0].pid, 10);
  EXPECT_EQ(r.reads.at("A")[0].value, "1");
  EXPECT_EQ(r.reads.at("A")[1].function, "os.getenv");
  EXPECT_EQ(r.reads.count("Z"), 0u) << "only watched variables";
  EXPECT_EQ(r.never_read, std::vector<std::string>{"B"});
  std::string c_file = (tmp.path() / "c-10.jsonl").string();
  std::vector<std::string> expected{
      c_file + ":3: missing field 'variable'",
      c_file + ":4: incomplete last line ignored (process killed while writing?)",
      tmp.path().string() +
          ": the tracer was never loaded (static binary, setuid program, LD_PRELOAD or "
          "PYTHONPATH dropped?): 'never read' proves nothing here"};
  EXPECT_EQ(r.warnings, expected);
}

TEST(EnvTraceCollect, MissingFolderMeansNothingWasRead) {
  TempDir tmp;
  auto r = collect_env_trace(tmp.path() / "absent", {"A"});
  EXPECT_TRUE(r.reads.empty());
  EXPECT_EQ(r.never_read, std::vector<std::string>{"A"});
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("trace folder missing"), std::string::npos);
}

TEST(EnvTraceAssetsTest, FoundNextToTheExecutableOrInTheOverrideFolder) {
  ASSERT_EQ(std::getenv("INFERBENCH_ENVTRACE_DIR"), nullptr);
  // This test binary lives in <build>/src/, like inferbench: <build>/lib, <build>/share.
  auto found = find_env_trace_assets();
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->preload_library, fs::canonical(IB_ENVTRACE_LIB));
  EXPECT_EQ(found->python_hook_dir, fs::canonical(IB_ENVTRACE_HOOK_DIR));

  TempDir tmp;
  ::setenv("INFERBENCH_ENVTRACE_DIR", tmp.path().c_str(), 1);
  auto missing = find_env_trace_assets();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find((tmp.path() / "libib_envtrace.so").string()),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("INFERBENCH_ENVTRACE_DIR"), std::string::npos);

  fs::copy_file(IB_ENVTRACE_LIB, tmp.path() / "libib_envtrace.so");
  fs::copy_file(fs::path(IB_ENVTRACE_HOOK_DIR) / "sitecustomize.py",
                tmp.path() / "sitecustomize.py");
  auto flat = find_env_trace_assets();
  ::unsetenv("INFERBENCH_ENVTRACE_DIR");
  ASSERT_TRUE(flat.ok()) << flat.error().message;
  EXPECT_EQ(flat->preload_library, fs::canonical(tmp.path() / "libib_envtrace.so"));
  EXPECT_EQ(flat->python_hook_dir, fs::canonical(tmp.path()));
}

// Writes into the engine's installed files (docs/env-trace.md, "Writes into the engine's files"):
// a shell's redirections (open), sed -i (rename), fopen, openat relative to a folder descriptor,
// a configured prefix; never a bytecode cache, a file elsewhere, or a read.
TEST(EnvTraceWrites, EngineFileWritesRecordedAndCachesAndOtherFilesAreNot) {
  TempDir tmp;
  const fs::path d = fs::canonical(tmp.path());
  fs::create_directories(d / "site-packages/eng");
  fs::create_directories(d / "dist-packages/eng");
  fs::create_directories(d / "venv/lib");
  std::ofstream(d / "site-packages/eng/sed.py") << "x = 1\n";
  const std::string script =
      "cd \"$0\" && echo x > site-packages/eng/mod.py && echo y > other.txt"
      " && mkdir -p site-packages/eng/__pycache__"
      " && echo z > site-packages/eng/__pycache__/mod.cpython-311.pyc"
      " && echo z > site-packages/eng/old.pyc && sed -i s/1/2/ site-packages/eng/sed.py"
      " && echo q >> venv/lib/patched.so && echo again > site-packages/eng/mod.py"
      " && \"$1\" fopen:site-packages/eng/fopen.py openat:dist-packages/eng:at.py"
      " read:site-packages/eng/sed.py";
  auto t = run_traced({"/bin/sh", "-c", script, d.string(), probe_path()}, {}, {"IBT_A"}, tmp,
                      {(d / "venv").string() + "/", "relative/ignored"});
  ASSERT_EQ(t.exit.code, 0) << t.exit.describe() << t.log;
  EXPECT_TRUE(t.report.warnings.empty()) << t.report.warnings.front();
  auto read_back = read_file(d / "site-packages/eng/sed.py");
  EXPECT_EQ(read_back.ok() ? *read_back : "", "x = 2\n");  // the host's calls did their work
  std::vector<std::string> got;
  for (const EngineWrite& w : t.report.engine_writes) {
    got.push_back(w.path.substr(d.string().size()) + " " + fs::path(w.exe).filename().string() +
                  " " + w.function);
  }
  ASSERT_EQ(got.size(), 5u) << testing::PrintToString(got);
  const std::string sh = fs::path(t.report.engine_writes.at(2).exe).filename().string();
  const std::string shell_open = t.report.engine_writes.at(2).function;  // open or open64
  EXPECT_TRUE(shell_open == "open" || shell_open == "open64") << shell_open;
  const std::vector<std::string> expected{
      "/dist-packages/eng/at.py ib_envtrace_probe openat",
      "/site-packages/eng/fopen.py ib_envtrace_probe fopen",
      "/site-packages/eng/mod.py " + sh + " " + shell_open,  // written twice, recorded once
      "/site-packages/eng/sed.py sed rename",
      "/venv/lib/patched.so " + sh + " " + shell_open,
  };
  EXPECT_EQ(got, expected);
  for (const EngineWrite& w : t.report.engine_writes) {
    EXPECT_NE(w.pid, 0);
    EXPECT_FALSE(w.cmdline.empty());
  }
  const auto json = t.report.to_json();
  ASSERT_EQ(json.at("engine_writes").as_array().size(), expected.size());
  EXPECT_EQ(json.at("engine_writes").at(3).at("path").as_string(),
            (d / "site-packages/eng/sed.py").string());
}

TEST(EnvTraceWrites, WriteRecordsMergedSortedAndReadBack) {
  const std::string text =
      R"({"pid":20,"ppid":1,"exe":"/usr/bin/sed","cmdline":"sed -i x","event":"write",)"
      R"("path":"/sp/site-packages/b.py","function":"rename"})"
      "\n"
      R"({"pid":10,"ppid":1,"exe":"/bin/sh","cmdline":"sh --api-key sk-abcdef123456","event":)"
      R"("write","path":"/sp/site-packages/b.py","function":"open"})"
      "\n"
      R"({"pid":20,"ppid":1,"exe":"/usr/bin/sed","event":"write","path":"/sp/site-packages/b.py",)"
      R"("function":"open"})"
      "\n"
      R"({"pid":10,"exe":"/bin/sh","event":"write","path":"/sp/site-packages/a.py",)"
      R"("function":"openat"})"
      "\n"
      R"({"pid":11,"event":"write","function":"open"})"
      "\n"
      R"({"pid":11,"event":"write","path":7,"function":"open"})"
      "\n"
      R"({"pid":"11","event":"write","path":"/x","function":"open"})"
      "\n";
  const auto r = parse_env_trace_text(text, "c-1.jsonl", {"A"});
  ASSERT_EQ(r.engine_writes.size(), 3u);
  EXPECT_EQ(r.engine_writes[0].path, "/sp/site-packages/a.py");
  EXPECT_EQ(r.engine_writes[1].pid, 10);
  EXPECT_EQ(r.engine_writes[2].pid, 20);
  EXPECT_EQ(r.engine_writes[2].function, "rename");  // the first record of (pid, path)
  EXPECT_EQ(r.engine_writes[2].exe, "/usr/bin/sed");
  EXPECT_TRUE(r.processes.empty()) << "a write is not a process event";
  const std::vector<std::string> warnings{
      "c-1.jsonl:5: write record: field 'path' is missing or not a string",
      "c-1.jsonl:6: write record: field 'path' is missing or not a string",
      "c-1.jsonl:7: field 'pid' is not an integer"};
  EXPECT_EQ(r.warnings, warnings);

  const auto json = r.to_json();
  const auto& first = json.at("engine_writes").at(1).as_object();
  EXPECT_EQ(first.at("cmdline").as_string().find("sk-abcdef123456"), std::string::npos)
      << "a credential on the command line is hidden";
  EXPECT_EQ(first.at("function"), "open");
  const auto back = engine_writes_from_json(json);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[2].path, "/sp/site-packages/b.py");
  EXPECT_EQ((*back)[2].pid, 20);
  EXPECT_EQ((*back)[2].exe, "/usr/bin/sed");
  EXPECT_EQ((*back)[2].function, "rename");
  EXPECT_EQ(engine_write_text((*back)[2]), "/sp/site-packages/b.py (pid 20 sed, rename)");

  // Looked for and none seen, versus a run stored before writes were traced.
  const auto none = EnvTraceReport{}.to_json();
  ASSERT_TRUE(none.contains("engine_writes"));
  EXPECT_TRUE(none.at("engine_writes").as_array().empty());
  EXPECT_EQ(engine_writes_from_json(none), std::vector<EngineWrite>{});
  boost::json::object old = none;
  old.erase("engine_writes");
  EXPECT_FALSE(engine_writes_from_json(old).has_value());
}

TEST(EnvTraceWrites, WritesFollowTheirRolesProcesses) {
  EnvTraceReport r;
  for (auto [pid, ppid] : {std::pair{100, 1}, std::pair{101, 100}, std::pair{200, 1}}) {
    r.processes[pid].pid = pid;
    r.processes[pid].ppid = ppid;
    r.processes[pid].traced = true;
  }
  r.engine_writes = {{101, "/usr/bin/sed", "sed -i", "rename", "/sp/site-packages/a.py"},
                     {200, "/bin/sh", "sh", "open", "/sp/site-packages/b.py"},
                     {300, "/usr/bin/patch", "patch", "rename", "/sp/site-packages/c.py"}};
  const std::map<int, std::string> role_of{{100, "prefill"}, {200, "decode"}};
  const auto prefill = only_role(r, role_of, "prefill");
  ASSERT_EQ(prefill.engine_writes.size(), 1u);
  EXPECT_EQ(prefill.engine_writes[0].pid, 101);

  const auto by_role = reads_by_role(r, {"X"}, role_of);
  const std::vector<std::string> decode{"/sp/site-packages/b.py (pid 200 sh, open)",
                                        "/sp/site-packages/c.py (pid 300 patch, rename)"};
  EXPECT_EQ(by_role.engine_writes.at("decode"), decode);
  ASSERT_EQ(by_role.engine_writes.at("prefill").size(), 2u);
  EXPECT_EQ(by_role.engine_writes.at("prefill")[0], "/sp/site-packages/a.py (pid 101 sed, rename)");
  const auto back = RoleReads::from_json(by_role.to_json());
  EXPECT_EQ(back.engine_writes, by_role.engine_writes);
}

TEST(EnvTraceWrites, WritePrefixesAndTheServeProgramsInstallPrefix) {
  TempDir tmp;
  EnvTraceAssets assets{"/opt/ib/lib/libib_envtrace.so", "/opt/ib/share/inferbench/envtrace"};
  std::map<std::string, std::string> env;
  add_env_trace(assets, tmp.path() / "trace", {"X"}, &env,
                {"/venv", "relative", "/", "/a:b", "/venv", "/opt/conda"});
  EXPECT_EQ(env.at("IB_ENVTRACE_WRITE_PREFIXES"), "/venv:/opt/conda");
  add_env_trace(assets, tmp.path() / "trace", {"X"}, &env);
  EXPECT_EQ(env.at("IB_ENVTRACE_WRITE_PREFIXES"), "");

  const fs::path venv = tmp.path() / "venv";
  fs::create_directories(venv / "bin");
  fs::create_directories(tmp.path() / "tools");
  for (const fs::path& p : {venv / "bin" / "vllm", tmp.path() / "tools" / "vllm"}) {
    std::ofstream(p) << "#!/bin/sh\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  const std::string path = "/nonexistent:" + (venv / "bin").string() + ":/usr/bin:/bin";
  EXPECT_EQ(program_install_prefix("vllm", path), venv.string());
  EXPECT_EQ(program_install_prefix((venv / "bin" / "vllm").string(), ""), venv.string());
  EXPECT_EQ(program_install_prefix((tmp.path() / "tools" / "vllm").string(), path), "");
  EXPECT_EQ(program_install_prefix("sh", "/usr/bin:/bin"), "");  // /usr or /: the system's
  EXPECT_EQ(program_install_prefix("/usr/local/bin/python3", ""), "");
  EXPECT_EQ(program_install_prefix("no-such-program-ib", path), "");
  EXPECT_EQ(program_install_prefix("", path), "");
}

}  // namespace
}  // namespace ib::verify
