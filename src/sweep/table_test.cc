// The sweep's streamed point table (sweep_table_row): what a row shows of its point.
#include <gtest/gtest.h>

#include "sweep/sweep.h"

namespace ib::sweep {
namespace {

// A key or workload longer than its column is shown whole (issue 30: "~" cut two keys that differ
// at their end to the same text); the row is pushed right instead.
TEST(SweepTable, LongKeysAndWorkloadsAreNeverCut) {
  metrics::PointResult a;
  a.id.config_key = "minimaxm2-fp8-b200-servesim-agentic-offload-a";
  a.id.workload_label = "agentic-coding 1200 s x 100, 6 traces";
  a.id.concurrency = 8;
  metrics::PointResult b = a;
  b.id.config_key.back() = 'b';
  const std::string ra = sweep_table_row(a), rb = sweep_table_row(b);
  EXPECT_NE(ra.find(a.id.config_key + "  "), std::string::npos) << ra;
  EXPECT_NE(ra.find(a.id.workload_label), std::string::npos) << ra;
  EXPECT_NE(rb.find(b.id.config_key), std::string::npos) << rb;
  EXPECT_EQ(ra.find('~'), std::string::npos) << ra;
  // A short key keeps the columns aligned with the header.
  metrics::PointResult c;
  c.id.config_key = "k";
  c.id.workload_label = "isl 8 / osl 2";
  c.id.concurrency = 1;
  EXPECT_EQ(sweep_table_row(c).find("isl 8"), sweep_table_header().find("workload"));
}

}  // namespace
}  // namespace ib::sweep
