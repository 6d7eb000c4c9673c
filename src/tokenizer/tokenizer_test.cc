#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

namespace ib::tokenizer {
namespace {
TEST(Tokenizer, Placeholder) {}
}  // namespace
}  // namespace ib::tokenizer
