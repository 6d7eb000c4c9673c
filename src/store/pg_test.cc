#include "store/pg.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "core/redact.h"
#include "store/pg_test_server.h"

namespace ib::store {
namespace {

TEST(PgUrl, PasswordsAreHiddenWhereverTheUrlCarriesThem) {
  EXPECT_TRUE(is_postgres_url("postgresql://h/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("runs/inferbench.db"));
  EXPECT_EQ(redact_pg_url("postgresql://alice:s3cret@db.example:5432/results"),
            "postgresql://alice:(redacted)@db.example:5432/results");
  EXPECT_EQ(redact_pg_url("postgresql://alice@h/r?sslmode=require&password=s3cret"),
            "postgresql://alice@h/r?sslmode=require&password=(redacted)");
  EXPECT_EQ(redact_pg_url("postgresql://h/r?password=x&sslmode=disable"),
            "postgresql://h/r?password=(redacted)&sslmode=disable");
  EXPECT_EQ(redact_pg_url("postgresql://alice@h/r"), "postgresql://alice@h/r");
}

TEST(PgUrl, PlaceholdersTranslateOutsideQuotesAndComments) {
  EXPECT_EQ(to_pg_placeholders("SELECT * FROM t WHERE a = ?1 AND b = ?2"),
            "SELECT * FROM t WHERE a = $1 AND b = $2");
  EXPECT_EQ(to_pg_placeholders("INSERT INTO t VALUES (?, ?)"), "INSERT INTO t VALUES ($1, $2)");
  EXPECT_EQ(to_pg_placeholders("SELECT '?1', \"?x\" -- ?3\n, ?1"),
            "SELECT '?1', \"?x\" -- ?3\n, $1");
  EXPECT_EQ(to_pg_placeholders("SELECT 'it''s ?'"), "SELECT 'it''s ?'");
}

// Each test works in a schema of its own, dropped at the end.
class PgTest : public ::testing::Test {
 protected:
  std::string schema = "t_" + std::to_string(::getpid()) + "_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::optional<PgConnection> db;
  std::string url;

  void open() {
    for (auto& ch : schema)
      ch = std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '_';
    schema = schema.substr(0, 60);
    auto c = PgConnection::connect(url);
    ASSERT_TRUE(c.ok()) << c.error().message;
    db.emplace(std::move(*c));
    ASSERT_TRUE(db->exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema +
                         "; SET search_path TO " + schema)
                    .ok());
  }
  void TearDown() override {
    if (db) (void)db->exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
  }
};

TEST_F(PgTest, ParametersTravelApartFromTheSqlAndRowsComeBackAsText) {
  REQUIRE_POSTGRES(server);
  url = *server;
  open();
  ASSERT_TRUE(db->exec("CREATE TABLE runs (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                       "name TEXT UNIQUE NOT NULL, note TEXT)")
                  .ok());
  // A value that would break a spliced statement, unicode, and NULL.
  auto ins = db->query("INSERT INTO runs (name, note) VALUES (?1, ?2) RETURNING id",
                       {std::string("x'); DROP TABLE runs; --"), std::nullopt});
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  ASSERT_EQ(ins->rows(), 1);
  EXPECT_EQ(ins->integer(0, 0), 1);
  ASSERT_TRUE(db->query("INSERT INTO runs (name, note) VALUES (?1, ?2)",
                        {std::string("r\xc3\xa9sum\xc3\xa9"), std::string("n")})
                  .ok());
  auto all = db->query("SELECT name, note FROM runs ORDER BY id");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->rows(), 2);
  EXPECT_EQ(all->text(0, 0), "x'); DROP TABLE runs; --");
  EXPECT_TRUE(all->is_null(0, 1));
  EXPECT_EQ(all->text(1, 0), "r\xc3\xa9sum\xc3\xa9");
  // Idempotent ingest: the second insert of a name adds nothing.
  auto again = db->query("INSERT INTO runs (name) VALUES (?1) ON CONFLICT (name) DO NOTHING",
                         {std::string("r\xc3\xa9sum\xc3\xa9")});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->affected(), 0);
  // An error names the server, the statement and the SQLSTATE.
  auto dup =
      db->query("INSERT INTO runs (name) VALUES (?1)", {std::string("r\xc3\xa9sum\xc3\xa9")});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("SQLSTATE 23505"), std::string::npos) << dup.error().message;
  EXPECT_NE(dup.error().message.find("INSERT INTO runs"), std::string::npos);
}

TEST_F(PgTest, ConcurrentWritersEachGetDistinctIdsAndNothingIsLost) {
  REQUIRE_POSTGRES(server);
  url = *server;
  open();
  ASSERT_TRUE(db->exec("CREATE TABLE points (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                       "writer INT NOT NULL, n INT NOT NULL, UNIQUE (writer, n))")
                  .ok());
  constexpr int kWriters = 3, kRows = 50;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto c = PgConnection::connect(url);
      if (!c) {
        errors[w] = c.error().message;
        return;
      }
      (void)c->exec("SET search_path TO " + schema);
      for (int n = 0; n < kRows; ++n) {
        auto r = c->query("INSERT INTO points (writer, n) VALUES (?1, ?2)",
                          {std::to_string(w), std::to_string(n)});
        if (!r) errors[w] = r.error().message;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  auto r = db->query("SELECT count(*), count(DISTINCT id) FROM points");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->integer(0, 0), kWriters * kRows);
  EXPECT_EQ(r->integer(0, 1), kWriters * kRows);
}

TEST(PgConnect, AFailedConnectionNamesTheServerWithoutItsPassword) {
  // A port nothing listens on (loopback, refused at once).
  auto c = PgConnection::connect("postgresql://alice:hunter2-secret@127.0.0.1:1/results");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("postgresql://alice:(redacted)@127.0.0.1:1/results"),
            std::string::npos)
      << c.error().message;
  EXPECT_EQ(c.error().message.find("hunter2-secret"), std::string::npos) << c.error().message;
  auto bad = PgConnection::connect("results.db");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not a PostgreSQL URL"), std::string::npos);
}

}  // namespace
}  // namespace ib::store
