// The Slurm batch script is the one place where recipe strings meet a shell: these tests run the
// generated quoting through /bin/sh and check every argument and value comes out byte for byte.
#include "launch/slurm.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <filesystem>
#include <string>
#include <vector>

#include "core/command.h"
#include "core/process.h"
#include "core/files.h"
#include "core/temp_dir.h"

namespace ib::launch {
namespace {

namespace fs = std::filesystem;

// Strings a recipe could carry that a careless script would execute, split or expand.
const std::vector<std::string> kHostile = {
    "two words",
    "it's",
    "\"double\"",
    "$(touch PWNED)",
    "`touch PWNED`",
    "line1\nline2",
    "*",
    "?",
    "[a-z]*",
    "~",
    "$HOME",
    "${HOME}",
    "\\",
    "'",
    "''",
    "",
    "--",
    "-n",
    "a;b|c&d>e<f",
    "#not-a-comment",
    "tab\there",
    " lead space",
    "trail space ",
    "!event",
    "é ünïcode",
    "'$(x)'\"`y`\"",
    "%j %N %%",
    "a\\'b",
    "\r\n",
    "exec rm -rf /",
};

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\0') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

ServerSpec spec_with(std::vector<std::string> argv) {
  ServerSpec spec;
  spec.name = "sim server";
  spec.argv = std::move(argv);
  spec.log_path = "/shared/logs/server.log";
  return spec;
}

TEST(ShellQuote, LeavesPlainWordsAlone) {
  EXPECT_EQ(shell_quote("serve-sim"), "serve-sim");
  EXPECT_EQ(shell_quote("--port=8000"), "--port=8000");
  EXPECT_EQ(shell_quote("/usr/bin/python3.11"), "/usr/bin/python3.11");
  EXPECT_EQ(shell_quote("a,b:c@d%e+f_g"), "a,b:c@d%e+f_g");
}

TEST(ShellQuote, SingleQuotesEverythingElse) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(id)"), "'$(id)'");
  EXPECT_EQ(shell_quote("*"), "'*'");
}

TEST(ShellQuote, EveryHostileStringRoundTripsThroughSh) {
  TempDir dir;
  for (const std::string& s : kHostile) {
    CommandOptions co;
    co.cwd = dir.path();
    auto r = run_command({"/bin/sh", "-c", "printf '%s' " + shell_quote(s)}, co);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->ok()) << r->err;
    EXPECT_EQ(r->out, s) << "quoted as " << shell_quote(s);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "PWNED"));
}

TEST(SlurmBatchScript, HasTheDirectivesBeforeAnyCommand) {
  ServerSpec spec = spec_with({"inferbench", "serve-sim", "--host", "{host}", "--port", "{port}"});
  spec.gpus = 2;
  SlurmOptions o;
  o.partition = "gpu";
  o.account = "proj-1";
  o.extra_sbatch_args = {"--qos=high", "--constraint=a100&nvlink"};
  o.time_limit = "00:30:00";
  auto script = slurm_batch_script(spec, o, 8123);
  ASSERT_TRUE(script) << script.error().message;
  const std::string& s = *script;
  EXPECT_EQ(s.rfind("#!/bin/sh\n", 0), 0u) << s;
  for (const char* want :
       {"#SBATCH --job-name=ib-sim_server\n", "#SBATCH --output=\"/shared/logs/server.log\"\n",
        "#SBATCH --nodes=1\n", "#SBATCH --ntasks=1\n", "#SBATCH --gpus=2\n",
        "#SBATCH --time=\"00:30:00\"\n", "#SBATCH --partition=\"gpu\"\n",
        "#SBATCH --account=\"proj-1\"\n", "#SBATCH \"--qos=high\"\n",
        "#SBATCH \"--constraint=a100&nvlink\"\n",
        "srun --ntasks=1 --kill-on-bad-exit=1 -- inferbench serve-sim --host 0.0.0.0 "
        "--port 8123 &\n"}) {
    EXPECT_NE(s.find(want), std::string::npos) << "missing " << want << " in\n" << s;
  }
  // sbatch stops reading directives at the first line that is not a comment.
  size_t first_command = 0;
  while (first_command < s.size() && s[first_command] == '#') {
    first_command = s.find('\n', first_command);
    ASSERT_NE(first_command, std::string::npos);
    ++first_command;
  }
  ASSERT_LT(first_command, s.size());
  EXPECT_EQ(s.find("#SBATCH", first_command), std::string::npos) << s;
}

TEST(SlurmBatchScript, KeepsSecretsOutOfTheScriptAndHandsThemToSbatch) {
  ServerSpec spec = spec_with({"vllm", "serve", "m", "--api-key", "sk-test-0123456789abcdef",
                               "--hf-token=hf_tokenvalue0123456789", "--tokenizer", "t"});
  spec.env = {{"OPENAI_API_KEY", "sk-test-env-0123456789"}, {"NCCL_DEBUG", "INFO"}};
  std::map<std::string, std::string> secret_env;
  SlurmOptions no_sampler;  // the script is then `exec srun ...`, which the check below runs
  no_sampler.gpu_power = "off";
  auto script = slurm_batch_script(spec, no_sampler, 9000, &secret_env);
  ASSERT_TRUE(script) << script.error().message;
  const std::string& s = *script;
  for (const char* secret :
       {"sk-test-0123456789abcdef", "hf_tokenvalue0123456789", "sk-test-env-0123456789"}) {
    EXPECT_EQ(s.find(secret), std::string::npos) << secret << " in\n" << s;
  }
  EXPECT_NE(s.find("export NCCL_DEBUG=INFO\n"), std::string::npos) << s;
  EXPECT_NE(s.find("export OPENAI_API_KEY  #"), std::string::npos) << s;
  EXPECT_NE(s.find("-- vllm serve m --api-key \"$IB_SECRET_ARG_4\" \"$IB_SECRET_ARG_5\" "
                   "--tokenizer t\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(secret_env, (std::map<std::string, std::string>{
                            {"OPENAI_API_KEY", "sk-test-env-0123456789"},
                            {"IB_SECRET_ARG_4", "sk-test-0123456789abcdef"},
                            {"IB_SECRET_ARG_5", "--hf-token=hf_tokenvalue0123456789"}}));
  // The server gets them unchanged: the script run by /bin/sh with that environment.
  const std::string argv_part = s.substr(s.find("exec srun"));
  const std::string echo = "printf '%s|' " + argv_part.substr(argv_part.find("-- ") + 3);
  CommandOptions co;
  co.env_set = secret_env;
  auto r = run_command({"/bin/sh", "-c", echo}, co);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out,
            "vllm|serve|m|--api-key|sk-test-0123456789abcdef|--hf-token=hf_tokenvalue0123456789|"
            "--tokenizer|t|");
}

TEST(SlurmBatchScript, StartsTheGpuPowerSamplerBesideTheServer) {
  ServerSpec spec = spec_with({"server"});
  spec.log_path = "/shared/run 1/server.log";
  auto script = slurm_batch_script(spec, SlurmOptions{}, 9000);
  ASSERT_TRUE(script) << script.error().message;
  const std::string& s = *script;
  for (const char* want :
       {"date +%z > '/shared/run 1/gpu_power.utc_offset'\n",
        "if command -v nvidia-smi >/dev/null 2>&1; then\n  nvidia-smi "
        "--query-gpu=timestamp,index,power.draw,utilization.gpu,memory.used,clocks.sm "
        "--format=csv,nounits --loop-ms=500 > '/shared/run 1/gpu_power.nvidia-smi.csv' "
        "2>/dev/null &\n",
        "elif command -v amd-smi >/dev/null 2>&1; then\n  PYTHONUNBUFFERED=1 amd-smi metric -p -u "
        "-E -w 1 --csv > '/shared/run 1/gpu_power.amd-smi.csv' 2>/dev/null &\nib_sampler=$!\nfi\n",
        "trap 'if [ -n \"${ib_sampler:-}\" ]; then kill \"$ib_sampler\" 2>/dev/null; fi' EXIT\n",
        "srun --ntasks=1 --kill-on-bad-exit=1 -- server &\n"}) {
    EXPECT_NE(s.find(want), std::string::npos) << "missing " << want << " in\n" << s;
  }
  // Before the server; the script stays (no exec) to stop the sampler when the server ends.
  EXPECT_LT(s.find("nvidia-smi"), s.find("srun --ntasks"));
  EXPECT_EQ(s.find("exec srun"), std::string::npos) << s;

  SlurmOptions only;
  only.gpu_power = "amd-smi";
  only.power_interval_s = 2;
  auto amd = slurm_batch_script(spec, only, 9000);
  ASSERT_TRUE(amd) << amd.error().message;
  EXPECT_EQ(amd->find("nvidia-smi"), std::string::npos) << *amd;
  EXPECT_NE(amd->find("amd-smi metric -p -u -E -w 2 --csv"), std::string::npos) << *amd;

  SlurmOptions off;
  off.gpu_power = "off";
  auto none = slurm_batch_script(spec, off, 9000);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->find("gpu_power"), std::string::npos) << *none;
  EXPECT_NE(none->find("exec srun --ntasks=1 --kill-on-bad-exit=1 -- server\n"), std::string::npos)
      << *none;
}

// The job script run by /bin/sh outside Slurm, with stand-ins for srun and nvidia-smi that record
// their pids: whether the server's step ends by itself or the job is cancelled (SIGTERM to the
// script, as scancel sends), no sampler outlives the script, and its exit status is srun's.
class SlurmScriptLifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    bin = dir.path() / "bin";
    fs::create_directories(bin);
    write_exe(bin / "nvidia-smi", "#!/bin/sh\necho $$ > \"$IB_TEST_DIR/sampler.pid\"\nexec sleep 300\n");
  }
  static void write_exe(const fs::path& p, const std::string& text) {
    ASSERT_TRUE(write_file_atomic(p, text));
    fs::permissions(p, fs::perms::owner_all, fs::perm_options::replace);
  }
  // Starts the script; returns once both stand-ins have written their pids.
  std::optional<ChildProcess> start(const std::string& srun_body) {
    write_exe(bin / "srun", "#!/bin/sh\necho $$ > \"$IB_TEST_DIR/srun.pid\"\n" + srun_body);
    ServerSpec spec = spec_with({"server"});
    spec.log_path = dir.path() / "server.log";
    SlurmOptions o;
    o.gpu_power = "nvidia-smi";
    auto script = slurm_batch_script(spec, o, 9000);
    EXPECT_TRUE(script) << script.error().message;
    if (!script) return std::nullopt;
    EXPECT_TRUE(write_file_atomic(dir.path() / "job.sh", *script));
    SpawnOptions so;
    so.argv = {"/bin/sh", (dir.path() / "job.sh").string()};
    const char* path = std::getenv("PATH");
    so.env_set = {{"PATH", bin.string() + ":" + (path ? path : "/usr/bin:/bin")},
                  {"IB_TEST_DIR", dir.path().string()}};
    so.log_path = dir.path() / "job.out";
    auto child = ChildProcess::spawn(so);
    EXPECT_TRUE(child) << child.error().message;
    if (!child) return std::nullopt;
    // Written, not only created: `echo $$ > F` creates F before it writes the pid and newline.
    auto written = [&](const char* name) {
      auto text = read_file(dir.path() / name);
      return text && !text->empty() && text->back() == '\n';
    };
    for (int i = 0; i < 1000 && !(written("sampler.pid") && written("srun.pid")); ++i) {
      ::usleep(10'000);
    }
    return std::move(*child);
  }
  pid_t pid_in(const char* name) {
    auto text = read_file(dir.path() / name);
    return text ? static_cast<pid_t>(std::atoi(text->c_str())) : -1;
  }
  // Alive and not a zombie waiting for its reaper.
  static bool running(pid_t pid) {
    auto stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
    if (!stat) return false;
    const size_t close = stat->rfind(')');
    return close != std::string::npos && close + 2 < stat->size() && (*stat)[close + 2] != 'Z';
  }
  ExitInfo wait_for(ChildProcess& child) {
    for (int i = 0; i < 2000; ++i) {
      if (auto e = child.poll()) return *e;
      ::usleep(10'000);
    }
    ADD_FAILURE() << "the job script did not end: " << file_tail(dir.path() / "job.out");
    return child.stop();
  }
  TempDir dir;
  fs::path bin;
};

TEST_F(SlurmScriptLifecycle, SamplerStopsWhenTheServerStepEnds) {
  auto child = start("sleep 0.3\nexit 3\n");
  ASSERT_TRUE(child);
  const pid_t sampler = pid_in("sampler.pid");
  ASSERT_GT(sampler, 0) << file_tail(dir.path() / "job.out");
  const ExitInfo e = wait_for(*child);
  EXPECT_FALSE(e.signaled) << e.describe();
  EXPECT_EQ(e.code, 3) << "the script's status is srun's";
  for (int i = 0; i < 200 && running(sampler); ++i) ::usleep(10'000);  // the kill is asynchronous
  EXPECT_FALSE(running(sampler)) << "the GPU power sampler outlived the job script";
}

TEST_F(SlurmScriptLifecycle, CancelledJobForwardsTheSignalAndStopsTheSampler) {
  auto child = start("trap 'echo srun-got-term; kill $s; exit 143' TERM\nsleep 300 &\ns=$!\nwait $s\n");
  ASSERT_TRUE(child);
  const pid_t sampler = pid_in("sampler.pid");
  const pid_t srun = pid_in("srun.pid");
  ASSERT_GT(sampler, 0);
  ASSERT_GT(srun, 0);
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);  // only the script, as scancel's first signal
  const ExitInfo e = wait_for(*child);
  EXPECT_EQ(e.code, 143) << e.describe() << "\n" << file_tail(dir.path() / "job.out");
  EXPECT_NE(file_tail(dir.path() / "job.out").find("srun-got-term"), std::string::npos)
      << "the signal was not forwarded to srun";
  for (int i = 0; i < 200 && (running(sampler) || running(srun)); ++i) ::usleep(10'000);
  EXPECT_FALSE(running(sampler)) << "the GPU power sampler outlived the job script";
  EXPECT_FALSE(running(srun));
}

TEST(SlurmBatchScript, NoGpusNoPartitionNoAccount) {
  auto script = slurm_batch_script(spec_with({"server"}), SlurmOptions{}, 9000);
  ASSERT_TRUE(script) << script.error().message;
  EXPECT_EQ(script->find("--gpus"), std::string::npos);
  EXPECT_EQ(script->find("--partition"), std::string::npos);
  EXPECT_EQ(script->find("--account"), std::string::npos);
  EXPECT_NE(script->find("#SBATCH --time=\"02:00:00\"\n"), std::string::npos);
}

TEST(SlurmBatchScript, JobNameKeepsOnlyPlainCharacters) {
  ServerSpec spec = spec_with({"server"});
  spec.name = "vllm $(id)\n#SBATCH --x";
  auto script = slurm_batch_script(spec, SlurmOptions{}, 9000);
  ASSERT_TRUE(script) << script.error().message;
  EXPECT_NE(script->find("#SBATCH --job-name=ib-vllm___id___SBATCH_--x\n"), std::string::npos)
      << *script;
}

TEST(SlurmBatchScript, DirectiveValuesAreDoubleQuotedForSbatch) {
  ServerSpec spec = spec_with({"server"});
  spec.log_path = "/logs/a b\"c#d%j'e.log";
  SlurmOptions o;
  o.partition = "p \"x\" #y";
  auto script = slurm_batch_script(spec, o, 9000);
  ASSERT_TRUE(script) << script.error().message;
  // \" inside double quotes is a literal quote for sbatch; %% a literal % in --output.
  EXPECT_NE(script->find("#SBATCH --output=\"/logs/a b\\\"c#d%%j'e.log\"\n"), std::string::npos)
      << *script;
  EXPECT_NE(script->find("#SBATCH --partition=\"p \\\"x\\\" #y\"\n"), std::string::npos) << *script;
}

// The whole script under /bin/sh, with a stand-in `srun` first on PATH that records its
// arguments and environment: what the server would receive, byte for byte.
TEST(SlurmBatchScript, HostileArgvAndEnvReachTheServerUnchanged) {
  TempDir dir;
  const fs::path fake_srun = dir.path() / "srun";
  ASSERT_TRUE(write_file_atomic(fake_srun,
                                "#!/bin/sh\n"
                                "for a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$IB_OUT\"\n"
                                "env -0 > \"$IB_OUT.env\"\n"));
  fs::permissions(fake_srun, fs::perms::owner_all);

  std::vector<std::string> argv = {"/opt/server bin/serve"};
  for (const std::string& s : kHostile) argv.push_back(s);
  argv.push_back("--listen={host}:{port}");
  ServerSpec spec = spec_with(argv);
  for (size_t i = 0; i < kHostile.size(); ++i) {
    spec.env["HOSTILE_" + std::to_string(i)] = kHostile[i];
  }
  spec.log_path = dir.path() / "log $(touch PWNED) `x`.txt";
  auto script = slurm_batch_script(spec, SlurmOptions{}, 4242);
  ASSERT_TRUE(script) << script.error().message;
  const fs::path script_path = dir.path() / "job.sbatch";
  ASSERT_TRUE(write_file_atomic(script_path, *script));

  CommandOptions co;
  co.cwd = dir.path();
  co.env_set["PATH"] = dir.path().string() + ":/usr/bin:/bin";
  co.env_set["IB_OUT"] = (dir.path() / "argv").string();
  auto r = run_command({"/bin/sh", script_path.string()}, co);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->ok()) << r->err << "\n" << *script;

  auto got = read_file(dir.path() / "argv");
  ASSERT_TRUE(got) << got.error().message;
  std::vector<std::string> want = {"--ntasks=1", "--kill-on-bad-exit=1", "--",
                                   "/opt/server bin/serve"};
  for (const std::string& s : kHostile) want.push_back(s);
  want.push_back("--listen=0.0.0.0:4242");
  EXPECT_EQ(split_nul(*got), want);

  auto env = read_file(dir.path() / "argv.env");
  ASSERT_TRUE(env) << env.error().message;
  std::vector<std::string> vars = split_nul(*env);
  for (size_t i = 0; i < kHostile.size(); ++i) {
    const std::string entry = "HOSTILE_" + std::to_string(i) + "=" + kHostile[i];
    EXPECT_NE(std::find(vars.begin(), vars.end(), entry), vars.end()) << "missing " << entry;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "PWNED"));
}

TEST(SlurmBatchScript, RejectsWhatCannotBeWrittenSafely) {
  {
    ServerSpec spec = spec_with({"server"});
    spec.env["NOT-AN-IDENTIFIER"] = "x";
    auto s = slurm_batch_script(spec, SlurmOptions{}, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("NOT-AN-IDENTIFIER"), std::string::npos) << s.error().message;
  }
  {
    ServerSpec spec = spec_with({"server"});
    spec.env["1ABC"] = "x";
    EXPECT_FALSE(slurm_batch_script(spec, SlurmOptions{}, 1));
  }
  {
    ServerSpec spec = spec_with({"server"});
    spec.log_path = "/logs/a\nrm -rf ~.log";
    auto s = slurm_batch_script(spec, SlurmOptions{}, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("log path"), std::string::npos) << s.error().message;
  }
  {
    ServerSpec spec = spec_with({"server"});
    spec.log_path = "/logs/a\\b.log";
    auto s = slurm_batch_script(spec, SlurmOptions{}, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("backslash"), std::string::npos) << s.error().message;
  }
  {
    SlurmOptions o;
    o.partition = "gpu\n#SBATCH --uid=0";
    auto s = slurm_batch_script(spec_with({"server"}), o, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("partition"), std::string::npos) << s.error().message;
  }
  {
    SlurmOptions o;
    o.extra_sbatch_args = {"--qos=a\rb"};
    EXPECT_FALSE(slurm_batch_script(spec_with({"server"}), o, 1));
  }
  {
    auto s = slurm_batch_script(spec_with({}), SlurmOptions{}, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("empty argv"), std::string::npos) << s.error().message;
  }
  {
    auto s = slurm_batch_script(spec_with({"server", std::string("a\0b", 3)}), SlurmOptions{}, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("NUL"), std::string::npos) << s.error().message;
  }
  {
    ServerSpec spec = spec_with({"server"});
    spec.log_path.clear();
    EXPECT_FALSE(slurm_batch_script(spec, SlurmOptions{}, 1));
  }
}

TEST(SlurmLauncher, IsNamedSlurm) {
  EXPECT_EQ(make_slurm_launcher(SlurmOptions{})->name(), "slurm");
}

}  // namespace
}  // namespace ib::launch
