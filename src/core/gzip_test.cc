#include "core/gzip.h"

#include <gtest/gtest.h>

namespace ib {
namespace {

TEST(Gzip, RoundTripsAndConcatenatedMembers) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "vllm:num_requests_running{engine=\"0\"} 3\n";
  auto gz = gzip_compress(text);
  ASSERT_TRUE(gz.ok());
  EXPECT_LT(gz->size(), text.size() / 20);  // repetitive text compresses well
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  auto back = gzip_decompress(*gz);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  auto two = gzip_decompress(*gz + *gzip_compress("tail\n"));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, text + "tail\n");
  EXPECT_EQ(*gzip_decompress(*gzip_compress("")), "");
  EXPECT_FALSE(gzip_decompress("not gzip").ok());
  EXPECT_FALSE(gzip_decompress(gz->substr(0, gz->size() / 2)).ok());
}

}  // namespace
}  // namespace ib
