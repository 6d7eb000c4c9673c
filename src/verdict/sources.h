// Where the sides of `inferbench compare` come from (docs/compare.md, "Inputs"): stored runs
// (one run and the repeats of its `sweep --repeat` group, or every run at a git revision), or a
// folder of result files (inferbench's conc_<C>.json, InferenceX aggregates, vLLM
// benchmark_serving results). Per-request records are read from records_conc_<C>.jsonl beside a
// point's result when present.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/expected.h"
#include "metrics/record.h"
#include "store/store.h"
#include "verdict/compare.h"

namespace ib::verdict {

/// The run `id_or_name` and, when it is one repeat of a `sweep --repeat N` group, the other runs
/// of its group (options.repeat.group), oldest first. Error names the run when it is unknown.
Expected<std::vector<store::RunRecord>> runs_of(store::Store& st, const std::string& id_or_name);

/// The stored runs whose recorded git revision is `revision` (a full hash, or an abbreviation of
/// 4+ hex digits), oldest first; running runs are left out. Empty when there is none.
Expected<std::vector<store::RunRecord>> runs_at_revision(store::Store& st,
                                                         const std::string& revision);

/// Every point of `runs`, with identity fields and per-request records.
Expected<Side> side_from_runs(store::Store& st, const std::vector<store::RunRecord>& runs,
                              const std::string& label);

/// Every result file under `folder` (recursively; agg_conc_<C>.json is skipped beside its
/// conc_<C>.json; files without any headline metric are skipped). Error names the file that is
/// not JSON, or the folder when it holds no result.
Expected<Side> side_from_folder(const std::filesystem::path& folder);

/// A records_conc_<C>.jsonl file (metrics::record_to_json lines). Error names the file and line.
Expected<std::vector<metrics::RequestRecord>> read_records(const std::filesystem::path& file);
/// The same from a records file's text; `file` names it in errors.
Expected<std::vector<metrics::RequestRecord>> parse_records(const std::string& text,
                                                            const std::filesystem::path& file);

/// A point from one result JSON (its identity from the InferenceX / vLLM keys it has).
SidePoint point_from_result(const boost::json::object& result, const std::string& source);

}  // namespace ib::verdict
