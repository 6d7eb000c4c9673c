// The recipe model: InferenceX master-config entries (its utils/matrix_logic/validation.py and
// configs/CONFIGS.md) plus our
// `serve` and `expect` extensions, and the strict loader that validates them (docs/recipes.md).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/expected.h"
#include "recipe/yaml_reader.h"

namespace ib::recipe {

/// Upper bounds on a recipe's and a runners file's numbers (docs/recipes.md, "Limits"). Far above
/// real use, they keep every value within the `int` the load generator and the simulator hold it
/// in (3000000000 is an error, not -1294967296), and what a value sizes (prompts, lanes, rows)
/// within memory, checked before anything is allocated.
namespace limits {
inline constexpr int64_t kMaxConcurrency = 100'000;     // conc-list, conc-start, conc-end
inline constexpr size_t kMaxConcValues = 1'000;         // values in one conc-list
inline constexpr int64_t kMaxSeqLen = 4'194'304;        // isl, osl (tokens; 4 Mi)
inline constexpr int64_t kMaxParallel = 4'096;          // tp, pp, ep, dcp/pcp-size, num-worker,
                                                        // gpus-per-node
inline constexpr int64_t kMaxPromptsPerConc = 1'000;    // prompts- and warmups-per-conc,
                                                        // warmup-requests-per-lane
inline constexpr int64_t kMaxPrompts = 10'000'000;      // min-prompts; and prompts of one point
inline constexpr int64_t kMaxTraces = 1'000'000;        // max-traces
inline constexpr double kMaxDurationSeconds = 604'800;  // workload.duration (one week)
inline constexpr double kMaxTimeScale = 1'000;          // workload.time-scale
inline constexpr int64_t kMaxDramMib = int64_t{1} << 30;  // available-cpu-dram-mib (1 PiB)
}  // namespace limits

struct Router {
  std::string name;
  std::string version;
};

struct OffloadBackend {
  std::string name;
  std::optional<std::string> version;
};

/// A prefill or decode worker pool of a multi-node entry; defaults as InferenceX fills them.
struct Worker {
  int64_t num_worker = 0;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  int64_t ep = 1;
  bool dp_attn = false;
  std::optional<std::string> hardware;
  std::vector<std::string> additional_settings;  // "KEY=VALUE", exported verbatim
};

/// One search-space entry. Single-node entries set `tp`; multi-node ones `prefill` and `decode`.
struct SearchSpaceEntry {
  std::optional<int64_t> tp;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  int64_t ep = 1;
  bool dp_attn = false;
  std::string spec_decoding = "none";  // mtp | draft_model | none
  std::optional<Router> router;
  std::optional<std::string> kv_p2p_transfer;
  std::vector<int64_t> conc;  // conc-list, or expanded from conc-start/conc-end
  std::optional<Worker> prefill;
  std::optional<Worker> decode;
  std::string kv_offloading = "none";  // agentic only: none | dram
  std::optional<OffloadBackend> kv_offload_backend;
};

struct FixedSeqLen {
  int64_t isl = 0;
  int64_t osl = 0;
  std::vector<SearchSpaceEntry> search_space;
};

struct AgenticCoding {
  std::optional<double> dram_utilization;
  std::vector<SearchSpaceEntry> search_space;
};

/// Our extension (docs/trace-replay.md): a timed request trace replayed at its recorded times;
/// each search-space entry's concurrency caps the requests in flight.
struct TimedTraceScenario {
  std::string trace;   // the file, relative paths resolved against the recipe's folder
  std::string format;  // mooncake | bailian | burstgpt | azure
  std::optional<int64_t> block_size, max_requests;
  std::string window;  // "START:END" seconds; empty: all
  std::optional<double> time_scale, max_lag_ms;
  int line = 0;  // 1-based line of the scenario entry
  std::vector<SearchSpaceEntry> search_space;
};

/// Our extension: how to start the server. Placeholders such as {model}, {tp} and {port} in
/// `command` and `extra_args` are substituted per row (docs/recipes.md lists them).
///
/// A disaggregated entry (disagg: true) may instead say how each role starts: `serve: {prefill:
/// {...}, decode: {...}, router: {...}}`, each a serve block of its own; then `roles` holds them
/// in that order and the fields above are unused.
struct ServeSpec {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<std::string> extra_args;
  std::string health_path = "/health";
  /// The router's block only: the node a multi-node launcher runs it on (first-decode,
  /// first-prefill, own); "" for the default (first-decode).
  std::string node;
  std::vector<std::pair<std::string, ServeSpec>> roles;  // "prefill", "decode", "router"
  bool has_roles() const { return !roles.empty(); }
};

/// The roles a disaggregated serve block names, in the order a deployment starts them.
inline constexpr const char* kServeRoles[] = {"prefill", "decode", "router"};

/// Our extension: how each point's requests are drawn (fixed-seq-len scenarios). Unset fields
/// take the command line's value, else the workload's default (workload/fixed_seq_len.h).
struct WorkloadSpec {
  std::optional<int64_t> prompts_per_conc, min_prompts, warmups_per_conc, seed;
  std::optional<double> range_ratio;
  // agentic-coding rows (AgentX replay): trace paths (relative ones against the recipe file's
  // folder), how many traces, warmup requests per lane, recorded duration, time scale.
  std::vector<std::string> traces;
  std::optional<int64_t> max_traces, warmup_requests_per_lane;
  std::optional<double> duration, time_scale;
  // The served model's tokenizer and chat template (docs/tokenizer.md): prompts of exact length.
  // Paths resolved against the recipe file's folder; the line is for messages.
  std::string tokenizer, chat_template;
  int tokenizer_line = 0;
  // Routed deployments (docs/agentic.md, "Routed deployments"): what each replayed request tells
  // the router of its session (none | dynamo-header | dynamo-nvext | smg-routing-key) and the
  // nvext timeout; the prefix cache emptied on every worker before each point (true: SGLang's
  // POST /flush_cache; a path: that endpoint), retried while requests drain, up to
  // flush-timeout seconds.
  std::string session_routing;
  std::optional<int64_t> session_timeout;
  std::string flush_cache;  // "": none; else the path
  std::optional<double> flush_timeout;
};

/// One config key of a master-config file.
struct ConfigEntry {
  std::string key;
  std::string file;
  int line = 0;  // 1-based line of the key
  std::string image;
  std::string model;
  std::string model_prefix;
  std::string precision;
  std::string framework;
  std::string runner;
  bool multinode = false;
  bool disagg = false;
  std::optional<Router> router;
  std::optional<std::string> kv_p2p_transfer;
  std::vector<FixedSeqLen> fixed_seq_len;
  std::vector<AgenticCoding> agentic_coding;
  std::vector<TimedTraceScenario> timed_trace;
  std::optional<ServeSpec> serve;
  std::optional<boost::json::value> expect;  // kept as data; checked by `verify` later
  std::optional<WorkloadSpec> workload;
  /// The entry as written (merge keys resolved), for field-level comparison by `changed`.
  boost::json::value raw;
};

/// Hardware facts for a runner label (runners.yaml `hardware:`), plus our `launcher` extension.
struct RunnerHardware {
  int64_t available_cpu_dram_mib = 0;
  int64_t gpus_per_node = 0;
  std::string launcher = "slurm";  // local | slurm | endpoint
};

struct RunnersFile {
  std::map<std::string, std::vector<std::string>> labels;
  std::map<std::string, RunnerHardware> hardware;
};

/// The expansion step: [start, 2*start, 4*start, ...] with the last value clamped to `end` and
/// `end` always included (as InferenceX's generate_sweep_configs.py does).
/// REQUIRES: 0 < start <= end, step > 1.
std::vector<int64_t> expand_concurrency(int64_t start, int64_t end, int64_t step = 2);

/// Parses and validates one master-config document; appends entries and diagnostics. `file` names
/// the source in diagnostics. Runner labels are not checked against a runners file: the real
/// InferenceX configs use labels their runners.yaml does not list.
void parse_master_config(const std::string& text, const std::string& file,
                         std::vector<ConfigEntry>* entries, std::vector<Diagnostic>* diagnostics);

/// The recipe files `paths` name: a file as it is; a directory, its `*.yaml` and `*.yml` files (not
/// its subdirectories), sorted by name. A directory without any is an error naming it, and so is a
/// path that does not exist.
Expected<std::vector<std::filesystem::path>> expand_recipe_paths(
    const std::vector<std::filesystem::path>& paths);

/// For the terminal: one line per directory in `paths`, naming the files expand_recipe_paths()
/// reads from it ("DIR/: reading a.yaml, b.yaml"); nothing when every path is a file.
std::vector<std::string> describe_expansion(const std::vector<std::filesystem::path>& paths);

/// Loads master-config files (directories expand as expand_recipe_paths() does); keys must be
/// unique across all of them, and each file must define at least one (an empty or comment-only
/// file is an error: "no config keys in FILE"). On any problem returns an Error whose message
/// lists every diagnostic, one per line. A file larger than YamlLimits::max_bytes is rejected
/// before it is read.
Expected<std::vector<ConfigEntry>> load_master_configs(
    const std::vector<std::filesystem::path>& files);

/// The entries whose key matches one of `globs` (fnmatch, as InferenceX's test-config), in file
/// order; empty globs: all. A glob that matches nothing is an error naming it.
Expected<std::vector<ConfigEntry>> select_keys(const std::vector<ConfigEntry>& entries,
                                               const std::vector<std::string>& globs);

/// The same for texts already read: (name used in diagnostics, bytes) pairs. A text without
/// config keys is not an error here (a revision's tree may hold an emptied recipe).
Expected<std::vector<ConfigEntry>> load_master_texts(
    const std::vector<std::pair<std::string, std::string>>& files);

void parse_runners(const std::string& text, const std::string& file, RunnersFile* out,
                   std::vector<Diagnostic>* diagnostics);
Expected<RunnersFile> load_runners(const std::filesystem::path& file);

/// Whether `name` may be an environment variable of `serve.env`: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

/// A YAML file's bytes; one larger than YamlLimits::max_bytes, or a directory, is an error naming
/// the file before anything is read.
Expected<std::string> read_yaml_file(const std::filesystem::path& path);

/// Placeholders `serve.command` and `serve.extra-args` may use (docs/recipes.md): row values,
/// plus {host} and {port}, which the launcher fills in.
const std::set<std::string>& serve_placeholders();

}  // namespace ib::recipe
