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

#include "metrics/identity.h"
#include "store/store.h"

namespace ib::report {

/// Everything the report shows about one run: Store::run_details with its timeslices.
using ReportRun = store::RunDetails;

struct ReportInput {
  std::vector<ReportRun> runs;        // the runs reported on ("head" in comparison mode)
  std::optional<ReportRun> baseline;  // --baseline
  std::string command_line;           // how the report was made
  int64_t generated_at = 0;           // unix seconds
  /// The Trends section: history::Series::to_json of the reported keys' series over the whole
  /// database (docs/history.md); empty: none.
  boost::json::array trends;
};

/// The series a point belongs to: hardware × engine × precision × spec decoding
/// ("H200 · serve-sim · bf16" with " · spec mtp" when set).
std::string series_name(const metrics::Identity& id);

/// The identity fields that differ between two runs, beside the change under test
/// (metrics::confounders over each run's points and configurations): the same list `compare`
/// and `verify` name.
std::vector<metrics::Confounder> confounders(const ReportRun& base, const ReportRun& head);

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
