#include "metrics/aggregate.h"

namespace ib::metrics {

boost::json::object inferencex_aggregate(const boost::json::object& f,
                                         const std::string& recipe_fingerprint, bool multinode,
                                         int64_t conc, const boost::json::object& result,
                                         int gpus) {
  boost::json::object a;
  auto copy = [&](const char* from, const char* to) {
    if (const auto* v = f.if_contains(from)) a[to] = *v;
  };
  copy("runner", "hw");
  a["conc"] = conc;
  copy("image", "image");
  copy("model", "model");
  copy("model-prefix", "infmax_model_prefix");
  copy("framework", "framework");
  copy("precision", "precision");
  copy("spec-decoding", "spec_decoding");
  copy("disagg", "disagg");
  a["recipe_fingerprint"] = recipe_fingerprint;
  copy("isl", "isl");
  copy("osl", "osl");
  a["is_multinode"] = multinode;
  copy("tp", "tp");
  copy("pp", "pp");
  copy("dcp-size", "dcp_size");
  copy("pcp-size", "pcp_size");
  copy("ep", "ep");
  copy("dp-attn", "dp_attention");
  a["num_gpus"] = gpus;
  for (const auto& kv : result) {
    std::string k(kv.key());
    const boost::json::value& v = kv.value();
    if (!v.is_number()) continue;
    a[k] = v;
    if (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0) {
      a[k.substr(0, k.size() - 3)] = v.to_number<double>() / 1000.0;
    }
    if (auto pos = k.find("tpot"); pos != std::string::npos) {
      std::string name = k.substr(0, pos) + "intvty" + k.substr(pos + 4);
      if (name.size() > 3 && name.compare(name.size() - 3, 3, "_ms") == 0) {
        name = name.substr(0, name.size() - 3);
      }
      const double t = v.to_number<double>();
      a[name] = t > 0 ? 1000.0 / t : 0.0;
    }
  }
  return a;
}

}  // namespace ib::metrics
