// Parsing JSON that a person or another tool wrote (traces, result files, resumable state): as
// boost::json::parse, and an object that names the same member twice is an error. The JSON
// standard leaves duplicates to the reader and Boost keeps one of them silently, so an edited
// file's "in": 100 ... "in": 5000 would be read as one of the two without a word.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib {

/// The first member named twice in one object of a JSON text: its (decoded) name, the line (from
/// 1) of its second occurrence, and the object it is in ("trace.requests[3]"; "" for the
/// top-level object).
struct DuplicateKey {
  std::string key;
  int line = 0;
  std::string path;
};

/// The first duplicate member of `text`, which must be valid JSON (parse it first); nullopt when
/// there is none. Linear in the text; nesting bounded only by memory, as the parse before it.
std::optional<DuplicateKey> find_duplicate_key(std::string_view text);

/// `text` parsed (`source` names it in errors: "SOURCE: not valid JSON: ...", "SOURCE:LINE:
/// PATH: key \"K\" appears twice in one object ...", PATH the object's).
/// `line`: where `text` starts in its file, for one line of a JSON Lines file ("SOURCE:LINE: not
/// valid JSON: ..."); 0 for a whole file.
Expected<boost::json::value> parse_json_strict(std::string_view text, const std::string& source,
                                               int line = 0);

}  // namespace ib
