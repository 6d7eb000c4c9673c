#include "telemetry/power.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/files.h"

namespace ib::telemetry {
namespace {

const std::string kData = std::string(INFERBENCH_TEST_DATA) + "/telemetry/";
// 2026-07-03 22:11:00 UTC, the first sample of every fixture (nvidia-smi's local time read
// with offset 0).
constexpr double kT0 = 1783116660;

std::string fixture(const std::string& name) {
  auto text = read_file(kData + name);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : std::string();
}

PowerLog nvidia(std::string_view text, const NvidiaSmiOptions& options = {}) {
  auto log = parse_nvidia_smi_csv(text, options);
  EXPECT_TRUE(log.ok()) << log.error().message;
  return log.ok() ? std::move(log).value() : PowerLog{};
}

std::string nvidia_error(std::string_view text, const NvidiaSmiOptions& options = {}) {
  auto log = parse_nvidia_smi_csv(text, options);
  EXPECT_FALSE(log.ok());
  return log.ok() ? std::string() : log.error().message;
}

std::vector<std::string> reason_names(const EnergyResult& r) {
  std::vector<std::string> names;
  for (const auto& i : r.reasons) names.push_back(i.reason);
  return names;
}

std::string message_of(const EnergyResult& r, std::string_view reason) {
  for (const auto& i : r.reasons) {
    if (i.reason == reason) return i.message;
  }
  return "";
}

// One sample per GPU at each time, power(gpu, t).
template <class F>
std::vector<PowerSample> synthetic(int gpus, const std::vector<double>& times, F power) {
  std::vector<PowerSample> s;
  for (const double t : times) {
    for (int g = 0; g < gpus; ++g) s.push_back({.t_s = t, .gpu = g, .power_w = power(g, t)});
  }
  return s;
}

std::vector<double> every_second(double from, double to) {
  std::vector<double> t;
  for (double x = from; x <= to + 1e-9; x += 1) t.push_back(x);
  return t;
}

// ---- Parsing ----------------------------------------------------------------------------------

TEST(PowerParse, NvidiaSmiEightGpusAtOneSecond) {
  const PowerLog log = nvidia(fixture("nvidia_smi_8gpu.csv"));
  EXPECT_EQ(log.power_column, "power.draw [W]");
  EXPECT_EQ(log.energy_column, "");
  ASSERT_EQ(log.samples.size(), 21u * 8u);
  const PowerSample& first = log.samples.front();
  EXPECT_DOUBLE_EQ(first.t_s, kT0);
  EXPECT_EQ(first.gpu, 0);
  EXPECT_DOUBLE_EQ(*first.power_w, 114.14);
  EXPECT_DOUBLE_EQ(*first.util_pct, 0);
  EXPECT_DOUBLE_EQ(*first.mem_used_mib, 520);
  EXPECT_DOUBLE_EQ(*first.sm_clock_mhz, 345);
  EXPECT_FALSE(first.energy_j);
  const PowerSample& second = log.samples[9];  // 22:11:01.002, GPU 1
  EXPECT_NEAR(second.t_s, kT0 + 1.002, 1e-6);
  EXPECT_EQ(second.gpu, 1);
  EXPECT_DOUBLE_EQ(*second.mem_used_mib, 76271);
  const PowerSample& last = log.samples.back();
  EXPECT_NEAR(last.t_s, kT0 + 20.040, 1e-6);
  EXPECT_EQ(last.gpu, 7);
  EXPECT_DOUBLE_EQ(*last.power_w, 596.40);
  EXPECT_DOUBLE_EQ(*last.util_pct, 98);
}

TEST(PowerParse, NvidiaSmiTimesAreTheHostsLocalTime) {
  // A host two hours east of UTC printed 22:11 when it was 20:11 UTC.
  const PowerLog log = nvidia(fixture("nvidia_smi_8gpu.csv"), {.utc_offset_s = 7200});
  EXPECT_DOUBLE_EQ(log.samples.front().t_s, kT0 - 7200);
  const PowerLog west = nvidia(fixture("nvidia_smi_8gpu.csv"), {.utc_offset_s = -5 * 3600});
  EXPECT_DOUBLE_EQ(west.samples.front().t_s, kT0 + 5 * 3600);
}

TEST(PowerParse, NvidiaSmiNoUnitsWithNotAvailablePower) {
  const PowerLog log = nvidia(fixture("nvidia_smi_na_power.csv"));
  ASSERT_EQ(log.samples.size(), 21u * 8u);
  int absent = 0;
  for (const auto& s : log.samples) {
    if (!s.power_w) {
      ++absent;
      EXPECT_EQ(s.gpu, 5);
      EXPECT_GE(s.t_s, kT0 + 9);
      EXPECT_LE(s.t_s, kT0 + 12);
      EXPECT_TRUE(s.util_pct);  // only the power cell is [N/A]
    }
  }
  EXPECT_EQ(absent, 3);
  EXPECT_DOUBLE_EQ(*log.samples.front().power_w, 125.44);  // bare numbers (nounits)
}

TEST(PowerParse, NvidiaSmiWithoutHeaderNeedsTheQuery) {
  const std::string rows =
      "2026/07/03 22:11:00.000, 0, 627.40, 100, 32362, 1980\n"
      "2026/07/03 22:11:00.000, 1, [N/A], 100, 32362, 1980\n";
  EXPECT_EQ(nvidia_error(rows),
            "line 1: no header row; output written with --format=csv,noheader needs the "
            "--query-gpu fields");
  const PowerLog log = nvidia(rows, {.query = {"timestamp", "index", "power.draw",
                                               "utilization.gpu", "memory.used", "clocks.sm"}});
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*log.samples[0].power_w, 627.40);
  EXPECT_DOUBLE_EQ(*log.samples[0].sm_clock_mhz, 1980);
  EXPECT_FALSE(log.samples[1].power_w);
  EXPECT_EQ(nvidia_error(rows, {.query = {"index", "power.draw"}}),
            "the --query-gpu fields: no timestamp column");

  // InferenceX's stop_gpu_monitor appends a last sample with --format=csv,noheader under the
  // header of the looping monitor: one file, one header.
  const PowerLog appended = nvidia(
      "timestamp, index, power.draw [W]\n"
      "2026/07/03 22:11:00.000, 0, 627.40 W\n"
      "2026/07/03 22:11:01.500, 0, 630.00 W\n");
  ASSERT_EQ(appended.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(appended.samples[1].t_s, kT0 + 1.5);
}

TEST(PowerParse, NvidiaSmiTokensRepeatsAndACutLastLine) {
  const PowerLog log = nvidia(
      "timestamp, index, power.draw.average [W], power.limit [W], memory.used [MiB]\n"
      "2026/07/03 22:11:00.000, 0, [Not Supported], 700.00 W, N/A\n"
      "2026/07/03 22:11:00.000, 1, [Unknown Error], 700.00 W, [Insufficient Permissions]\n"
      "\n"
      "timestamp, index, power.draw.average [W], power.limit [W], memory.used [MiB]\n"
      "2026/07/03 22:11:01.000, 0, 500.25 W, 700.00 W, 100 MiB\n"
      "2026/07/03 22:11:01.000, 1, 50");  // killed mid-write: no newline, dropped
  // power.draw.average when power.draw was not queried; power.limit is not power drawn.
  EXPECT_EQ(log.power_column, "power.draw.average [W]");
  ASSERT_EQ(log.samples.size(), 3u);
  EXPECT_FALSE(log.samples[0].power_w);
  EXPECT_FALSE(log.samples[0].mem_used_mib);
  EXPECT_FALSE(log.samples[1].power_w);
  EXPECT_FALSE(log.samples[1].mem_used_mib);
  EXPECT_DOUBLE_EQ(*log.samples[2].power_w, 500.25);
  EXPECT_FALSE(log.samples[2].util_pct);  // not queried

  const PowerLog no_power = nvidia(
      "timestamp, index, temperature.gpu\n"
      "2026/07/03 22:11:00.000, 0, 52\n");
  EXPECT_EQ(no_power.power_column, "");
  ASSERT_EQ(no_power.samples.size(), 1u);
  EXPECT_FALSE(no_power.samples[0].power_w);
}

TEST(PowerParse, NvidiaSmiErrorsNameTheLineAndTheColumn) {
  const std::string header = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {header + "2026/07/03 22:11:00.000, 0, 12x W, 100 %\n",
       "line 2, column power.draw [W]: \"12x W\" is not a number"},
      {header + "2026/07/03 22:11:00.000, 0, 627.40 W, 100 %\n"
                "2026/07/03 22:11:01.000, 0, 627400 mW, 100 %\n",
       "line 3, column power.draw [W]: \"627400 mW\" is in mW, expected W"},
      {header + "2026/07/03 22:11:00.000, 0, 627.40 W, 100 MHz\n",
       "line 2, column utilization.gpu [%]: \"100 MHz\" is in MHz, expected %"},
      {header + "2026/13/03 22:11:00.000, 0, 627.40 W, 100 %\n",
       "line 2, column timestamp: \"2026/13/03 22:11:00.000\" is not a timestamp"},
      {header + "[N/A], 0, 627.40 W, 100 %\n",
       "line 2, column timestamp: \"[N/A]\" is not a timestamp"},
      {header + "2026/07/03 22:11:00.000, -1, 627.40 W, 100 %\n",
       "line 2, column index: \"-1\" is not a GPU index"},
      {header + "2026/07/03 22:11:00.000, 0, 627.40 W\n", "line 2: 3 cells, the header has 4"},
      {"timestamp, power.draw [W]\n", "line 1: no index column"},
      {"timestamp, index, power.draw [mW]\n",
       "line 1: column power.draw [mW]: unit mW, expected W"},
      {header + "2026/07/03 22:11:00.000, 0, 627.40 W, 100 %\n"
                "timestamp, index, power.draw [W]\n",
       "line 3: a header different from the one on line 1"},
      {"", "no header row and no samples"},
  };
  for (const Case& c : cases) EXPECT_EQ(nvidia_error(c.text), c.message) << c.text;
}

TEST(PowerParse, AmdSmiWatchOutputWithRepeatedHeaders) {
  auto log = parse_amd_smi_csv(fixture("amd_smi_metric.csv"));
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->power_column, "socket_power");
  EXPECT_EQ(log->energy_column, "total_energy_consumption");
  ASSERT_EQ(log->samples.size(), 21u * 8u);
  const PowerSample& first = log->samples.front();
  EXPECT_DOUBLE_EQ(first.t_s, kT0);
  EXPECT_EQ(first.gpu, 0);
  EXPECT_DOUBLE_EQ(*first.power_w, 162);
  EXPECT_DOUBLE_EQ(*first.util_pct, 0);
  EXPECT_DOUBLE_EQ(*first.energy_j, 4183520.5);
  EXPECT_FALSE(first.mem_used_mib);
  EXPECT_FALSE(first.sm_clock_mhz);
  const PowerSample& last = log->samples.back();
  EXPECT_DOUBLE_EQ(last.t_s, kT0 + 20);  // integer epoch seconds
  EXPECT_EQ(last.gpu, 7);
}

TEST(PowerParse, AmdSmiPreambleAndErrors) {
  auto log = parse_amd_smi_csv(
      "some preamble the tool printed\r\n"
      "timestamp,gpu,socket_power\r\n"
      "1783116660,0,700\r\n"
      "\n"
      "timestamp,gpu,socket_power\r\n"
      "1783116661,0,N/A\r\n");
  ASSERT_TRUE(log.ok()) << log.error().message;
  ASSERT_EQ(log->samples.size(), 2u);
  EXPECT_EQ(log->energy_column, "");
  EXPECT_FALSE(log->samples[1].power_w);
  EXPECT_FALSE(log->samples[1].energy_j);

  // Python's csv writer quotes a value with commas, such as a per-engine activity list.
  auto quoted = parse_amd_smi_csv(
      "timestamp,gpu,vcn_activity,socket_power\r\n"
      "1783116660,0,\"[0, 0, \"\"x\"\", 0]\",700\r\n");
  ASSERT_TRUE(quoted.ok()) << quoted.error().message;
  EXPECT_DOUBLE_EQ(*quoted->samples[0].power_w, 700);
  auto open_quote = parse_amd_smi_csv("timestamp,gpu,socket_power\r\n1783116660,0,\"700\r\n");
  ASSERT_FALSE(open_quote.ok());
  EXPECT_EQ(open_quote.error().message, "line 2: a quoted cell is not terminated");

  auto no_watch = parse_amd_smi_csv("gpu,total_energy_consumption\r\n0,4183520.500\r\n");
  ASSERT_FALSE(no_watch.ok());
  EXPECT_EQ(no_watch.error().message,
            "line 1: no timestamp column (amd-smi writes one only in watch mode, -w)");
  auto bad = parse_amd_smi_csv("timestamp,gpu,socket_power\r\n1783116660,0,7OO\r\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "line 2, column socket_power: \"7OO\" is not a number");
  auto nothing = parse_amd_smi_csv("");
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().message, "no header row (a line starting with \"timestamp,\")");
}

TEST(PowerParse, RocmSmiSnapshot) {
  // rocm-smi --showpower --showenergycounter --csv: the header is `device,<metric names>`, one row
  // per card, missing values N/A, then system-level `name, value` lines.
  auto log = parse_rocm_smi_csv(
      "device,Current Socket Graphics Package Power (W),Energy counter,Accumulated Energy (uJ)\n"
      "card0,712.0,273437500000,4183593750000.0\n"
      "card1,N/A,273437500001,4183593765300.0\n"
      "\n"
      "system, value\n",
      kT0 + 3);
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->power_column, "Current Socket Graphics Package Power (W)");
  EXPECT_EQ(log->energy_column, "Accumulated Energy (uJ)");
  ASSERT_EQ(log->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(log->samples[0].t_s, kT0 + 3);
  EXPECT_EQ(log->samples[1].gpu, 1);
  EXPECT_DOUBLE_EQ(*log->samples[0].power_w, 712);
  EXPECT_DOUBLE_EQ(*log->samples[0].energy_j, 4183593.75);  // µJ to J
  EXPECT_FALSE(log->samples[1].power_w);

  auto bad = parse_rocm_smi_csv("device,Average Graphics Package Power (W)\ngpu0,300\n", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "line 2, column device: \"gpu0\" is not a GPU index");
}

TEST(PowerParse, Timestamps) {
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026/07/03 22:11:09.763", 0), kT0 + 9.763);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026/07/03 22:11:09", 0), kT0 + 9);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026/07/03 22:11:09.5", 3600), kT0 + 9.5 - 3600);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("1970/01/01 00:00:00.000", 0), 0);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2024/02/29 00:00:00", 0), 1709164800);
  // ISO-8601: a zone, when written, wins over the offset.
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026-07-03T22:11:09.250", 0), kT0 + 9.25);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026-07-03 22:11:09Z", 3600), kT0 + 9);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026-07-04T00:11:09+02:00", 0), kT0 + 9);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("2026-07-03T17:11:09-0500", 0), kT0 + 9);
  // Epoch numbers: seconds, or milliseconds above 1e12.
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("1783116660", 3600), kT0);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("1783116660.25", 0), kT0 + 0.25);
  EXPECT_DOUBLE_EQ(*parse_smi_timestamp("1783116660250", 0), kT0 + 0.25);
  for (const char* bad : {"", "[N/A]", "2026/02/29 00:00:00", "2026/07/03 24:00:00",
                          "2026/07/03 22:11:09.", "2026/07/03 22:11:09Z", "2026/07-03 22:11:09",
                          "2026-07-03T22:11:09+2", "22:11:09", "1783116660..5"}) {
    EXPECT_FALSE(parse_smi_timestamp(bad, 0)) << bad;
  }
  EXPECT_DOUBLE_EQ(*parse_utc_offset("+0200\n"), 7200);
  EXPECT_DOUBLE_EQ(*parse_utc_offset("-05:30"), -19800);
  EXPECT_DOUBLE_EQ(*parse_utc_offset("+0000"), 0);
  auto bad = parse_utc_offset("UTC");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "UTC offset \"UTC\" is not of the form +HHMM or +HH:MM");
  EXPECT_FALSE(parse_utc_offset("+0260").ok());
}

// ---- Integration ------------------------------------------------------------------------------

TEST(PowerIntegrate, ConstantPowerIsExact) {
  const auto s = synthetic(2, every_second(0, 10), [](int g, double) { return 300.0 + g * 100; });
  const EnergyResult r = integrate_power(s, 2.3, 7.9, 2);
  EXPECT_TRUE(r.power_valid) << (r.reasons.empty() ? "" : r.reasons[0].message);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_NEAR(*r.gpus[0].energy_j, 300 * 5.6, 1e-9);
  EXPECT_NEAR(*r.gpus[1].energy_j, 400 * 5.6, 1e-9);
  EXPECT_NEAR(*r.total_energy_j, 700 * 5.6, 1e-9);
  EXPECT_NEAR(*r.avg_total_power_w, 700, 1e-9);
  EXPECT_NEAR(*r.avg_power_per_gpu_w, 350, 1e-9);
  EXPECT_EQ(r.gpus[0].samples, 11);  // every sample lies within 3 s of the window
  EXPECT_DOUBLE_EQ(*r.gpus[0].max_gap_s, 1);
  EXPECT_FALSE(r.accumulator.available);
}

TEST(PowerIntegrate, LinearRampIsExact) {
  // Irregular sampling of P = 100 + 10 t: the trapezoid rule is exact on a line.
  const std::vector<double> times = {0, 0.7, 1.9, 2.0, 3.4, 5.1, 5.3, 7.0, 8.2, 9.0};
  const auto s = synthetic(1, times, [](int, double t) { return 100 + 10 * t; });
  const double a = 1.25, b = 8.6;
  const EnergyResult r = integrate_power(s, a, b, 1);
  EXPECT_TRUE(r.power_valid);
  EXPECT_NEAR(*r.total_energy_j, 100 * (b - a) + 5 * (b * b - a * a), 1e-9);
  EXPECT_NEAR(*r.gpus[0].max_gap_s, 1.7, 1e-12);  // 3.4 -> 5.1 and 5.3 -> 7.0
}

TEST(PowerIntegrate, EdgesAreInterpolatedLinearly) {
  // A peak at t = 1: the edges at 0.5 and 1.5 take the interpolated 200 W, not a neighbour's.
  std::vector<PowerSample> s = {{.t_s = 0, .gpu = 0, .power_w = 100},
                                {.t_s = 1, .gpu = 0, .power_w = 300},
                                {.t_s = 2, .gpu = 0, .power_w = 100}};
  EXPECT_NEAR(*integrate_power(s, 0.5, 1.5, 1).total_energy_j, 250, 1e-12);
  // An edge on a sample takes that sample's power.
  EXPECT_NEAR(*integrate_power(s, 1, 2, 1).total_energy_j, 200, 1e-12);
  EXPECT_NEAR(*integrate_power(s, 0, 2, 1).total_energy_j, 400, 1e-12);
  // Within one interval: the area under the chord.
  EXPECT_NEAR(*integrate_power(s, 0.25, 0.75, 1).total_energy_j, 0.5 * 200, 1e-12);
}

TEST(PowerIntegrate, DuplicateReadingsAreAveraged) {
  std::vector<PowerSample> s = {{.t_s = 0, .gpu = 0, .power_w = 100},
                                {.t_s = 0, .gpu = 0, .power_w = 300},
                                {.t_s = 2, .gpu = 0, .power_w = 200}};
  const EnergyResult r = integrate_power(s, 0, 2, 1);
  EXPECT_TRUE(r.power_valid);
  EXPECT_EQ(r.gpus[0].samples, 2);
  EXPECT_NEAR(*r.total_energy_j, 400, 1e-12);
}

TEST(PowerIntegrate, EightGpuFixture) {
  const PowerLog log = nvidia(fixture("nvidia_smi_8gpu.csv"));
  const EnergyResult r = integrate_power(log.samples, kT0 + 2.5, kT0 + 18.3, 8);
  EXPECT_TRUE(r.power_valid) << (r.reasons.empty() ? "" : r.reasons[0].message);
  ASSERT_EQ(r.gpus.size(), 8u);
  // The numbers of an independent trapezoid (a few lines of Python over the same file).
  EXPECT_NEAR(*r.gpus[0].energy_j, 9943.768443773, 1e-6);
  EXPECT_NEAR(*r.gpus[7].energy_j, 9268.304320802, 1e-6);
  EXPECT_NEAR(*r.total_energy_j, 76786.089380472, 1e-6);
  EXPECT_NEAR(*r.avg_power_per_gpu_w, 607.484886173, 1e-6);
  for (const auto& g : r.gpus) {
    EXPECT_EQ(g.samples, 21);
    EXPECT_NEAR(*g.max_gap_s, 1.002, 1e-6);
  }
}

TEST(PowerValidity, WindowNotBracketed) {
  const auto s = synthetic(2, every_second(0, 10), [](int, double) { return 500.0; });
  const EnergyResult early = integrate_power(s, -0.5, 5, 2);
  EXPECT_FALSE(early.power_valid);
  EXPECT_EQ(reason_names(early), std::vector<std::string>{"benchmark_window_not_bracketed"});
  EXPECT_EQ(message_of(early, "benchmark_window_not_bracketed"),
            "gpu 0: the first sample is 0.500 s after the window start; gpu 1: the first "
            "sample is 0.500 s after the window start");
  EXPECT_EQ(early.gpus[0].issues, std::vector<std::string>{"benchmark_window_not_bracketed"});
  EXPECT_FALSE(early.total_energy_j);  // a GPU was not integrated
  EXPECT_FALSE(early.gpus[0].energy_j);
  const EnergyResult late = integrate_power(s, 5, 10.25, 2);
  EXPECT_EQ(message_of(late, "benchmark_window_not_bracketed").substr(0, 51),
            "gpu 0: the last sample is 0.250 s before the window");
  // An amd-smi-like stream stamped in whole seconds misses a window ending at .325 unless it
  // runs on past it (why InferenceX sleeps interval+2 s before stopping it).
  const auto whole = synthetic(1, every_second(150, 153), [](int, double) { return 500.0; });
  EXPECT_TRUE(
      integrate_power(whole, 150.5, 153.325, 1).has_reason("benchmark_window_not_bracketed"));
}

TEST(PowerValidity, SamplingGapExceeded) {
  const PowerLog log = nvidia(fixture("nvidia_smi_gap.csv"));
  const EnergyResult r = integrate_power(log.samples, kT0 + 2.5, kT0 + 18.3, 8);
  EXPECT_FALSE(r.power_valid);
  EXPECT_EQ(reason_names(r), std::vector<std::string>{"sampling_gap_exceeded"});
  EXPECT_EQ(message_of(r, "sampling_gap_exceeded").substr(0, 100),
            "gpu 0: 5.010 s between the samples at window start +4.514 s and +9.524 s (limit 3 "
            "s); gpu 1: 5.010 s");
  ASSERT_EQ(r.gpus.size(), 8u);
  EXPECT_NEAR(*r.gpus[3].max_gap_s, 5.010, 1e-6);
  EXPECT_EQ(r.gpus[3].issues, std::vector<std::string>{"sampling_gap_exceeded"});
  // Integrated all the same (for the audit), never reported as a figure.
  EXPECT_NEAR(*r.total_energy_j, 76636.877658084, 1e-6);
  const auto json = energy_to_json(r, {.requests = 10, .input_tokens = 1000, .output_tokens = 100});
  EXPECT_FALSE(json.contains("total_gpu_energy_j"));
  EXPECT_FALSE(json.contains("joules_per_output_token"));
  EXPECT_TRUE(json.at("per_gpu_energy_j").as_object().contains("3"));
  // A window after the gap is fine: the gap only counts from the sample before the start.
  EXPECT_TRUE(integrate_power(log.samples, kT0 + 12.5, kT0 + 18.3, 8).power_valid);
  // A longer limit accepts it.
  EXPECT_TRUE(
      integrate_power(log.samples, kT0 + 2.5, kT0 + 18.3, 8, {.max_sample_gap_s = 6}).power_valid);
}

TEST(PowerValidity, ExpectedGpuCountMismatch) {
  const PowerLog log = nvidia(fixture("nvidia_smi_8gpu.csv"));
  const EnergyResult r = integrate_power(log.samples, kT0 + 2.5, kT0 + 18.3, 4);
  EXPECT_EQ(reason_names(r), std::vector<std::string>{"expected_gpu_count_mismatch"});
  EXPECT_EQ(message_of(r, "expected_gpu_count_mismatch"),
            "4 GPUs expected, 8 observed (0, 1, 2, 3, 4, 5, 6, 7)");
  EXPECT_TRUE(r.total_energy_j);
}

TEST(PowerValidity, PowerColumnMissing) {
  const PowerLog log = nvidia(
      "timestamp, index, temperature.gpu\n"
      "2026/07/03 22:11:00.000, 0, 52\n"
      "2026/07/03 22:11:01.000, 0, 52\n"
      "2026/07/03 22:11:02.000, 0, 53\n");
  const EnergyResult r = integrate_power(log.samples, kT0 + 0.5, kT0 + 1.5, 1);
  EXPECT_FALSE(r.power_valid);
  EXPECT_EQ(reason_names(r), std::vector<std::string>{"power_column_missing"});
  EXPECT_EQ(message_of(r, "power_column_missing"),
            "none of the 3 samples near the window has a power reading (no power column, or "
            "every cell absent)");
  EXPECT_TRUE(r.gpus.empty());
}

TEST(PowerValidity, InvalidPowerSample) {
  const PowerLog log = nvidia(fixture("nvidia_smi_na_power.csv"));
  const EnergyResult r = integrate_power(log.samples, kT0 + 2.5, kT0 + 18.3, 8);
  EXPECT_FALSE(r.power_valid);
  // Without those three readings GPU 5 has 4.008 s between 8.016 s and 12.024 s as well.
  EXPECT_EQ(reason_names(r),
            (std::vector<std::string>{"invalid_power_sample", "sampling_gap_exceeded"}));
  EXPECT_EQ(r.gpus[5].issues, std::vector<std::string>{"sampling_gap_exceeded"});
  EXPECT_EQ(message_of(r, "invalid_power_sample"),
            "3 samples near the window have no power reading ([N/A] or the like), the first gpu "
            "5 at window start +6.518 s");
  // [N/A] rows more than 3 s before the window cannot matter and do not invalidate it.
  const EnergyResult after = integrate_power(log.samples, kT0 + 14.5, kT0 + 19.5, 8);
  EXPECT_TRUE(after.power_valid);
  EXPECT_NEAR(*after.total_energy_j, 24801.996749756, 1e-6);
  EXPECT_NEAR(*after.gpus[5].energy_j, 3071.238290372, 1e-6);

  auto s = synthetic(1, every_second(0, 4), [](int, double) { return 400.0; });
  s[2].power_w = -3;
  const EnergyResult negative = integrate_power(s, 0.5, 3.5, 1);
  EXPECT_EQ(reason_names(negative), std::vector<std::string>{"invalid_power_sample"});
  EXPECT_EQ(message_of(negative, "invalid_power_sample"),
            "1 samples near the window have a negative or non-finite power, the first gpu 0 at "
            "window start +1.500 s: -3 W");
}

TEST(PowerValidity, TooFewOrNoSamples) {
  auto s = synthetic(2, every_second(0, 10), [](int, double) { return 400.0; });
  // GPU 1 has one reading near the window [20, 21] (at 18 s); GPU 0 has none there.
  s.push_back({.t_s = 18, .gpu = 1, .power_w = 400});
  const EnergyResult one = integrate_power(s, 20, 21, 2);
  EXPECT_EQ(reason_names(one), (std::vector<std::string>{"expected_gpu_count_mismatch",
                                                         "insufficient_power_samples"}));
  EXPECT_EQ(message_of(one, "insufficient_power_samples"),
            "gpu 1: 1 sample near the window, at window start -2.000 s");
  const EnergyResult none = integrate_power(s, 40, 50, 2);
  EXPECT_EQ(reason_names(none), std::vector<std::string>{"no_usable_power_samples"});
  EXPECT_EQ(message_of(none, "no_usable_power_samples"),
            "no usable power sample within 3 s of the window [40.000, 50.000] (23 samples in "
            "all)");
  EXPECT_EQ(reason_names(integrate_power({}, 0, 1, 1)),
            std::vector<std::string>{"no_usable_power_samples"});
}

TEST(PowerValidity, BadArguments) {
  const auto s = synthetic(1, every_second(0, 10), [](int, double) { return 400.0; });
  const EnergyResult backwards = integrate_power(s, 5, 5, 1);
  EXPECT_EQ(reason_names(backwards), std::vector<std::string>{"invalid_benchmark_window"});
  EXPECT_EQ(message_of(backwards, "invalid_benchmark_window"),
            "the window [5.000, 5.000] does not end after it starts");
  EXPECT_TRUE(integrate_power(s, NAN, 5, 1).has_reason("invalid_benchmark_window"));
  const EnergyResult zero_gpus = integrate_power(s, 1, 5, 0);
  EXPECT_EQ(reason_names(zero_gpus), std::vector<std::string>{"invalid_expected_gpu_count"});
  EXPECT_TRUE(zero_gpus.total_energy_j);  // still integrated
  EXPECT_EQ(reason_names(integrate_power(s, 1, 5, 1, {.max_sample_gap_s = 0})),
            std::vector<std::string>{"invalid_max_sample_gap"});
}

TEST(PowerValidity, BenchmarkDurationMismatch) {
  const auto s = synthetic(1, every_second(0, 200), [](int, double) { return 400.0; });
  // max(0.5 s, 1%): 0.5 s on a 10 s window, 1.5 s on a 150 s one.
  EXPECT_TRUE(integrate_power(s, 10, 20, 1, {.reported_duration_s = 10.5}).power_valid);
  const EnergyResult off = integrate_power(s, 10, 20, 1, {.reported_duration_s = 10.6});
  EXPECT_EQ(reason_names(off), std::vector<std::string>{"benchmark_duration_mismatch"});
  EXPECT_EQ(message_of(off, "benchmark_duration_mismatch"),
            "the window is 10.000 s on the wall clock but 10.600 s were measured (tolerance "
            "0.500 s)");
  EXPECT_TRUE(integrate_power(s, 10, 160, 1, {.reported_duration_s = 151.4}).power_valid);
  EXPECT_FALSE(integrate_power(s, 10, 160, 1, {.reported_duration_s = 148.4}).power_valid);
}

TEST(PowerValidity, GpuIdentityMissing) {
  auto s = synthetic(1, every_second(0, 4), [](int, double) { return 400.0; });
  s.push_back({.t_s = 2, .gpu = -1, .power_w = 400});
  EXPECT_EQ(reason_names(integrate_power(s, 1, 3, 1)),
            std::vector<std::string>{"gpu_identity_missing"});
}

TEST(PowerValidity, ReasonsKeepDiscoveryOrderOnceEach) {
  auto s = synthetic(3, every_second(0, 10), [](int, double) { return 400.0; });
  s.push_back({.t_s = 5, .gpu = 1, .power_w = std::nullopt});
  const EnergyResult r = integrate_power(s, -1, 12, 2, {.reported_duration_s = 20});
  EXPECT_EQ(reason_names(r), (std::vector<std::string>{
                                 "benchmark_duration_mismatch", "invalid_power_sample",
                                 "expected_gpu_count_mismatch", "benchmark_window_not_bracketed"}));
  EXPECT_EQ(r.gpus.size(), 3u);
}

// ---- Accumulator cross-check ------------------------------------------------------------------

TEST(PowerAccumulator, AmdFixtureAgreesWithinTolerance) {
  auto log = parse_amd_smi_csv(fixture("amd_smi_metric.csv"));
  ASSERT_TRUE(log.ok()) << log.error().message;
  const EnergyResult r = integrate_power(log->samples, kT0 + 2.5, kT0 + 18.3, 8);
  EXPECT_TRUE(r.power_valid) << (r.reasons.empty() ? "" : r.reasons[0].message);
  EXPECT_NEAR(*r.total_energy_j, 87611.619735460, 1e-6);
  const AccumulatorCheck& a = r.accumulator;
  EXPECT_TRUE(a.available);
  EXPECT_NEAR(a.accumulator_delta_j, 105705.221, 1e-6);
  EXPECT_NEAR(a.integrated_stream_j, 104671, 1e-6);  // the whole stream, not the window
  EXPECT_NEAR(*a.relative_error, 0.0097840105741, 1e-12);
  EXPECT_TRUE(a.within_tolerance);
  EXPECT_EQ(a.integrated_gpu_ids.size(), 8u);
  EXPECT_TRUE(a.unmatched_gpus.empty());
  EXPECT_DOUBLE_EQ(a.stream_span_s, 20);
}

TEST(PowerAccumulator, MismatchIsAdvisoryUnlessAsked) {
  // 400 W for 10 s is 4000 J; the accumulators count 4500 J (11% of that off, over 5%).
  std::vector<PowerSample> s;
  for (int g = 0; g < 2; ++g) {
    for (int t = 0; t <= 10; ++t) {
      s.push_back({.t_s = double(t), .gpu = g, .power_w = 400, .energy_j = 1000 + 450.0 * t});
    }
  }
  const EnergyResult advisory = integrate_power(s, 1, 9, 2);
  EXPECT_TRUE(advisory.power_valid);
  EXPECT_TRUE(advisory.accumulator.available);
  EXPECT_NEAR(*advisory.accumulator.relative_error, 1000.0 / 9000.0, 1e-12);
  EXPECT_FALSE(advisory.accumulator.within_tolerance);
  const EnergyResult strict = integrate_power(s, 1, 9, 2, {.accumulator_decides_validity = true});
  EXPECT_EQ(reason_names(strict), std::vector<std::string>{"accumulator_mismatch"});
  EXPECT_EQ(message_of(strict, "accumulator_mismatch"),
            "the energy accumulators counted 9000.000 J over 10.000 s, the integrated power "
            "8000.000 J (relative error 0.1111, tolerance 0.05)");
  // Within 5% passes either way.
  for (auto& x : s) *x.energy_j = 1000 + 410.0 * x.t_s;
  EXPECT_TRUE(integrate_power(s, 1, 9, 2, {.accumulator_decides_validity = true}).power_valid);
}

TEST(PowerAccumulator, NegativeDeltaAndUnmatchedGpus) {
  std::vector<PowerSample> s;
  for (int t = 0; t <= 10; ++t) {
    // GPU 0's counter restarts at 5 s (a driver reload); GPU 1 has no accumulator.
    s.push_back({.t_s = double(t),
                 .gpu = 0,
                 .power_w = 400,
                 .energy_j = t < 5 ? 9000 + 400.0 * t : 400.0 * (t - 5)});
    s.push_back({.t_s = double(t), .gpu = 1, .power_w = 400});
  }
  const EnergyResult r = integrate_power(s, 1, 9, 2, {.accumulator_decides_validity = true});
  const AccumulatorCheck& a = r.accumulator;
  EXPECT_TRUE(a.available);
  EXPECT_EQ(a.negative_delta_gpus, std::vector<int>{0});
  EXPECT_EQ(a.unmatched_gpus, std::vector<int>{1});
  EXPECT_FALSE(a.relative_error);
  EXPECT_FALSE(a.within_tolerance);
  EXPECT_EQ(message_of(r, "accumulator_mismatch"),
            "the energy accumulators counted -7000.000 J over 10.000 s, the integrated power "
            "4000.000 J; gpu 0's accumulator ended 7000.000 J below its start (a driver reload?)");
}

// ---- Per token and JSON -----------------------------------------------------------------------

TEST(PowerEnergyPerToken, DividesByEachCount) {
  const EnergyPerToken e =
      energy_per_token(1200, {.requests = 12, .input_tokens = 3000, .output_tokens = 1000});
  EXPECT_DOUBLE_EQ(*e.joules_per_request, 100);
  EXPECT_DOUBLE_EQ(*e.joules_per_input_token, 0.4);
  EXPECT_DOUBLE_EQ(*e.joules_per_output_token, 1.2);
  EXPECT_DOUBLE_EQ(*e.joules_per_total_token, 0.3);
  const EnergyPerToken none = energy_per_token(1200, {.requests = 0, .input_tokens = 100});
  EXPECT_FALSE(none.joules_per_request);
  EXPECT_FALSE(none.joules_per_output_token);
  EXPECT_DOUBLE_EQ(*none.joules_per_total_token, 12);
}

TEST(PowerEnergyPerToken, JsonKeys) {
  const auto s = synthetic(2, every_second(0, 10), [](int, double) { return 300.0; });
  const EnergyResult r = integrate_power(s, 1, 9, 2, {.reported_duration_s = 8.01});
  const auto o = energy_to_json(r, {.requests = 40, .input_tokens = 32000, .output_tokens = 4000});
  EXPECT_EQ(o.at("power_valid"), true);
  EXPECT_TRUE(o.at("reasons").as_array().empty());
  EXPECT_EQ(o.at("integration_method"),
            "per_device_trapezoidal_with_linear_boundary_interpolation");
  const auto& w = o.at("benchmark_window").as_object();
  EXPECT_EQ(w.at("start_time_unix").as_double(), 1);
  EXPECT_EQ(w.at("end_time_unix").as_double(), 9);
  EXPECT_EQ(w.at("integration_duration_s").as_double(), 8);
  EXPECT_EQ(w.at("reported_duration_s").as_double(), 8.01);
  EXPECT_EQ(o.at("expected_gpu_count").to_number<int>(), 2);
  EXPECT_EQ(o.at("observed_gpu_count").to_number<int>(), 2);
  EXPECT_EQ(o.at("observed_gpu_ids").as_array().size(), 2u);
  EXPECT_EQ(o.at("per_gpu_sample_counts").at("1").to_number<int>(), 11);
  EXPECT_EQ(o.at("per_gpu_max_sample_gap_s").at("0").as_double(), 1);
  EXPECT_NEAR(o.at("per_gpu_energy_j").at("0").as_double(), 2400, 1e-9);
  EXPECT_TRUE(o.at("device_issues").as_object().empty());
  EXPECT_EQ(o.at("accumulator_check").at("available"), false);
  EXPECT_NEAR(o.at("total_gpu_energy_j").as_double(), 4800, 1e-9);
  EXPECT_NEAR(o.at("avg_total_gpu_power_w").as_double(), 600, 1e-9);
  EXPECT_NEAR(o.at("avg_power_w").as_double(), 300, 1e-9);
  EXPECT_NEAR(o.at("joules_per_successful_query").as_double(), 120, 1e-9);
  EXPECT_NEAR(o.at("joules_per_input_token").as_double(), 0.15, 1e-12);
  EXPECT_NEAR(o.at("joules_per_output_token").as_double(), 1.2, 1e-12);
  EXPECT_NEAR(o.at("joules_per_total_token").as_double(), 4800.0 / 36000, 1e-12);

  const EnergyResult bad = integrate_power(s, 1, 12, 2);
  const auto b = energy_to_json(bad, {.requests = 40, .input_tokens = 0, .output_tokens = 4000});
  EXPECT_EQ(b.at("power_valid"), false);
  const auto& reason = b.at("reasons").as_array().at(0).as_object();
  EXPECT_EQ(reason.at("reason"), "benchmark_window_not_bracketed");
  EXPECT_EQ(reason.at("message"),
            "gpu 0: the last sample is 2.000 s before the window end; gpu 1: the last sample is "
            "2.000 s before the window end");
  EXPECT_EQ(b.at("device_issues").at("1").as_array().at(0), "benchmark_window_not_bracketed");
  EXPECT_FALSE(b.contains("total_gpu_energy_j"));
  EXPECT_FALSE(b.contains("avg_power_w"));

  // A valid result without input tokens leaves out only that figure.
  const auto partial = energy_to_json(r, {.requests = 40, .output_tokens = 4000});
  EXPECT_FALSE(partial.contains("joules_per_input_token"));
  EXPECT_TRUE(partial.contains("joules_per_output_token"));

  auto acc = synthetic(1, every_second(0, 10), [](int, double) { return 300.0; });
  for (auto& x : acc) x.energy_j = 300 * x.t_s;
  const auto a = energy_to_json(integrate_power(acc, 1, 9, 1), {});
  const auto& check = a.at("accumulator_check").as_object();
  EXPECT_EQ(check.at("available"), true);
  EXPECT_EQ(check.at("within_tolerance"), true);
  EXPECT_NEAR(check.at("relative_error").as_double(), 0, 1e-12);
  EXPECT_NEAR(check.at("per_gpu_delta_j").at("0").as_double(), 3000, 1e-9);
  EXPECT_EQ(check.at("tolerance").as_double(), 0.05);
  EXPECT_EQ(check.at("stream_span_s").as_double(), 10);
  for (const char* key : {"accumulator_delta_j", "integrated_stream_j", "integrated_gpu_ids",
                          "unmatched_gpus", "negative_delta_gpus"}) {
    EXPECT_TRUE(check.contains(key)) << key;
  }
}

}  // namespace
}  // namespace ib::telemetry
