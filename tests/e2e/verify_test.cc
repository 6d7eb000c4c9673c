// `inferbench verify`: base and head servers started for real, their effective configuration and
// environment reads captured, and a verdict per changed field and key.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "core/command.h"
#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kSource = INFERBENCH_SOURCE_DIR;

boost::json::object verify_json(const std::vector<std::string>& args, const TempDir& dir,
                                int expect_exit) {
  std::vector<std::string> a = {"verify"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("--json");
  a.push_back("--work-dir");
  a.push_back((dir.path() / "work").string());
  static int calls = 0;  // one log per call: run_inferbench appends
  auto r = run_inferbench(a, dir.path() / fmt::format("verify-{}.log", ++calls));
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit.code, expect_exit) << r.output;
  auto start = r.output.find("{\"base\"");
  if (start == std::string::npos) {
    ADD_FAILURE() << "no JSON report in:\n" << r.output;
    return {};
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(r.output.substr(start, r.output.find('\n', start) - start), ec);
  EXPECT_FALSE(ec) << r.output;
  return ec ? boost::json::object() : v.as_object();
}

const boost::json::object& only_key(const boost::json::object& report) {
  static const boost::json::object empty;
  const auto& keys = report.at("keys").as_array();
  EXPECT_EQ(keys.size(), 1u);
  return keys.empty() ? empty : keys[0].as_object();
}

// field path -> verdict
std::map<std::string, std::string> field_verdicts(const boost::json::object& key) {
  std::map<std::string, std::string> out;
  for (const auto& f : key.at("fields").as_array()) {
    out[std::string(f.at("field").as_string())] = std::string(f.at("verdict").as_string());
  }
  return out;
}

TEST(Verify, EnvironmentVariableOnAPinnedPathIsNeverReadAndTheChangeIsANoOp) {
  TempDir dir;
  auto report = verify_json({kSource + "/examples/noop-change/base.yaml",
                             kSource + "/examples/noop-change/head.yaml", "--exit-code"},
                            dir, 1);
  const auto& key = only_key(report);
  EXPECT_EQ(key.at("verdict").as_string(), "no-op: skip the sweep");
  EXPECT_EQ(field_verdicts(key), (std::map<std::string, std::string>{
                                     {"serve.env.SIM_MINIMAX_ALLOW_CUSTOM_AR", "never read"}}));
  EXPECT_TRUE(key.at("effective-diff").as_object().empty());
  // The evidence is kept: the trace of both servers.
  EXPECT_TRUE(fs::exists(dir.path() / "work" / "01-minimaxm2-fp4-mi355x-servesim" / "head" /
                         "env_reads.json"));
}

TEST(Verify, TheSameVariableOnAnotherPathIsReadAndEffective) {
  TempDir dir;
  auto report = verify_json({kSource + "/examples/noop-change/effective-base.yaml",
                             kSource + "/examples/noop-change/effective-head.yaml", "--exit-code"},
                            dir, 0);
  const auto& key = only_key(report);
  EXPECT_EQ(key.at("verdict").as_string(), "effective: sweep");
  EXPECT_EQ(field_verdicts(key).at("serve.env.SIM_MINIMAX_ALLOW_CUSTOM_AR"), "effective");
  const auto& diff = key.at("effective-diff").as_object();
  ASSERT_TRUE(diff.contains("disable_custom_all_reduce")) << boost::json::serialize(diff);
  EXPECT_EQ(diff.at("disable_custom_all_reduce").at("base"), true);
  EXPECT_EQ(diff.at("disable_custom_all_reduce").at("head"), false);
}

// The Python interpreter itself, not a launcher script in front of it (pyenv's shims are bash
// scripts: shells in the server's process tree, where "never read" cannot be claimed).
std::string python_interpreter() {
  static const std::string path = [] {
    std::string out;
    if (std::FILE* f = ::popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r")) {
      char buf[4096];
      while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
      ::pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out.empty() ? std::string("python3") : out;
  }();
  return path;
}

std::string python_recipe(const std::string& env, const std::string& expect = "") {
  return "py-env-server:\n"
         "  image: python:3\n"
         "  model: env-model\n"
         "  model-prefix: env\n"
         "  precision: bf16\n"
         "  framework: sglang\n"
         "  runner: local\n"
         "  multinode: false\n"
         "  serve:\n"
         "    command: [" +
         python_interpreter() + ", " + kSource +
         "/tests/support/env_server.py, --host, \"{host}\", --port, \"{port}\"]\n"
         "    health-path: /health\n" +
         (env.empty() ? "" : "    env: { " + env + " }\n") + expect +
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - { isl: 32, osl: 8, search-space: [{ tp: 1, conc-list: [1] }] }\n";
}

// The recipe's own regex probes are part of the effective configuration verify compares, as in
// the sweep: a value only such a probe can see turns "read" into "effective".
TEST(Verify, RecipeProbesWidenTheEffectiveConfiguration) {
  TempDir dir;
  const std::string probe =
      "  expect:\n"
      "    probes: [{ key: kernel_backend, regex: \"Using kernel backend: (\\\\w+)\" }]\n";
  struct Case {
    std::string expect;
    std::string field_verdict;
  } cases[] = {{"", "read"}, {probe, "effective"}};
  for (const auto& c : cases) {
    TempDir work;
    const fs::path base = work.path() / "base.yaml";
    const fs::path head = work.path() / "head.yaml";
    std::ofstream(base) << python_recipe("", c.expect);
    std::ofstream(head) << python_recipe("IB_T_D: \"fast\"", c.expect);
    auto report = verify_json({base.string(), head.string()}, work, 0);
    const auto& key = only_key(report);
    EXPECT_EQ(field_verdicts(key).at("serve.env.IB_T_D"), c.field_verdict) << c.expect;
    const auto& diff = key.at("effective-diff").as_object();
    if (c.expect.empty()) {
      EXPECT_FALSE(diff.contains("kernel_backend")) << boost::json::serialize(diff);
    } else {
      ASSERT_TRUE(diff.contains("kernel_backend")) << boost::json::serialize(diff);
      EXPECT_EQ(diff.at("kernel_backend").at("base"), "default");
      EXPECT_EQ(diff.at("kernel_backend").at("head"), "fast");
    }
  }
}

TEST(Verify, PythonServerReadsThroughEnvironAndGetenvAreReportedPerVariable) {
  TempDir dir;
  const fs::path base = dir.path() / "base.yaml";
  std::ofstream(base) << python_recipe("");
  struct Case {
    std::string env;
    std::string var;
    std::string field_verdict;
    std::string key_verdict;
  } cases[] = {
      // Read through os.environ[...] and printed in ServerArgs: the effective config changes.
      {"IB_T_A: \"on\"", "IB_T_A", "effective", "effective: sweep"},
      // Read through os.getenv, printed nowhere: read, so it cannot be called a no-op.
      {"IB_T_B: \"on\"", "IB_T_B", "read", "effective: sweep"},
      // Never looked at.
      {"IB_T_C: \"on\"", "IB_T_C", "never read", "no-op: skip the sweep"},
  };
  for (const auto& c : cases) {
    const fs::path head = dir.path() / ("head-" + c.var + ".yaml");
    std::ofstream(head) << python_recipe(c.env);
    TempDir work;
    auto report = verify_json({base.string(), head.string()}, work, 0);
    const auto& key = only_key(report);
    EXPECT_EQ(field_verdicts(key).at("serve.env." + c.var), c.field_verdict) << c.var;
    EXPECT_EQ(key.at("verdict").as_string(), c.key_verdict) << c.var;
  }
}

TEST(Verify, GitRevisionsWithAMarkdownSummary) {
  TempDir dir;
  const fs::path repo = dir.path() / "repo";
  fs::create_directories(repo / "recipes");
  fs::copy_file(kSource + "/examples/noop-change/base.yaml", repo / "recipes" / "minimax.yaml");
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"git", "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@t"});
    auto r = run_command(args);
    ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.error().message);
  };
  git({"init", "-q", "-b", "main"});
  git({"add", "-A"});
  git({"commit", "-qm", "base"});
  // Head (the working tree): only the variable the pinned path never reads.
  fs::copy_file(kSource + "/examples/noop-change/head.yaml", repo / "recipes" / "minimax.yaml",
                fs::copy_options::overwrite_existing);
  const fs::path md = dir.path() / "verdict.md";
  auto report = verify_json({"--base", "HEAD", "-C", repo.string(), (repo / "recipes").string(),
                             "--markdown", md.string()},
                            dir, 0);
  const auto& key = only_key(report);
  EXPECT_EQ(key.at("config-key").as_string(), "minimaxm2-fp4-mi355x-servesim");
  EXPECT_TRUE(key.at("no-op").as_bool());
  auto text = read_file(md);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("**no-op: skip the sweep**"), std::string::npos) << *text;
  EXPECT_NE(text->find("| `serve.env.SIM_MINIMAX_ALLOW_CUSTOM_AR` |"), std::string::npos) << *text;
  // Nothing changed at all: no key, no server started.
  git({"checkout", "-q", "--", "recipes/minimax.yaml"});
  auto none =
      verify_json({"--base", "HEAD", "-C", repo.string(), (repo / "recipes").string()}, dir, 0);
  EXPECT_TRUE(none.at("keys").as_array().empty()) << boost::json::serialize(none);
}

std::string sim_recipe(const std::string& image, const std::string& env) {
  return "sim-key:\n"
         "  image: " +
         image +
         "\n"
         "  model: sim-model\n"
         "  model-prefix: sim\n"
         "  precision: bf16\n"
         "  framework: serve-sim\n"
         "  runner: local\n"
         "  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --model, \"{served-model}\", --host, \"{host}\",\n"
         "              --port, \"{port}\"]\n" +
         (env.empty() ? "" : "    env: { " + env + " }\n") +
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - { isl: 32, osl: 8, search-space: [{ tp: 1, conc-list: [1] }] }\n";
}

// A shell in the server's command: it expands $VARIABLES where the tracer cannot see (issue 30).
// A variable the engine never reads is then "unverified", never a no-op; one the shell turned
// into the engine's argument is effective.
std::string shell_recipe(const std::string& env) {
  std::string text = sim_recipe("inferbench/serve-sim", env);
  const std::string command =
      "    command: [inferbench, serve-sim, --model, \"{served-model}\", --host, \"{host}\",\n"
      "              --port, \"{port}\"]\n";
  const size_t at = text.find(command);
  if (at == std::string::npos) return "sim_recipe changed: update shell_recipe";
  return text.replace(
      at, command.size(),
      "    command: [/bin/sh, -c, 'exec \"$0\" serve-sim --model \"$1\" --host \"$2\" "
      "--port \"$3\" --timing-model simple --decode-base-ms \"$SIM_DELAY\"', " INFERBENCH_BIN
      ", \"{served-model}\", \"{host}\", \"{port}\"]\n");
}

TEST(Verify, AShellInTheServerCommandIsNeverANoOp) {
  TempDir dir;
  const fs::path base = dir.path() / "base.yaml";
  std::ofstream(base) << shell_recipe("SIM_DELAY: \"5\"");
  const fs::path unused = dir.path() / "unused.yaml";
  std::ofstream(unused) << shell_recipe("SIM_DELAY: \"5\", SIM_NOT_A_KNOB: \"1\"");
  auto report = verify_json({base.string(), unused.string(), "--exit-code"}, dir, 0);
  const auto& key = only_key(report);
  EXPECT_EQ(field_verdicts(key).at("serve.env.SIM_NOT_A_KNOB"), "unverified");
  EXPECT_EQ(key.at("verdict").as_string(), "effective: sweep (not every change could be verified)");
  EXPECT_NE(boost::json::serialize(key).find("a shell"), std::string::npos)
      << boost::json::serialize(key);

  const fs::path delay = dir.path() / "delay.yaml";
  std::ofstream(delay) << shell_recipe("SIM_DELAY: \"9\"");
  TempDir work;
  report = verify_json({base.string(), delay.string()}, work, 0);
  EXPECT_EQ(field_verdicts(only_key(report)).at("serve.env.SIM_DELAY"), "effective");
}

TEST(Verify, StoredRunsAreComparedAndConfoundersListed) {
  TempDir dir;
  const fs::path runs = dir.path() / "runs";
  auto sweep = [&](const std::string& name, const std::string& text) {
    const fs::path recipe = dir.path() / (name + ".yaml");
    std::ofstream(recipe) << text;
    auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", runs.string()},
                            dir.path() / (name + ".log"));
    ASSERT_EQ(r.exit.code, 0) << r.output;
  };
  sweep("a", sim_recipe("img:1", ""));
  sweep("b", sim_recipe("img:1", "SIM_MAX_NUM_SEQS: \"8\""));  // read, and shown as max_num_seqs
  sweep("c", sim_recipe("img:2", "SIM_NOT_A_KNOB: \"1\""));    // never read, another image
  const std::string db = (runs / "inferbench.db").string();

  auto ab = verify_json({"1", "2", "--db", db}, dir, 0);
  const auto& k1 = only_key(ab);
  EXPECT_EQ(k1.at("verdict").as_string(), "effective: sweep");
  EXPECT_EQ(field_verdicts(k1).at("serve.env.SIM_MAX_NUM_SEQS"), "effective");
  EXPECT_TRUE(k1.at("effective-diff").as_object().contains("max_num_seqs"));
  EXPECT_TRUE(k1.at("confounders").as_array().empty());

  auto ac = verify_json({"1", "3", "--db", db}, dir, 0);
  const auto& k2 = only_key(ac);
  auto fv = field_verdicts(k2);
  EXPECT_EQ(fv.at("serve.env.SIM_NOT_A_KNOB"), "never read");
  EXPECT_EQ(fv.at("image"), "no effect");
  EXPECT_EQ(k2.at("verdict").as_string(), "no-op: skip the sweep");
  ASSERT_EQ(k2.at("confounders").as_array().size(), 1u);
  // The same confounder object as compare's and the report's (metrics/identity.h).
  const auto& cf = k2.at("confounders").as_array()[0].as_object();
  EXPECT_EQ(cf.at("field").as_string(), "image");
  EXPECT_EQ(cf.at("base").as_array(), (boost::json::array{"img:1"}));
  EXPECT_EQ(cf.at("head").as_array(), (boost::json::array{"img:2"}));
  EXPECT_TRUE(cf.at("confounding").as_bool());

  // A name that is neither a recipe file nor a run.
  auto r = run_inferbench({"verify", "1", "nope", "--db", db}, dir.path() / "bad.log");
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("nope: neither a recipe file nor a run"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ib::e2e
