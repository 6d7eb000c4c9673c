#include "core/redact.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ib {
namespace {

using Args = std::vector<std::string>;

TEST(Redact, CredentialNamesAreSecret) {
  for (const char* n :
       {"API_KEY", "APIKEY", "apiKey", "x-api-key", "TOKEN", "token", "--token", "SECRET",
        "client_secret", "--secret-file-contents", "PASSWORD", "DB_PASSWD", "PASS", "DB_PWD",
        "CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS", "AUTH", "X-Auth-Token", "Authorization",
        "COOKIE", "Set-Cookie", "SESSION_KEY", "JSESSIONID", "PRIVATE_KEY", "SSH_PRIVATE_KEY",
        "ACCESS_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "WANDB_API_KEY", "GITHUB_TOKEN", "GH_TOKEN",
        "NGC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--api-key", "--hf-token",
        "--password", "hf-token", "api_key", "HFTOKEN", "refresh_token", "access_token",
        "BEARER_TOKEN"}) {
    EXPECT_TRUE(is_secret_name(n)) << n;
  }
}

TEST(Redact, BenchmarkSettingsStayVisible) {
  for (const char* n :
       {"MAX_TOKENS", "max_tokens", "max-num-batched-tokens", "--max-num-batched-tokens",
        "KV_CACHE_DTYPE", "--kv-cache-dtype", "TOKENIZER", "--tokenizer", "tokenizer_mode",
        "TOKENIZERS_PARALLELISM", "OUTPUT_TOKENS", "total_output_tokens", "eos_token_id",
        "pad_token", "bos_token", "time_to_first_token", "mean_time_per_output_token",
        "j_per_token", "token_writes_total", "config_key", "config-key", "workload_key", "key",
        "keys", "--session-len", "MAX_SESSIONS", "sessions", "session_id", "PWD", "OLDPWD", "model", "passed",
        "--ssl-keyfile", "auth_type", "--disable-auth", "recipe-fingerprint", "author",
        "SGLANG_USE_AITER", "NCCL_DEBUG", "max-model-len"}) {
    EXPECT_FALSE(is_secret_name(n)) << n;
  }
}

TEST(Redact, SecretFlags) {
  EXPECT_TRUE(is_secret_flag("--api-key"));
  EXPECT_TRUE(is_secret_flag("--api-key=sk-x"));
  EXPECT_TRUE(is_secret_flag("--hf-token"));
  EXPECT_TRUE(is_secret_flag("--token"));
  EXPECT_TRUE(is_secret_flag("--password"));
  EXPECT_TRUE(is_secret_flag("--secret-foo"));
  EXPECT_FALSE(is_secret_flag("--tokenizer"));
  EXPECT_FALSE(is_secret_flag("--max-num-batched-tokens"));
  EXPECT_FALSE(is_secret_flag("api-key"));  // not a flag: a positional argument
  EXPECT_FALSE(is_secret_flag("-H"));
}

TEST(Redact, TokenLikeValues) {
  for (const char* v :
       {"sk-test-0123456789abcdef", "sk-ant-api03-AbCdEf0123456789", "sk-proj-abcdefghij12",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "ghp_0123456789abcdefghijABCDEFGHIJ",
        "gho_0123456789abcdefghijABCDEFGHIJ", "github_pat_11ABCDEFG0123456789_abcdefghij",
        "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abcdefABCDEF",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "nvapi-AbCdEf0123456789AbCdEf0123", "Zx8Kq2Lm9Np4Rt7Vw1Yb3Cd6Fg0Hj5Ks"}) {
    EXPECT_TRUE(looks_like_token(v)) << v;
  }
  // Hashes, fingerprints, commit ids, UUIDs, paths, model names and short words stay visible.
  for (const char* v :
       {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4", "0c1e1f7", "1ddc2091ddc2091ddc2091ddc2091ddc",
        "123e4567-e89b-12d3-a456-426614174000", "deepseek-ai/DeepSeek-R1-0528",
        "/models/Llama-3.1-70B-Instruct-FP8", "sk-learn", "hf_transfer", "AKIA", "task-12",
        "nvidia/Llama-3.3-70B-Instruct-FP4", "DeepSeekR1Distill0528QwenInstruct32B",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaAAAA11", "dsr1-fp8-h200-sglang"}) {
    EXPECT_FALSE(looks_like_token(v)) << v;
  }
}

TEST(Redact, TextHidesAssignmentsFlagsHeadersUrlsAndTokens) {
  EXPECT_EQ(redact_text("OPENAI_API_KEY=hunter2hunter2 NCCL_DEBUG=INFO"),
            "OPENAI_API_KEY=(redacted) NCCL_DEBUG=INFO");
  EXPECT_EQ(redact_text("vllm serve m --api-key abc123xyz --tokenizer t"),
            "vllm serve m --api-key (redacted) --tokenizer t");
  EXPECT_EQ(redact_text("vllm serve m --api-key=abc123xyz"), "vllm serve m --api-key=(redacted)");
  EXPECT_EQ(redact_text("non-default args: {'api_key': ['hunter2x'], 'max_num_seqs': 256}"),
            "non-default args: {'api_key': ['(redacted)'], 'max_num_seqs': 256}");
  EXPECT_EQ(redact_text("Namespace(hf_token='abcdefgh', tokenizer='t')"),
            "Namespace(hf_token='(redacted)', tokenizer='t')");
  EXPECT_EQ(redact_text(R"j({"password": "p4ss w0rd", "max_tokens": 16})j"),
            R"j({"password": "(redacted)", "max_tokens": 16})j");
  EXPECT_EQ(redact_text("curl -H 'Authorization: Bearer abc.def.ghi' http://x"),
            "curl -H 'Authorization: Bearer (redacted)' http://x");
  EXPECT_EQ(redact_text("Authorization: Basic dXNlcjpwYXNz"), "Authorization: Basic (redacted)");
  EXPECT_EQ(redact_text("got Bearer abcdefgh1234 back"), "got Bearer (redacted) back");
  // A scheme with no credential after it: nothing hidden, and the text is not repeated.
  EXPECT_EQ(redact_text("Authorization: Bearer "), "Authorization: Bearer ");
  EXPECT_EQ(redact_text("Authorization: Bearer \nnext"), "Authorization: Bearer \nnext");
  EXPECT_EQ(redact_text("https://bob:s3cr3tpw@db.example.com:5432/x"),
            "https://bob:(redacted)@db.example.com:5432/x");
  EXPECT_EQ(redact_text("key sk-test-0123456789abcdef refused"), "key (redacted) refused");
  EXPECT_EQ(redact_text("X=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"), "X=(redacted)");
  // Unset and disabled values say something and hide nothing.
  EXPECT_EQ(redact_text("api_key=None, token: null"), "api_key=None, token: null");
  // What is not a secret is left byte for byte.
  const std::string plain =
      "max_num_batched_tokens=8192 --tokenizer deepseek-ai/DeepSeek-R1 fingerprint "
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 http://127.0.0.1:8000/v1 "
      "TOKENIZERS_PARALLELISM=false KV_CACHE_DTYPE=fp8 std::map a::b";
  EXPECT_EQ(redact_text(plain), plain);
}

// Issue 30: a value is hidden whole. After "NAME: " a value that goes on in words is one phrase
// (no word of it is left to read as something else: "HF_TOKEN: (redacted) read" said the opposite
// of "never read"); a webhook URL's path is its credential.
TEST(Redact, WholeValuesAndWebhookUrls) {
  EXPECT_EQ(redact_text("serve.env.HF_TOKEN: never read (no process read it); x: y"),
            "serve.env.HF_TOKEN: (redacted) (no process read it); x: y");
  EXPECT_EQ(redact_text("token: my pass phrase\nnext line"), "token: (redacted)\nnext line");
  EXPECT_EQ(redact_text("api_key: abc123xyz model: llama"), "api_key: (redacted) model: llama");
  // '=' and flags keep to one word: an env dump's next variable stays.
  EXPECT_EQ(redact_text("OPENAI_API_KEY=hunter2hunter2 NCCL_DEBUG=INFO"),
            "OPENAI_API_KEY=(redacted) NCCL_DEBUG=INFO");
  EXPECT_EQ(redact_text("NOTIFY=https://hooks.slack.com/services/T0123ABCD/B0456EFGH/aBcDeFgHiJkL"),
            "NOTIFY=https://hooks.slack.com/(redacted)");
  EXPECT_EQ(redact_text("post to https://discord.com/api/webhooks/1234567/AbCdEf-gh now"),
            "post to https://discord.com/api/webhooks/(redacted) now");
  EXPECT_EQ(
      redact_text("\"https://acme.webhook.office.com/webhookb2/abc-def@x/IncomingWebhook/1\""),
      "\"https://acme.webhook.office.com/(redacted)\"");
  EXPECT_EQ(redact_value("NOTIFY_URL", "https://hooks.zapier.com/hooks/catch/123/abcdef/"),
            "https://hooks.zapier.com/(redacted)");
  // Other URLs, and a webhook host with no path to speak of, stay.
  for (const char* plain : {"https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct",
                            "https://discord.com/channels/123", "http://hooks.slack.com/",
                            "https://notslack.com/services/T0123ABCD/B0456EFGH"}) {
    EXPECT_EQ(redact_text(plain), plain);
  }
  for (const char* t :
       {"HF_TOKEN: never read", "https://hooks.slack.com/services/T0/B0/abcdefgh"}) {
    EXPECT_EQ(redact_text(redact_text(t)), redact_text(t)) << t;
  }
}

TEST(Redact, TextIsIdempotent) {
  for (const char* t : {"OPENAI_API_KEY=sk-test-0123456789abcdef", "--api-key x1234567",
                        "Authorization: Bearer abcdefgh1234", "'api_key': ['hunter2x']",
                        "https://u:pw123456@h/x"}) {
    const std::string once = redact_text(t);
    EXPECT_NE(once, t);
    EXPECT_EQ(redact_text(once), once) << t;
  }
}

TEST(Redact, RegisteredSecretsAreHiddenAnywhere) {
  EXPECT_FALSE(add_secret("short"));  // too short to search for
  EXPECT_TRUE(add_secret("plain-looking-value-42"));
  EXPECT_TRUE(is_secret_value("plain-looking-value-42"));
  EXPECT_EQ(redact_text("MY_SETTING=plain-looking-value-42;x=plain-looking-value-42"),
            "MY_SETTING=(redacted);x=(redacted)");
  EXPECT_EQ(redact_value("MY_SETTING", "plain-looking-value-42"), "(redacted)");
  EXPECT_EQ(redact_value("MY_SETTING", "1"), "1");
  EXPECT_EQ(redact_value("HF_TOKEN", "x"), "(redacted)");
  EXPECT_EQ(redact_value("HF_TOKEN", ""), "");
}

TEST(Redact, ArgvHidesFlagValuesOnly) {
  EXPECT_EQ(redact_argv({"vllm", "serve", "m", "--api-key", "abc123", "--port", "8000",
                         "--hf-token=hf_x", "--token", "--tokenizer", "tok", "-H",
                         "Authorization: Bearer abcdefgh1234", "--max-num-batched-tokens",
                         "8192"}),
            (Args{"vllm", "serve", "m", "--api-key", "(redacted)", "--port", "8000",
                  "--hf-token=(redacted)", "--token", "--tokenizer", "tok", "-H",
                  "Authorization: Bearer (redacted)", "--max-num-batched-tokens", "8192"}));
  EXPECT_EQ(redact_argv({"x", "sk-test-0123456789abcdef"}), (Args{"x", "(redacted)"}));
}

TEST(Redact, JsonWalksNamesArgvAndText) {
  boost::json::value v = boost::json::parse(R"j({
    "serve": {"command": ["vllm", "serve", "--api-key", "abc123"],
              "env": {"OPENAI_API_KEY": "x", "HF_TOKEN": "", "SGLANG_X": "1",
                      "AUTH": true, "TOKENIZERS_PARALLELISM": "false"}},
    "max_tokens": 16, "token": 1234, "note": "see --password=p4ssw0rd1",
    "credentials": {"user": "u", "password": "pw"},
    "fingerprint": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})j");
  redact_json(v);
  const auto& o = v.as_object();
  const auto& serve = o.at("serve").as_object();
  EXPECT_EQ(serve.at("command"),
            boost::json::parse(R"j(["vllm", "serve", "--api-key", "(redacted)"])j"));
  const auto& env = serve.at("env").as_object();
  EXPECT_EQ(env.at("OPENAI_API_KEY"), "(redacted)");
  EXPECT_EQ(env.at("HF_TOKEN"), "");
  EXPECT_EQ(env.at("SGLANG_X"), "1");
  EXPECT_EQ(env.at("AUTH"), true);
  EXPECT_EQ(env.at("TOKENIZERS_PARALLELISM"), "false");
  EXPECT_EQ(o.at("max_tokens"), 16);
  EXPECT_EQ(o.at("token"), "(redacted)");
  EXPECT_EQ(o.at("note"), "see --password=(redacted)");
  EXPECT_EQ(o.at("credentials").at("password"), "(redacted)");
  EXPECT_EQ(o.at("credentials").at("user"), "u");
  boost::json::value nested = boost::json::parse(R"j({
    "api_key": {"base": "aaa", "head": "bbb"},
    "variables": {"HF_TOKEN": {"read": true, "readers": [{"pid": 7, "value": "x"}]}},
    "list": {"api_key": ["x1", "x2"]}})j");
  redact_json(nested);
  EXPECT_EQ(nested, boost::json::parse(R"j({
    "api_key": {"base": "(redacted)", "head": "(redacted)"},
    "variables": {"HF_TOKEN": {"read": true, "readers": [{"pid": 7, "value": "(redacted)"}]}},
    "list": {"api_key": ["(redacted)", "(redacted)"]}})j"));
  EXPECT_EQ(o.at("fingerprint"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace ib
