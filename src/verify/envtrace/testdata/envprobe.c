/* Test helper for env_trace_test.cc: performs the environment reads named on its command line, so
 * tests observe getenv calls deterministically (a shell reads `environ` directly, not getenv).
 *
 *   envprobe OP... [-- PROGRAM ARGS...]
 *   OP: get:NAME        getenv(NAME)
 *       sget:NAME       secure_getenv(NAME)
 *       threads:N:NAME  N threads call getenv(NAME) at once
 *       clearenv        clears the environment (later reads see nothing; children lose it too)
 *       sym:SYMBOL      exit 3 unless SYMBOL is defined in the process (a preloaded library's)
 *       fopen:PATH      fopen(PATH, "w"), then fclose
 *       openat:DIR:NAME openat(open(DIR), NAME, O_WRONLY | O_CREAT | O_TRUNC), a path relative to a
 *                       folder descriptor
 *       read:PATH       open(PATH, O_RDONLY): not a write
 *   After "--": fork, exec PROGRAM ARGS in the child, wait, exit with its status.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* g_thread_name;

static void* read_in_thread(void* arg) {
  (void)arg;
  return getenv(g_thread_name);
}

int main(int argc, char** argv) {
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    const char* op = argv[i];
    if (strncmp(op, "get:", 4) == 0) {
      (void)getenv(op + 4);
    } else if (strncmp(op, "sget:", 5) == 0) {
      (void)secure_getenv(op + 5);
    } else if (strncmp(op, "threads:", 8) == 0) {
      char* rest;
      long n = strtol(op + 8, &rest, 10);
      if (*rest != ':' || n < 1 || n > 64) return 2;
      g_thread_name = rest + 1;
      pthread_t t[64];
      for (long k = 0; k < n; ++k) pthread_create(&t[k], NULL, read_in_thread, NULL);
      for (long k = 0; k < n; ++k) pthread_join(t[k], NULL);
    } else if (strcmp(op, "clearenv") == 0) {
      clearenv();
    } else if (strncmp(op, "sym:", 4) == 0) {
      if (dlsym(RTLD_DEFAULT, op + 4) == NULL) return 3;
    } else if (strncmp(op, "fopen:", 6) == 0) {
      FILE* f = fopen(op + 6, "w");
      if (f == NULL) return 6;
      fclose(f);
    } else if (strncmp(op, "openat:", 7) == 0) {
      char dir[4096];
      const char* sep = strchr(op + 7, ':');
      if (sep == NULL || (size_t)(sep - (op + 7)) >= sizeof dir) return 2;
      memcpy(dir, op + 7, (size_t)(sep - (op + 7)));
      dir[sep - (op + 7)] = '\0';
      int dfd = open(dir, O_RDONLY | O_DIRECTORY);
      if (dfd < 0) return 6;
      int fd = openat(dfd, sep + 1, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) return 6;
      close(fd);
      close(dfd);
    } else if (strncmp(op, "read:", 5) == 0) {
      int fd = open(op + 5, O_RDONLY);
      if (fd < 0) return 6;
      close(fd);
    } else {
      return 2;
    }
  }
  if (i < argc - 1) {
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
      execv(argv[i + 1], argv + i + 1);
      _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return 4;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
  }
  return 0;
}
