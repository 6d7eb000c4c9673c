#include "store/db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/files.h"
#include "core/temp_dir.h"

namespace ib::store {
namespace {

namespace fs = std::filesystem;

class DbTest : public ::testing::Test {
 protected:
  TempDir tmp_{"ib-db-test"};
  fs::path dir_ = tmp_.path();
};

std::string text_of(Database& db, const std::string& sql) {
  auto stmt = db.prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.error().message;
  if (!stmt) return {};
  auto row = stmt->step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return stmt->column_text(0);
}

TEST_F(DbTest, OpenCreatesFoldersAndConfiguresWalAndForeignKeys) {
  const fs::path file = dir_ / "a" / "b" / "x.db";
  auto db = Database::open(file);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(text_of(*db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(text_of(*db, "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(text_of(*db, "PRAGMA synchronous"), "1");  // NORMAL
  EXPECT_EQ(db->file(), file);
}

TEST_F(DbTest, OpenWithoutCreateRefusesMissingFile) {
  DatabaseOptions o;
  o.create = false;
  auto db = Database::open(dir_ / "missing.db", o);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("missing.db"), std::string::npos) << db.error().message;
  EXPECT_FALSE(fs::exists(dir_ / "missing.db"));
}

TEST_F(DbTest, FileThatIsNotADatabaseIsRefusedNamingIt) {
  const fs::path file = dir_ / "notes.txt";
  ASSERT_TRUE(write_file_atomic(file, std::string(4096, 'z')).ok());
  auto db = Database::open(file);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("notes.txt"), std::string::npos) << db.error().message;
  EXPECT_NE(db.error().message.find("not a database"), std::string::npos) << db.error().message;
}

TEST_F(DbTest, ErrorsNameTheFileTheSqlAndSqliteReason) {
  auto db = Database::open(dir_ / "e.db");
  ASSERT_TRUE(db.ok());
  auto stmt = db->prepare("SELEC 1");
  ASSERT_FALSE(stmt.ok());
  const std::string& m = stmt.error().message;
  EXPECT_NE(m.find("e.db"), std::string::npos) << m;
  EXPECT_NE(m.find("SELEC 1"), std::string::npos) << m;
  EXPECT_NE(m.find("syntax error"), std::string::npos) << m;

  ASSERT_TRUE(db->exec("CREATE TABLE t (a INTEGER NOT NULL)").ok());
  auto ins = db->prepare("INSERT INTO t (a) VALUES (?1)");
  ASSERT_TRUE(ins.ok());
  ins->bind_null(1);
  auto st = ins->run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("NOT NULL constraint failed: t.a"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("INSERT INTO t"), std::string::npos) << st.error().message;

  // A bad parameter index is reported by the next step, naming the index.
  auto bad = db->prepare("SELECT ?1");
  ASSERT_TRUE(bad.ok());
  bad->bind(7, int64_t{1});
  auto row = bad->step();
  ASSERT_FALSE(row.ok());
  EXPECT_NE(row.error().message.find("parameter 7"), std::string::npos) << row.error().message;
}

TEST_F(DbTest, BindAndColumnRoundTripsIncludingNullNanAndBinaryText) {
  auto db = Database::open(dir_ / "b.db");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, o INTEGER)").ok());
  const std::string text = std::string("na\xC3\xAFve \0 nul", 12);
  auto ins = db->prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4)");
  ASSERT_TRUE(ins.ok());
  ins->bind(1, int64_t{-9007199254740993}).bind(2, 0.1).bind(3, text).bind(4, std::nullopt);
  ASSERT_TRUE(ins->run().ok());
  EXPECT_EQ(db->last_insert_rowid(), 1);
  EXPECT_EQ(db->changes(), 1);
  ins->reset();
  ins->bind(1, 3).bind(2, std::nan("")).bind(3, "x").bind(4, std::optional<int64_t>(5));
  ASSERT_TRUE(ins->run().ok());

  auto sel = db->prepare("SELECT i, d, s, o FROM t ORDER BY rowid");
  ASSERT_TRUE(sel.ok());
  ASSERT_TRUE(*sel->step());
  EXPECT_EQ(sel->column_int(0), -9007199254740993);
  EXPECT_EQ(sel->column_double(1), 0.1);
  EXPECT_EQ(sel->column_text(2), text);
  EXPECT_TRUE(sel->column_is_null(3));
  EXPECT_EQ(sel->column_optional_int(3), std::nullopt);
  ASSERT_TRUE(*sel->step());
  EXPECT_TRUE(sel->column_is_null(1));             // NaN is stored as NULL ...
  EXPECT_TRUE(std::isnan(sel->column_double(1)));  // ... and read back as NaN
  EXPECT_EQ(sel->column_optional_int(3), 5);
  EXPECT_FALSE(*sel->step());
}

TEST_F(DbTest, TransactionRollsBackUnlessCommitted) {
  auto db = Database::open(dir_ / "t.db");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("CREATE TABLE t (a INTEGER)").ok());
  {
    auto txn = Transaction::begin(*db);
    ASSERT_TRUE(txn.ok()) << txn.error().message;
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)").ok());
  }  // destroyed uncommitted
  EXPECT_EQ(text_of(*db, "SELECT count(*) FROM t"), "0");
  {
    auto txn = Transaction::begin(*db);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(txn->commit().ok());
    EXPECT_FALSE(txn->commit().ok());  // finished
  }
  EXPECT_EQ(text_of(*db, "SELECT group_concat(a) FROM t"), "2");
  {
    auto txn = Transaction::begin(*db);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (3)").ok());
    txn->rollback();
    txn->rollback();  // idempotent
  }
  EXPECT_EQ(text_of(*db, "SELECT group_concat(a) FROM t"), "2");
}

TEST_F(DbTest, SecondWriterGetsAClearLockedErrorAfterItsBusyTimeout) {
  const fs::path file = dir_ / "l.db";
  auto a = Database::open(file);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->exec("CREATE TABLE t (a INTEGER)").ok());
  DatabaseOptions impatient;
  impatient.busy_timeout = std::chrono::milliseconds(0);
  auto b = Database::open(file, impatient);
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto held = Transaction::begin(*a);
  ASSERT_TRUE(held.ok());
  auto blocked = Transaction::begin(*b);
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find("database is locked"), std::string::npos)
      << blocked.error().message;
  ASSERT_TRUE(held->commit().ok());
  auto now_free = Transaction::begin(*b);
  EXPECT_TRUE(now_free.ok());
}

}  // namespace
}  // namespace ib::store
