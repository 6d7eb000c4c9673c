#include "report/html_report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

namespace ib::report {
namespace {

namespace json = boost::json;

store::ServerConfigRecord sim_config(int64_t id,
                                     const std::string& image = "inferbench/serve-sim") {
  store::ServerConfigRecord c;
  c.id = id;
  c.run_id = 1;
  c.config_key = "llama8b-bf16-h200-servesim";
  c.fingerprint = "abcdef0123456789";
  c.launcher = "local";
  c.row = json::parse(R"({"image":")" + image +
                      R"(","model":"meta-llama/Llama-3.1-8B-Instruct","precision":"bf16",
      "framework":"serve-sim","runner":"local","tp":1,"ep":1,"dp-attn":false,
      "spec-decoding":"none","isl":512,"osl":64})")
              .as_object();
  c.effective_config =
      json::parse(
          R"({"engine":"serve-sim","settings":{"hardware":"H200","engine-version":"0.1.0"}})")
          .as_object();
  c.status = store::ConfigStatus::kOk;
  return c;
}

store::PointRecord fixed_point(int64_t id, int64_t config, int64_t conc, double tput) {
  store::PointRecord p;
  p.id = id;
  p.run_id = 1;
  p.server_config_id = config;
  p.concurrency = conc;
  p.workload_key = R"({"isl":512,"osl":64})";
  p.result = json::object{{"workload_label", "isl 512 / osl 64"},
                          {"tput_per_gpu", tput},
                          {"output_tput_per_gpu", tput / 9},
                          {"input_tput_per_gpu", tput * 8 / 9},
                          {"median_intvty", 100.0 / conc},
                          {"p90_intvty", 90.0 / conc},
                          {"p99_intvty", 80.0 / conc},
                          {"median_ttft_ms", 10.0},
                          {"p90_ttft_ms", 12.0},
                          {"p99_ttft_ms", 15.0},
                          {"median_e2el_ms", 700.0},
                          {"p90_e2el_ms", 800.0},
                          {"p99_e2el_ms", 900.0},
                          {"completed", 8},
                          {"failed", 0},
                          {"num_gpus", 1},
                          {"energy", json::object{{"power_valid", true},
                                                  {"joules_per_output_token", 0.5},
                                                  {"avg_power_w", 600.0}}}};
  store::set_headline_from_result(p);
  return p;
}

ReportRun sim_run(const std::string& name, const std::string& image = "inferbench/serve-sim") {
  ReportRun r;
  r.run.id = 1;
  r.run.name = name;
  r.run.tool_version = "0.1.0";
  r.run.host = "box";
  r.run.status = store::RunStatus::kOk;
  r.configs.push_back(sim_config(1, image));
  r.points.push_back(fixed_point(1, 1, 1, 100));
  r.points.push_back(fixed_point(2, 1, 4, 300));
  r.counts.ok = 2;
  return r;
}

// The JSON between the data element's tags.
json::value embedded_data(const std::string& html) {
  const std::string open = R"(<script type="application/json" id="ib-data">)";
  const size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a + open.size());
  EXPECT_NE(b, std::string::npos);
  return json::parse(html.substr(a + open.size(), b - a - open.size()));
}

TEST(HtmlReport, ScriptSafeJsonCannotCloseTheElement) {
  json::value v = json::object{{"recipe", "</script><script>alert(1)</script> & <!--"}};
  const std::string text = script_safe_json(v);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  // And it is still the same JSON.
  EXPECT_EQ(json::parse(text), v);
  EXPECT_EQ(script_safe_json(json::value("a\u2028b")), "\"a\\u2028b\"");
}

TEST(HtmlReport, HtmlEscape) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(HtmlReport, IdentityAndSeriesFromTheStoredRowAndEffectiveConfig) {
  using F = metrics::IdentityField;
  const metrics::Identity id = sim_config(1).identity();
  EXPECT_EQ(id.get(F::kModel), "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(id.get(F::kHardware), "H200");  // effective setting beats the runner label "local"
  EXPECT_EQ(id.get(F::kEngine), "serve-sim");
  EXPECT_EQ(id.get(F::kEngineVersion), "0.1.0");
  EXPECT_EQ(id.get(F::kParallelism), "TP1");
  EXPECT_EQ(series_name(id), "H200 \u00b7 serve-sim \u00b7 bf16");

  auto c = sim_config(2);
  c.row["hardware"] = "B200";
  c.row["spec-decoding"] = "mtp";
  c.row["ep"] = 8;
  c.row["dp-attn"] = true;
  c.row["tp"] = 8;
  const metrics::Identity id2 = c.identity();
  EXPECT_EQ(series_name(id2), "B200 \u00b7 serve-sim \u00b7 bf16 \u00b7 spec mtp");
  EXPECT_EQ(id2.get(F::kParallelism), "TP8 EP8 DPA");
}

TEST(HtmlReport, DataHasFlatMetricsPerPercentileAndValidity) {
  ReportInput in;
  in.runs.push_back(sim_run("head"));
  auto& bad = in.runs[0].points[1];
  bad.status = metrics::PointStatus::kInvalid;
  bad.validity.add(metrics::InvalidKind::kClientHealth, "client CPU saturated");
  const json::object d = report_data(in);
  EXPECT_EQ(d.at("schema"), "inferbench-report/1");
  const auto& pts = d.at("points").as_array();
  ASSERT_EQ(pts.size(), 2u);
  const auto& p0 = pts[0].as_object();
  EXPECT_EQ(p0.at("series"), "H200 \u00b7 serve-sim \u00b7 bf16");
  EXPECT_EQ(p0.at("workload"), "isl 512 / osl 64");
  EXPECT_EQ(p0.at("valid"), true);
  const auto& m = p0.at("m").as_object();
  EXPECT_DOUBLE_EQ(m.at("intvty").at("p99").as_double(), 80.0);
  EXPECT_DOUBLE_EQ(m.at("ttft_ms").at("p90").as_double(), 12.0);
  EXPECT_DOUBLE_EQ(m.at("j_per_output_token").as_double(), 0.5);
  EXPECT_FALSE(m.at("intvty").as_object().contains("p75"));  // fixed sequence: p50 p90 p99
  const auto& p1 = pts[1].as_object();
  EXPECT_EQ(p1.at("valid"), false);
  EXPECT_EQ(p1.at("validity").as_array().size(), 1u);
  EXPECT_TRUE(d.at("confounders").as_array().empty());
}

TEST(HtmlReport, AFailedPointWithoutResultKeepsItsWorkloadPanel) {
  ReportInput in;
  in.runs.push_back(sim_run("head"));
  store::PointRecord failed;
  failed.id = 3;
  failed.server_config_id = 1;
  failed.concurrency = 16;
  failed.status = metrics::PointStatus::kFailed;
  failed.error = "server exited during startup (exit code 2)";
  failed.workload_key = R"(fixed-seq-len:{"isl":512,"osl":64,"prompts":160})";
  in.runs[0].points.push_back(failed);
  const json::object d = report_data(in);
  const auto& p = d.at("points").as_array()[2].as_object();
  EXPECT_EQ(p.at("workload"), "isl 512 / osl 64");  // the same panel as the measured points
  EXPECT_EQ(p.at("measured"), false);
  EXPECT_EQ(p.at("valid"), false);
  EXPECT_TRUE(p.at("m").at("tput_per_gpu").is_null());
}

TEST(HtmlReport, AgenticPointsReadTheAgenticBlock) {
  ReportInput in;
  in.runs.push_back(sim_run("head"));
  auto& p = in.runs[0].points[0];
  p.result = json::parse(R"({"load_shape":"agentic_replay","workload_label":"agentx",
    "agentic":{"tput_per_gpu":50,"output_tput_per_gpu":5,"input_tput_per_gpu":45,
      "e2e_norm_intvty":{"p50":40,"p75":30,"p90":20,"p95":10},
      "intvty":{"p50":60,"p75":50,"p90":40,"p95":30},
      "ttft_ms":{"p50":100,"p75":200,"p90":300,"p95":400},
      "e2el_ms":{"p50":1000,"p75":2000,"p90":3000,"p95":4000},
      "replay":{"time_scale":100}}})")
                 .as_object();
  const json::object d = report_data(in);
  const auto& p0 = d.at("points").as_array()[0].as_object();
  EXPECT_EQ(p0.at("agentic"), true);
  EXPECT_DOUBLE_EQ(p0.at("time_scale").as_double(), 100);
  const auto& m = p0.at("m").as_object();
  EXPECT_DOUBLE_EQ(m.at("e2e_norm_intvty").at("p90").as_double(), 20);
  EXPECT_DOUBLE_EQ(m.at("tput_per_gpu").as_double(), 50);
  EXPECT_EQ(m.at("percentiles").as_array().size(), 4u);
}

TEST(HtmlReport, ConfoundersNameTheIdentityFieldsThatDiffer) {
  ReportRun base = sim_run("base", "inferbench/serve-sim:1");
  ReportRun head = sim_run("head", "inferbench/serve-sim:2");
  head.run.tool_version = "0.2.0";
  const auto c = confounders(base, head);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].key(), "image");
  EXPECT_EQ(c[0].base, std::set<std::string>{"inferbench/serve-sim:1"});
  EXPECT_EQ(c[0].head, std::set<std::string>{"inferbench/serve-sim:2"});
  EXPECT_TRUE(c[0].confounding);
  EXPECT_EQ(c[1].title(), "tool version");
  EXPECT_TRUE(confounders(base, base).empty());

  ReportInput in;
  in.runs.push_back(head);
  in.baseline = base;
  const json::object d = report_data(in);
  EXPECT_EQ(d.at("comparison"), true);
  const auto& conf = d.at("confounders").as_array();
  ASSERT_EQ(conf.size(), 2u);
  // compare's and verify's JSON form: key, title, values per side.
  EXPECT_EQ(conf[1].at("field").as_string(), "tool_version");
  EXPECT_EQ(conf[1].at("title").as_string(), "tool version");
  EXPECT_EQ(conf[1].at("head").as_array(), (json::array{"0.2.0"}));
  EXPECT_EQ(d.at("points").as_array().size(), 4u);
}

TEST(HtmlReport, PageIsSelfContainedWithTheDataEmbeddedSafely) {
  ReportInput in;
  in.runs.push_back(sim_run("run-</script>-1"));
  in.runs[0].configs[0].row["serve"] = json::object{{"command", "echo </script><b>x</b>"}};
  in.command_line = "inferbench report run-1";
  const std::string html = render_html(in);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  for (const char* marker : {"@@TITLE@@", "@@CSS@@", "@@DATA@@", "@@JS@@"}) {
    EXPECT_EQ(html.find(marker), std::string::npos) << marker;
  }
  // The title is escaped; the data block holds exactly one closing tag (its own).
  EXPECT_NE(html.find("<title>inferbench report: run-&lt;/script&gt;-1</title>"),
            std::string::npos);
  const json::value d = embedded_data(html);
  EXPECT_EQ(d.at("runs").at(0).at("name"), "run-</script>-1");
  EXPECT_EQ(d.at("configs").at(0).at("row").at("serve").at("command"), "echo </script><b>x</b>");
  // Nothing to fetch: no src= or href= to any URL, no @import, no external script.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
}

}  // namespace
}  // namespace ib::report
