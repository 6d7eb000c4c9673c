/* Test helper for env_trace_test.cc: stands for a library a recipe preloads itself (LD_PRELOAD set
 * by the recipe). envprobe's "sym:" op proves it was loaded next to the tracer. */
__attribute__((visibility("default"))) int ib_envtrace_test_other_preload(void) {
  return 42;
}
