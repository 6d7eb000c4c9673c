#include "govern/git_diff.h"

#include <gtest/gtest.h>

#include "govern/test_repo.h"

namespace ib::govern {
namespace {

TEST(GitDiff, AddedLinesCarryTheirHeadLineNumbers) {
  const std::string text =
      "diff --git a/r.yaml b/r.yaml\n"
      "index 1..2 100644\n"
      "--- a/r.yaml\n"
      "+++ b/r.yaml\n"
      "@@ -12,0 +13,2 @@ key:\n"
      "+  one\n"
      "+  two\n"
      "@@ -20 +22 @@\n"
      "-  old\n"
      "+  new\n"
      "\\ No newline at end of file\n";
  auto files = parse_unified_diff(text);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 1u);
  const auto& f = files->front();
  EXPECT_EQ(f.path, "r.yaml");
  ASSERT_EQ(f.added_lines.size(), 3u);
  EXPECT_EQ(f.added_lines[0].line, 13);
  EXPECT_EQ(f.added_lines[0].text, "  one");
  EXPECT_EQ(f.added_lines[1].line, 14);
  EXPECT_EQ(f.added_lines[2].line, 22);
  EXPECT_EQ(f.added_lines[2].text, "  new");
}

TEST(GitDiff, ContextLinesCountAndAddedLinesThatLookLikeHeadersStayLines) {
  // With context (-U1), and an added line that reads "++ b/x" (its diff line "+++ b/x").
  const std::string text =
      "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n keep\n+++ b/x\n keep too\n";
  auto files = parse_unified_diff(text);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->front().added_lines.size(), 1u);
  EXPECT_EQ(files->front().added_lines[0].line, 2);
  EXPECT_EQ(files->front().added_lines[0].text, "++ b/x");
  EXPECT_EQ(files->front().path, "x");
}

TEST(GitDiff, NewDeletedRenamedBinaryAndQuotedFiles) {
  const std::string text =
      "diff --git a/old name.sh b/new name.sh\nsimilarity index 90%\nrename from old name.sh\n"
      "rename to new name.sh\n"
      "diff --git \"a/t\\tb.py\" \"b/t\\tb.py\"\nnew file mode 100644\n--- /dev/null\n"
      "+++ \"b/t\\tb.py\"\n@@ -0,0 +1 @@\n+print(\"\\303\\251\")\n"
      "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
      "diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n"
      "@@ -1,2 +0,0 @@\n-x\n-y\n";
  auto files = parse_unified_diff(text);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 4u);
  EXPECT_EQ((*files)[0].base_path, "old name.sh");
  EXPECT_EQ((*files)[0].path, "new name.sh");
  EXPECT_EQ((*files)[1].path, "t\tb.py");
  EXPECT_TRUE((*files)[1].added);
  EXPECT_EQ((*files)[1].added_lines.at(0).text, "print(\"\\303\\251\")");  // the line as written
  EXPECT_TRUE((*files)[2].binary);
  EXPECT_TRUE((*files)[3].deleted);
  EXPECT_EQ((*files)[3].path, "gone");
}

TEST(GitDiff, MalformedDiffsAreErrorsNamingTheLine) {
  auto a = parse_unified_diff("@@ -1 +1 @@\n+x\n");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("line 1"), std::string::npos) << a.error().message;
  auto b = parse_unified_diff("diff --git a/x b/x\n@@ -1,2 +1,3 @@\n+a\n");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("ends early"), std::string::npos) << b.error().message;
  auto c = parse_unified_diff("diff --git a/x b/x\n@@ -x +1 @@\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("line 2: not a hunk header"), std::string::npos);
  auto d = parse_unified_diff("diff --git a/x b/x\n--- a/x\n+++ b/x\n+stray\n");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("line 4"), std::string::npos) << d.error().message;
}

TEST(GitDiff, BetweenCommitsAndAgainstTheWorkingTreeWithUntrackedFiles) {
  TestRepo repo;
  repo.write("a.txt", "one\ntwo\n");
  repo.commit("base");
  repo.write("a.txt", "one\ntwo\nthree\n");
  repo.commit("head");
  auto base = TreeView::open(repo.root(), "HEAD~1");
  auto head = TreeView::open(repo.root(), "HEAD");
  ASSERT_TRUE(base.ok() && head.ok());
  auto d = diff_between(*base, *head);
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_EQ(d->size(), 1u);
  ASSERT_EQ(d->front().added_lines.size(), 1u);
  EXPECT_EQ(d->front().added_lines[0].line, 3);
  EXPECT_EQ(d->front().added_lines[0].text, "three");

  repo.write("new/b.sh", "x\ny\n");  // untracked
  auto tree = TreeView::open(repo.root(), "");
  ASSERT_TRUE(tree.ok());
  auto w = diff_between(*base, *tree);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[1].path, "new/b.sh");
  EXPECT_TRUE((*w)[1].added);
  ASSERT_EQ((*w)[1].added_lines.size(), 2u);
  EXPECT_EQ((*w)[1].added_lines[1].line, 2);
}

}  // namespace
}  // namespace ib::govern
