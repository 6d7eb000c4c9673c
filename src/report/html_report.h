// `inferbench report`: one self-contained, offline HTML file for one or more stored runs, with an
// optional baseline run to compare against (docs/report.md).
//
// The C++ side reads what the store holds and turns it into one JSON document (the report's data
// model: runs, server configurations with their identity, points with flat metrics per
// percentile, timeslices); the page's own JavaScript (src/report/assets/) draws everything from
// it. Frontiers are computed in the page because they must follow the percentile and axis
// selectors; the things that do not depend on them (identity, series, confounders) are computed
// here, where they are unit-tested.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace ib::report {

/// Everything the report shows about one run: Store::run_details with its timeslices.
using ReportRun = store::RunDetails;

struct ReportInput {
  std::vector<ReportRun> runs;        // the runs reported on ("head" in comparison mode)
  std::optional<ReportRun> baseline;  // --baseline
  std::string command_line;           // how the report was made
  int64_t generated_at = 0;           // unix seconds
};

/// A server configuration's identity: what a point is, in the terms of the field's dashboards.
/// Empty strings where the store does not say.
struct Identity {
  std::string model, image, engine, engine_version, precision, hardware, runner;
  std::string spec_decoding = "none";
  std::string parallelism;  // "TP1", "TP8 EP8 DPA", "P2xTP4 D1xTP8"
  int64_t gpus = 0;         // from the point's num_gpus when known
};

/// From the stored recipe row and effective configuration. Hardware: the row's `hardware`
/// (a runners file), else the effective setting `hardware` (serve-sim), else the runner label.
Identity identity_of(const store::ServerConfigRecord& c);

/// The series a point belongs to: hardware × engine × precision × spec decoding
/// ("H200 · serve-sim · bf16" with " · spec mtp" when set).
std::string series_name(const Identity& id);

/// One identity field whose values differ between the baseline and the head runs.
struct Confounder {
  std::string field;  // image, model, engine version, hardware, precision, workload, ...
  std::vector<std::string> base, head;  // distinct values on each side, sorted
};

/// The identity fields that differ between two runs, beside the change under test
/// (DESIGN.md §5 "Compare like with like"): image, model, engine, engine version, hardware,
/// precision, spec decoding, workload, tool version, host, time scale.
std::vector<Confounder> confounders(const ReportRun& base, const ReportRun& head);

/// The report's data model (docs/report.md "Data"): the JSON the page embeds and its CSV/JSON
/// downloads are made of.
boost::json::object report_data(const ReportInput& in);

/// JSON text safe inside <script type="application/json">: '<', '>' and '&' are written as
/// \u003c, \u003e, \u0026 (so no string can close the element), and U+2028/2029 escaped.
std::string script_safe_json(const boost::json::value& v);

/// Text safe as HTML element content or attribute value.
std::string html_escape(std::string_view s);

/// The whole page: the template (src/report/assets/) with the data embedded.
std::string render_html(const ReportInput& in);

}  // namespace ib::report
