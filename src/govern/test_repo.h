// Test support: a throwaway git repository in a temporary folder, with helpers to write files and
// commit (used by the `changed` and `changelog check` tests).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/command.h"
#include "core/temp_dir.h"

namespace ib::govern {

/// One valid single-node vLLM key, `v-key` (the gate's tests edit it).
inline constexpr const char* kVKeyRecipe = R"(v-key:
  image: vllm/vllm-openai:v0.11.0
  model: org/m
  model-prefix: m
  precision: fp8
  framework: vllm
  runner: h200
  multinode: false
  serve:
    command: [vllm, serve, "{model}", --port, "{port}"]
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4, 8] }
)";

/// A perf-changelog entry for `v-key`.
inline std::string v_key_entry(const std::string& what = "Update v-key") {
  return "- config-keys:\n    - v-key\n  description:\n    - \"" + what +
         "\"\n  pr-link: https://github.com/o/r/pull/1\n";
}

class TestRepo {
 public:
  TestRepo() : dir_("ib-git-test") { git({"init", "-q", "-b", "main"}); }

  const std::filesystem::path& root() const { return dir_.path(); }

  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((root() / path).parent_path());
    std::ofstream(root() / path, std::ios::binary) << text;
  }
  void remove(const std::string& path) { std::filesystem::remove(root() / path); }
  void commit(const std::string& message) {
    git({"add", "-A"});
    git({"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty",
         "-m", message});
  }
  void git(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"git", "-C", root().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->ok()) << describe_argv(argv) << ": " << r->err;
  }

 private:
  TempDir dir_;
};

}  // namespace ib::govern
