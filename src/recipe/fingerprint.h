// recipe-fingerprint: a stable identity for "the same curve" (a matrix row without its
// concurrency), computed exactly as InferenceX's process_changelog.py does so that hashes agree.
#pragma once

#include <boost/json.hpp>
#include <string>

namespace ib::recipe {

/// Canonical JSON as Python's json.dumps(v, sort_keys=True, separators=(",", ":"),
/// ensure_ascii=True): keys sorted by code point, no whitespace, non-ASCII escaped as \uXXXX
/// (surrogate pairs above U+FFFF), floats in shortest round-trip form with a ".0" when integral.
std::string canonical_json(const boost::json::value& value);

/// sha256 (hex) of canonical_json(row) with `conc`, `exp-name` and `recipe-fingerprint` removed,
/// and the eval markers normalised (`run-eval` false; `eval-conc`, `eval-only`,
/// `eval-all-concs` removed) so that every point of a curve shares one fingerprint and it equals
/// InferenceX's for throughput rows (which it generates with --no-evals). docs/recipes.md.
std::string recipe_fingerprint(const boost::json::object& row);

}  // namespace ib::recipe
