// Secrets (docs/recipes.md, "Secrets"): a recipe passes credentials to its server by a
// secret-named variable (OPENAI_API_KEY), after a secret flag (--api-key X, --hf-token=X) and by
// the `secret: true` marker. The server gets every one unchanged; nothing inferbench prints or
// stores holds any of them: stdout, stderr, --json, the --markdown file, the database file's bytes
// and every file under the run and work folders.
#include <fmt/format.h>

#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kEnvKey = "sk-test-envkey-0123456789abcdef";      // OPENAI_API_KEY
const std::string kArgKey = "sk-test-argkey-0123456789abcdef";      // --api-key X
const std::string kPlainArg = "plainpw-after-flag-31337";           // --hf-token=X, no token shape
const std::string kMarkedEnv = "marked-env-value-4242";             // secret: true
const std::string kMarkedArg = "marked-arg-value-7777";             // secret: true
const std::string kHeadKey = "sk-test-headkey-9876543210fedcba";    // verify's head side
// Credential-shaped values under plain names (issue 30): hidden by their shape.
const std::string kShapedHf = "hf_AbCdEfGhIjKlMnOpQrStUvWx0123";       // CACHE_MIRROR
const std::string kHookPath = "T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoP";  // NOTIFY_URL's path
const std::vector<std::string> kAll = {kEnvKey,    kArgKey,  kPlainArg, kMarkedEnv,
                                       kMarkedArg, kHeadKey, kShapedHf, kHookPath};

// A server that records what it was given (argv, environment) outside the run folder, prints its
// arguments as vLLM does, then becomes serve-sim.
fs::path write_server(const TempDir& dir) {
  const fs::path seen = dir.path() / "seen";
  fs::create_directories(seen);
  const fs::path script = dir.path() / "server.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "host=$1; port=$2; shift 2\n"
                        << "printf '%s\\n' \"$@\" > '" << (seen / "argv").string() << "'\n"
                        << "env > '" << (seen / "env").string() << "'\n"
                        << "echo \"non-default args: $*\"\n"
                        << "echo \"OPENAI_API_KEY=$OPENAI_API_KEY MY_ENGINE_LICENSE=$MY_ENGINE_LICENSE\"\n"
                        << "exec '" << INFERBENCH_BIN
                        << "' serve-sim --timing-model simple --decode-base-ms 1 --model sec-model"
                        << " --host \"$host\" --port \"$port\"\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

std::string secrets_recipe(const fs::path& server, const std::string& env_key, bool marker = true) {
  const std::string marked_env =
      marker ? fmt::format("{{value: \"{}\", secret: true}}", kMarkedEnv) : "\"" + kMarkedEnv + "\"";
  const std::string marked_arg =
      marker ? fmt::format("{{value: \"{}\", secret: true}}", kMarkedArg) : "\"" + kMarkedArg + "\"";
  return fmt::format(
      "sec-sim:\n"
      "  image: inferbench/serve-sim\n"
      "  model: sec-model\n"
      "  model-prefix: sec\n"
      "  precision: bf16\n"
      "  framework: serve-sim\n"
      "  runner: local\n"
      "  multinode: false\n"
      "  serve:\n"
      "    command: [\"{}\", \"{{host}}\", \"{{port}}\", --api-key, \"{}\", \"--hf-token={}\",\n"
      "              --engine-license, {}, --max-num-batched-tokens, \"8192\",\n"
      "              --tokenizer, sec-tokenizer]\n"
      "    env:\n"
      "      OPENAI_API_KEY: \"{}\"\n"
      "      MY_ENGINE_LICENSE: {}\n"
      "      TOKENIZERS_PARALLELISM: \"false\"\n"
      "      CACHE_MIRROR: \"{}\"\n"
      "      NOTIFY_URL: \"https://hooks.slack.com/services/{}\"\n"
      "  workload: {{ prompts-per-conc: 2, min-prompts: 2, warmups-per-conc: 0 }}\n"
      "  scenarios:\n"
      "    fixed-seq-len:\n"
      "    - isl: 16\n"
      "      osl: 4\n"
      "      search-space:\n"
      "      - {{ tp: 1, conc-list: [1] }}\n",
      server.string(), kArgKey, kPlainArg, marked_arg, env_key, marked_env, kShapedHf, kHookPath);
}

fs::path write(const TempDir& dir, const std::string& name, const std::string& text) {
  const fs::path p = dir.path() / name;
  std::ofstream(p) << text;
  return p;
}

// Every secret is absent from `text`; `what` names where it was looked for.
void expect_hidden(const std::string& text, const std::string& what) {
  for (const std::string& s : kAll) {
    EXPECT_EQ(text.find(s), std::string::npos) << s << " in " << what << ":\n" << text;
  }
}

// Every regular file below `root`, the database and its WAL included.
void expect_hidden_in_files(const fs::path& root) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    auto bytes = read_file(e.path());
    ASSERT_TRUE(bytes) << e.path();
    ++files;
    for (const std::string& s : kAll) {
      EXPECT_EQ(bytes->find(s), std::string::npos) << s << " in " << e.path();
    }
  }
  EXPECT_GT(files, 0) << root;
}

// The server was given every secret as written.
void expect_server_got_them(const TempDir& dir, const std::string& env_key) {
  auto argv = read_file(dir.path() / "seen" / "argv");
  auto env = read_file(dir.path() / "seen" / "env");
  ASSERT_TRUE(argv && env) << "the server recorded nothing";
  EXPECT_NE(argv->find("--api-key\n" + kArgKey + "\n"), std::string::npos) << *argv;
  EXPECT_NE(argv->find("--hf-token=" + kPlainArg + "\n"), std::string::npos) << *argv;
  EXPECT_NE(argv->find("--engine-license\n" + kMarkedArg + "\n"), std::string::npos) << *argv;
  EXPECT_NE(env->find("OPENAI_API_KEY=" + env_key + "\n"), std::string::npos);
  EXPECT_NE(env->find("MY_ENGINE_LICENSE=" + kMarkedEnv + "\n"), std::string::npos);
}

TEST(Secrets, SweepGivesTheServerItsSecretsAndStoresAndPrintsNone) {
  TempDir dir;
  const fs::path server = write_server(dir);
  const fs::path r = write(dir, "recipe.yaml", secrets_recipe(server, kEnvKey));
  const std::string runs = (dir.path() / "runs").string();
  const std::string db = (dir.path() / "runs" / "inferbench.db").string();
  auto sweep = run_inferbench({"sweep", r.string(), "--runs-dir", runs, "--startup-timeout", "30",
                               "--point-timeout", "60", "--json", "--server-arg",
                               "--api-key=" + kArgKey},
                              dir.path() / "sweep.log");
  ASSERT_FALSE(sweep.timed_out) << sweep.output;
  ASSERT_EQ(sweep.exit.code, 0) << sweep.output;
  expect_hidden(sweep.output, "sweep's output");
  expect_server_got_them(dir, kEnvKey);

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"runs", "--db", db, "--json"},
           {"runs", "--db", db},
           {"show", "1", "--db", db, "--json"},
           {"show", "1", "--db", db},
           {"plan", r.string(), "--json"},
           {"plan", r.string()},
           {"report", "1", "--db", db, "-o", (dir.path() / "runs" / "report.html").string()}}) {
    static int n = 0;
    auto out = run_inferbench(args, dir.path() / fmt::format("read-{}.log", ++n));
    EXPECT_EQ(out.exit.code, 0) << args[0] << ": " << out.output;
    expect_hidden(out.output, args[0]);
  }
  // What a benchmark user needs to see stays.
  auto plan = run_inferbench({"plan", r.string(), "--json"}, dir.path() / "plan.log");
  for (const char* visible : {"--max-num-batched-tokens", "8192", "--tokenizer", "sec-tokenizer",
                              "TOKENIZERS_PARALLELISM", "OPENAI_API_KEY", "(redacted)"}) {
    EXPECT_NE(plan.output.find(visible), std::string::npos) << visible << " in " << plan.output;
  }
  expect_hidden_in_files(dir.path() / "runs");
  // The stored row says something was there.
  auto show = run_inferbench({"show", "1", "--db", db, "--json"}, dir.path() / "show.log");
  EXPECT_NE(show.output.find("(redacted)"), std::string::npos) << show.output;
}

// A server that fails to start leaves what its processes wrote (the environment tracer's
// records, with their command lines) scrubbed like a collected one: the same secrets, none kept.
TEST(Secrets, AServerThatFailsToStartLeavesNoSecretBehind) {
  TempDir dir;
  const fs::path server = dir.path() / "server.sh";
  std::ofstream(server) << "#!/bin/sh\necho \"starting with $*\"\nexit 3\n";
  fs::permissions(server, fs::perms::owner_all);
  const fs::path r = write(dir, "recipe.yaml", secrets_recipe(server, kEnvKey));
  const std::string runs = (dir.path() / "runs").string();
  auto sweep = run_inferbench({"sweep", r.string(), "--runs-dir", runs, "--startup-timeout", "30",
                               "--server-arg", "--api-key=" + kArgKey},
                              dir.path() / "sweep.log");
  ASSERT_FALSE(sweep.timed_out) << sweep.output;
  EXPECT_NE(sweep.exit.code, 0) << sweep.output;
  EXPECT_NE(sweep.output.find("exit code 3"), std::string::npos) << sweep.output;
  expect_hidden(sweep.output, "sweep's output");
  // The tracer did run in the server's shell, so there is something to scrub.
  bool traced = false;
  for (const auto& e : fs::recursive_directory_iterator(runs)) {
    if (e.path().filename() == "loaded-c.json") traced = true;
  }
  EXPECT_TRUE(traced) << "no trace record: the test proves nothing";
  expect_hidden_in_files(runs);
}

TEST(Secrets, TheMarkerDoesNotChangeTheFingerprint) {
  TempDir dir;
  const fs::path server = dir.path() / "server.sh";
  auto fingerprint = [&](bool marker) {
    const fs::path r = write(dir, marker ? "marked.yaml" : "plain.yaml",
                             secrets_recipe(server, kEnvKey, marker));
    auto out = run_inferbench({"plan", r.string(), "--json"},
                              dir.path() / (marker ? "marked.log" : "plain.log"));
    EXPECT_EQ(out.exit.code, 0) << out.output;
    boost::system::error_code ec;
    auto v = boost::json::parse(out.output, ec);
    if (ec || !v.is_array() || v.as_array().empty()) {
      ADD_FAILURE() << out.output;
      return std::string();
    }
    return std::string(v.as_array()[0].at("recipe-fingerprint").as_string());
  };
  const std::string marked = fingerprint(true);
  EXPECT_FALSE(marked.empty());
  EXPECT_EQ(marked, fingerprint(false));
}

TEST(Secrets, AShortMarkedSecretIsRejectedWithItsField) {
  TempDir dir;
  std::string text = secrets_recipe(dir.path() / "server.sh", kEnvKey);
  text.replace(text.find(kMarkedEnv), kMarkedEnv.size(), "short");
  const fs::path r = write(dir, "short.yaml", text);
  auto out = run_inferbench({"plan", r.string()}, dir.path() / "plan.log");
  EXPECT_EQ(out.exit.code, 2) << out.output;
  EXPECT_NE(out.output.find("sec-sim.serve.env.MY_ENGINE_LICENSE.value"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("at least 8 characters"), std::string::npos) << out.output;
}

TEST(Secrets, VerifyNamesAChangedSecretWithoutPrintingEither) {
  TempDir dir;
  const fs::path server = write_server(dir);
  const fs::path base = write(dir, "base.yaml", secrets_recipe(server, kEnvKey));
  const fs::path head = write(dir, "head.yaml", secrets_recipe(server, kHeadKey));
  const fs::path md = dir.path() / "verify.md";
  const fs::path work = dir.path() / "work";
  auto out = run_inferbench({"verify", base.string(), head.string(), "--json", "--markdown",
                             md.string(), "--work-dir", work.string()},
                            dir.path() / "verify.log");
  ASSERT_FALSE(out.timed_out) << out.output;
  EXPECT_EQ(out.exit.code, 0) << out.output;
  expect_hidden(out.output, "verify --json");
  EXPECT_NE(out.output.find("serve.env.OPENAI_API_KEY"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("changed (secret value, not shown)"), std::string::npos) << out.output;
  auto text = read_file(md);
  ASSERT_TRUE(text) << md;
  expect_hidden(*text, "verify --markdown");
  EXPECT_NE(text->find("changed (secret value, not shown)"), std::string::npos) << *text;
  expect_hidden_in_files(work);
  // The head server, started last, got the head's key.
  expect_server_got_them(dir, kHeadKey);
}

// A server started with --api-key can be benchmarked (issue 30): bench sends the key as a bearer
// token (given with --api-key or OPENAI_API_KEY), and never prints or stores it.
TEST(Secrets, BenchSendsTheServersApiKeyAndNeverShowsIt) {
  TempDir dir;
  const std::string key = "sk-test-0123456789abcdefXYZ";
  SimServer sim(dir.path(), {"--api-key", key, "--decode-base-ms", "1"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "r.json";
  const fs::path details = dir.path() / "d.jsonl";
  auto without = run_inferbench({"bench", "--endpoint", sim.url(), "--model", "sim-model",
                                 "--num-prompts", "2", "--isl", "8", "--osl", "2"},
                                dir.path() / "without.log");
  EXPECT_NE(without.exit.code, 0) << without.output;
  EXPECT_NE(without.output.find("401"), std::string::npos) << without.output;
  auto with = run_inferbench(
      {"bench", "--endpoint", sim.url(), "--api-key", key, "--num-prompts", "2", "--isl", "8",
       "--osl", "2", "--output", out.string(), "--details", details.string()},
      dir.path() / "with.log");
  ASSERT_EQ(with.exit.code, 0) << with.output;
  EXPECT_EQ(num(read_json(out), "completed"), 2);
  EXPECT_EQ(with.output.find(key), std::string::npos);
  EXPECT_EQ(read_file(out)->find(key), std::string::npos);
  EXPECT_EQ(read_file(details)->find(key), std::string::npos);
}

}  // namespace
}  // namespace ib::e2e
