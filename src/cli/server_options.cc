#include "cli/server_options.h"

#include "cli/options.h"
#include "core/redact.h"

namespace ib::cli {

void add_server_options(CLI::App* app, ServerOptions& o, ServerOptionSet set) {
  app->add_option("--server-arg", o.args, "Extra argument for every server command (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--startup-timeout", o.startup_timeout_s,
                  "Seconds to wait for each server to be healthy")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  if (set == ServerOptionSet::kServersAndPoints) {
    app->add_option("--point-timeout", o.point_timeout_s, "Seconds before a point is cut short")
        ->capture_default_str()
        ->transform(positive_real(kMaxSeconds));
  }
  app->add_flag("--no-env-trace", o.no_env_trace,
                "Do not trace which environment variables servers read");
}

void register_server_secrets(const ServerOptions& o) {
  add_secrets_from_argv(o.args);
}

}  // namespace ib::cli
