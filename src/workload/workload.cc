#include "workload/workload.h"

#include <fmt/format.h>

#include <algorithm>

namespace ib::workload {

std::string sorted_json(const boost::json::value& v) {
  if (v.is_object()) {
    std::vector<std::pair<std::string, const boost::json::value*>> items;
    for (const auto& kv : v.as_object()) items.emplace_back(std::string(kv.key()), &kv.value());
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out = "{";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ',';
      out += boost::json::serialize(boost::json::value(items[i].first));
      out += ':';
      out += sorted_json(*items[i].second);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    const auto& a = v.as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      if (i) out += ',';
      out += sorted_json(a[i]);
    }
    return out + "]";
  }
  if (v.is_double()) {
    // Shortest round-trip form, as Python writes floats ("0.8", "2.0"), not Boost's "8E-1".
    std::string s = fmt::format("{}", v.as_double());
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  return boost::json::serialize(v);
}

std::string Workload::key(int64_t concurrency) const {
  return kind() + ":" + sorted_json(canonical(concurrency));
}

}  // namespace ib::workload
