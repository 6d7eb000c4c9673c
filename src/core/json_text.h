// JSON text as the field writes it (Python's json, vLLM's results): a double is the shortest
// decimal that reads back to the same value, with a ".0" when it is whole ("20.0", "0.1",
// "1.5e-07"), never Boost.JSON's "2E1"; a value that is not a number (NaN, infinity) is null,
// never the invalid "NaN"/"Infinity". Every JSON document inferbench writes goes through here.
#pragma once

#include <boost/json.hpp>
#include <string>

namespace ib {

/// `v` as compact JSON text.
std::string json_text(const boost::json::value& v);
std::string json_text(const boost::json::object& o);
std::string json_text(const boost::json::array& a);

/// Appends `v` as compact JSON text to `out`.
void append_json(std::string& out, const boost::json::value& v);

}  // namespace ib
