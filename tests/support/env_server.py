#!/usr/bin/env python3
"""A tiny OpenAI-shaped server for the verify tests (tests/e2e/verify_test.cc).

It reads IB_T_A through os.environ[...] and prints it in a ServerArgs(...) line the way SGLang prints
its effective configuration, reads IB_T_B through os.getenv() without printing it, reads IB_T_D
through os.environ.get() and prints it only in a line no built-in probe knows ("Using kernel
backend: ..."; a recipe's own regex probe can), and never looks at IB_T_C. Usage: env_server.py --host HOST --port PORT
"""
import http.server
import os
import sys


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    host, port = args.get("--host", "127.0.0.1"), int(args["--port"])
    a = os.environ["IB_T_A"] if "IB_T_A" in os.environ else "unset"
    b = os.getenv("IB_T_B", "unset")  # read, but it changes nothing visible
    print(f"server_args=ServerArgs(model_path='env-model', tp_size=1, a_setting={a!r}, port={port})",
          flush=True)
    del b
    print(f"Using kernel backend: {os.environ.get('IB_T_D', 'default')}", flush=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"object":"list","data":[{"id":"env-model","object":"model"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *unused):
            pass

    http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()


if __name__ == "__main__":
    main()
