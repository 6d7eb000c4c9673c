/* inferbench environment-read tracer: an LD_PRELOAD library (docs/env-trace.md).
 *
 * Interposes getenv and secure_getenv. For the names listed in IB_ENVTRACE_WATCH (comma-separated)
 * it appends one JSON line per (process, variable), on the process's first read of that variable,
 * to <IB_ENVTRACE_DIR>/c-<pid>.jsonl:
 *
 *   {"pid":12,"ppid":1,"exe":"/usr/bin/python3.11","cmdline":"python3 -m x","variable":"X",
 *    "was_set":true,"value":"1","function":"getenv"}
 *
 * Constraints, because getenv is called from anywhere (other libraries' constructors before ours,
 * allocators, signal-unsafe but multi-threaded code):
 *  - no malloc and no stdio: records are formatted into a bounded stack buffer and written with a
 *    single write() on an O_APPEND descriptor (so concurrent writers never interleave a line);
 *  - the configuration (watch list, directory) is captured once into static storage, from the
 *    environment as it was at first use, so a process that later clears its environment is still
 *    traced (its own reads; its children lose LD_PRELOAD with the rest of the environment);
 *  - thread-safe (atomics; the one-time setup calls nothing that could re-enter us) and re-entrant
 *    (a thread-local guard serves nested calls untraced);
 *  - errno is preserved; the library never prints and never fails the host process.
 * LD_PRELOAD and IB_ENVTRACE_* are left in the environment, so children inherit the tracer.
 *
 * Each traced process also says that it ran, once at start (its constructor), and what it did
 * that the tracer cannot see through (the collector's blind spots):
 *
 *   {"pid":12,"ppid":1,"exe":"/bin/bash","cmdline":"bash -c ...","event":"start","shell":true}
 *   {"pid":12,"ppid":1,"exe":"...","cmdline":"...","event":"clearenv"}
 *
 * And which of the engine's installed files it opened for writing (or renamed a file onto): the
 * open/openat/creat/fopen families (their 64-bit and fortified variants) and rename/renameat/
 * renameat2, on success, for a path with a `site-packages` or `dist-packages` component or under a
 * prefix of IB_ENVTRACE_WRITE_PREFIXES (colon-separated absolute folders), never a Python bytecode
 * cache (a `__pycache__` component, a name ending in .pyc). At most kWriteCap records a process,
 * a path written again soon after not again:
 *
 *   {"pid":12,"ppid":1,"exe":"/usr/bin/sed","cmdline":"sed -i ...","event":"write",
 *    "path":"/venv/lib/python3.11/site-packages/vllm/x.py","function":"rename"}
 *
 * The hooks hand every call to the real function first (resolved with dlsym(RTLD_NEXT), or a raw
 * system call while that is not possible) and only then look at what was opened; a read-only open
 * costs one flags test. The library's own files are opened with raw system calls, never through
 * these hooks.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE /* fortify makes open() and friends inline wrappers; we define them */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IB_EXPORT __attribute__((visibility("default")))

extern char** environ;

enum {
  kMaxWatch = 256,     /* watched names */
  kWatchBytes = 8192,  /* copy of IB_ENVTRACE_WATCH */
  kDirBytes = 2048,    /* copy of IB_ENVTRACE_DIR */
  kRecordBytes = 4096, /* one JSON line */
  kExeOut = 600,       /* escaped bytes per string field, so a record always fits */
  kCmdlineOut = 600,
  kVariableOut = 400,
  kValueOut = 1200,
  kPathOut = 2000,     /* escaped bytes of a written path */
  kMaxPrefixes = 64,   /* IB_ENVTRACE_WRITE_PREFIXES entries */
  kPrefixBytes = 8192, /* copy of IB_ENVTRACE_WRITE_PREFIXES */
  kWriteCap = 256,     /* write records per process */
  kRecentWrites = 16,  /* paths a process wrote lately: not recorded again */
};

typedef char* (*getenv_fn)(const char*);

/* 0: not set up, 1: being set up by some thread, 2: ready. */
static atomic_int g_state = 0;
static atomic_int g_resolved = 0;
static getenv_fn g_real_getenv = NULL;
static getenv_fn g_real_secure_getenv = NULL;

static char g_watch_buf[kWatchBytes];
static const char* g_watch[kMaxWatch];
static size_t g_watch_len[kMaxWatch];
static int g_watch_count = 0;
static char g_dir[kDirBytes];
static size_t g_dir_len = 0;

static char g_prefix_buf[kPrefixBytes];
static const char* g_prefix[kMaxPrefixes];
static size_t g_prefix_len[kMaxPrefixes];
static int g_prefix_count = 0;

/* Which watched names this process already recorded; reset when the pid changes (fork). */
static atomic_int g_seen_pid = 0;
static atomic_uchar g_seen[kMaxWatch];

static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* getenv's semantics without calling anything: what glibc does, on the live environment. */
static char* scan_environ(const char* name) {
  if (name == NULL || environ == NULL || name[0] == '\0') return NULL;
  size_t n = strlen(name);
  for (char** e = environ; *e != NULL; ++e) {
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return NULL;
}

/* IB_ENVTRACE_WRITE_PREFIXES: absolute folders (not "/"), trailing slashes dropped. */
static void capture_prefixes(const char* prefixes) {
  if (prefixes == NULL) return;
  size_t pl = strlen(prefixes);
  if (pl >= sizeof g_prefix_buf) return;
  memcpy(g_prefix_buf, prefixes, pl + 1);
  char* p = g_prefix_buf;
  while (*p != '\0' && g_prefix_count < kMaxPrefixes) {
    char* start = p;
    while (*p != '\0' && *p != ':') ++p;
    size_t len = (size_t)(p - start);
    if (*p == ':') *p++ = '\0';
    while (len > 0 && start[len - 1] == '/') start[--len] = '\0';
    if (len > 0 && start[0] == '/') {
      g_prefix[g_prefix_count] = start;
      g_prefix_len[g_prefix_count] = len;
      ++g_prefix_count;
    }
  }
}

/* Captures IB_ENVTRACE_WATCH, IB_ENVTRACE_DIR and IB_ENVTRACE_WRITE_PREFIXES. Calls only
 * scan_environ/memcpy, so threads that race here may simply spin on it (it cannot block or
 * re-enter). */
static void capture_config(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&g_state, &expected, 1)) {
    while (atomic_load(&g_state) != 2) sched_yield();
    return;
  }
  const char* dir = scan_environ("IB_ENVTRACE_DIR");
  const char* watch = scan_environ("IB_ENVTRACE_WATCH");
  if (dir != NULL && watch != NULL) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') --dl;
    size_t wl = strlen(watch);
    if (dl > 0 && dl + 32 < sizeof g_dir && wl < sizeof g_watch_buf) {
      memcpy(g_dir, dir, dl);
      g_dir[dl] = '\0';
      g_dir_len = dl;
      memcpy(g_watch_buf, watch, wl + 1);
      char* p = g_watch_buf;
      while (*p != '\0' && g_watch_count < kMaxWatch) {
        char* start = p;
        while (*p != '\0' && *p != ',') ++p;
        size_t len = (size_t)(p - start);
        if (*p == ',') *p++ = '\0';
        if (len > 0) {
          g_watch[g_watch_count] = start;
          g_watch_len[g_watch_count] = len;
          ++g_watch_count;
        }
      }
      capture_prefixes(scan_environ("IB_ENVTRACE_WRITE_PREFIXES"));
    }
  }
  atomic_store(&g_state, 2);
}

/* dlsym may allocate, and an allocator may call getenv: t_busy makes such nested calls plain. */
static void resolve_real(void) {
  if (atomic_load_explicit(&g_resolved, memory_order_acquire)) return;
  t_busy = 1;
  void* g = dlsym(RTLD_NEXT, "getenv");
  void* s = dlsym(RTLD_NEXT, "secure_getenv");
  /* POSIX guarantees dlsym's object pointer converts to a function pointer; ISO C does not. */
  memcpy(&g_real_getenv, &g, sizeof g_real_getenv);
  memcpy(&g_real_secure_getenv, &s, sizeof g_real_secure_getenv);
  atomic_store_explicit(&g_resolved, 1, memory_order_release);
  t_busy = 0;
}

static int watch_index(const char* name) {
  if (name == NULL) return -1;
  size_t n = strlen(name);
  for (int i = 0; i < g_watch_count; ++i) {
    if (g_watch_len[i] == n && memcmp(g_watch[i], name, n) == 0) return i;
  }
  return -1;
}

/* A bounded writer: never overruns, reports whether everything fit. */
typedef struct {
  char* p;
  char* end;
} Out;

static void put_bytes(Out* o, const char* s, size_t n) {
  size_t room = (size_t)(o->end - o->p);
  if (n > room) n = room;
  memcpy(o->p, s, n);
  o->p += n;
}

static void put_str(Out* o, const char* s) {
  put_bytes(o, s, strlen(s));
}

static void put_long(Out* o, long v) {
  char tmp[24];
  int i = (int)sizeof tmp;
  int neg = v < 0;
  unsigned long u = neg ? (unsigned long)(-(v + 1)) + 1u : (unsigned long)v;
  do {
    tmp[--i] = (char)('0' + (u % 10u));
    u /= 10u;
  } while (u != 0 && i > 1);
  if (neg) tmp[--i] = '-';
  put_bytes(o, tmp + i, sizeof tmp - (size_t)i);
}

/* Length of a valid UTF-8 sequence at s (at most `left` bytes available), or 0 if invalid. */
static size_t utf8_len(const unsigned char* s, size_t left) {
  size_t n;
  if (s[0] < 0x80) return 1;
  if ((s[0] & 0xE0) == 0xC0 && s[0] >= 0xC2) {
    n = 2;
  } else if ((s[0] & 0xF0) == 0xE0) {
    n = 3;
  } else if ((s[0] & 0xF8) == 0xF0 && s[0] <= 0xF4) {
    n = 4;
  } else {
    return 0;
  }
  if (n > left) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
  }
  if (n == 3 && s[0] == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
  if (n == 3 && s[0] == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
  if (n == 4 && s[0] == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
  if (n == 4 && s[0] == 0xF4 && s[1] >= 0x90) return 0; /* > U+10FFFF */
  return n;
}

/* A JSON string of the first `len` bytes of s, using at most `max_out` output bytes (quotes
 * included). Invalid UTF-8 becomes U+FFFD; the text is cut at a character boundary. Returns 1 if
 * the whole input was written. */
static int put_json_string(Out* o, const char* s, size_t len, size_t max_out) {
  static const char hex[] = "0123456789abcdef";
  size_t used = 2; /* the quotes */
  int complete = 1;
  put_bytes(o, "\"", 1);
  const unsigned char* u = (const unsigned char*)s;
  size_t i = 0;
  while (i < len) {
    char esc[8];
    const char* piece = esc;
    size_t piece_len;
    size_t consumed = 1;
    unsigned char c = u[i];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      piece_len = 2;
    } else if (c == '\n') {
      piece = "\\n";
      piece_len = 2;
    } else if (c == '\t') {
      piece = "\\t";
      piece_len = 2;
    } else if (c < 0x20 || c == 0x7F) {
      memcpy(esc, "\\u00", 4);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 0xF];
      piece_len = 6;
    } else if (c < 0x80) {
      piece = (const char*)u + i;
      piece_len = 1;
    } else {
      size_t n = utf8_len(u + i, len - i);
      if (n == 0) {
        piece = "\xEF\xBF\xBD"; /* U+FFFD */
        piece_len = 3;
      } else {
        piece = (const char*)u + i;
        piece_len = n;
        consumed = n;
      }
    }
    if (used + piece_len > max_out) {
      complete = 0;
      break;
    }
    put_bytes(o, piece, piece_len);
    used += piece_len;
    i += consumed;
  }
  put_bytes(o, "\"", 1);
  return complete;
}

/* The library's own files: a system call, never the interposed open(). */
static int raw_open(const char* path, int flags, mode_t mode) {
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* /proc/self/cmdline with NULs turned into spaces; returns the length. */
static size_t read_cmdline(char* buf, size_t cap) {
  int fd = raw_open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  while (n > 0 && buf[n - 1] == '\0') --n;
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] == '\0') buf[i] = ' ';
  }
  return n;
}

static void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* Formats the process identity fields: "pid":..,"ppid":..,"exe":..,"cmdline":.. */
static void put_process(Out* o) {
  char exe[PATH_MAX];
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe);
  if (el < 0) el = 0;
  char cmdline[kCmdlineOut];
  size_t cl = read_cmdline(cmdline, sizeof cmdline);
  put_str(o, "\"pid\":");
  put_long(o, (long)getpid());
  put_str(o, ",\"ppid\":");
  put_long(o, (long)getppid());
  put_str(o, ",\"exe\":");
  put_json_string(o, exe, (size_t)el, kExeOut);
  put_str(o, ",\"cmdline\":");
  put_json_string(o, cmdline, cl, kCmdlineOut);
}

/* Names that look like credentials (API keys, tokens, passwords): their values are never written.
 * Keep in step with looks_secret() in sitecustomize.py and env_trace.cc. */
static int looks_secret(const char* name) {
  static const char* const kWords[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL",
                                       "AUTH", "COOKIE"};
  for (size_t w = 0; w < sizeof kWords / sizeof kWords[0]; ++w) {
    const char* word = kWords[w];
    size_t wl = strlen(word);
    for (const char* p = name; *p != '\0'; ++p) {
      size_t i = 0;
      while (i < wl && p[i] != '\0' && (p[i] & ~0x20) == word[i]) ++i;
      if (i == wl) return 1;
    }
  }
  return 0;
}

/* Appends one line to <dir>/c-<pid>.jsonl. */
static void append_line(const char* line, size_t n) {
  char path[kDirBytes + 32];
  Out po = {path, path + sizeof path - 1};
  put_bytes(&po, g_dir, g_dir_len);
  put_str(&po, "/c-");
  put_long(&po, (long)getpid());
  put_str(&po, ".jsonl");
  *po.p = '\0';
  /* Owner-only: a record holds a command line (an --api-key in it) until the collector scrubs it.
   */
  int fd = raw_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  write_all(fd, line, n); /* one write: O_APPEND keeps the line whole */
  close(fd);
}

/* Whether this process is a shell: it expands $VARIABLES from its own copy of the environment,
 * never through getenv, so its reads are invisible. */
static int is_shell(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
  const char* base = strrchr(exe, '/');
  base = base != NULL ? base + 1 : exe;
  static const char* const kShells[] = {"sh",  "bash",    "dash", "zsh",  "ksh", "mksh",
                                        "ash", "busybox", "fish", "tcsh", "csh"};
  for (size_t i = 0; i < sizeof kShells / sizeof kShells[0]; ++i) {
    if (strcmp(base, kShells[i]) == 0) return 1;
  }
  return 0;
}

/* A process event: "start" (with whether it is a shell) or "clearenv". */
static void record_event(const char* event) {
  /* Also with nothing to watch: the process is still traced (its writes into the engine's files,
   * and the collector must not count it blind). */
  if (g_dir_len == 0) return;
  char line[kRecordBytes];
  Out o = {line, line + sizeof line - 2};
  put_str(&o, "{");
  put_process(&o);
  put_str(&o, ",\"event\":\"");
  put_str(&o, event);
  put_str(&o, "\"");
  if (strcmp(event, "start") == 0) put_str(&o, is_shell() ? ",\"shell\":true" : ",\"shell\":false");
  put_str(&o, "}");
  o.end += 2;
  put_str(&o, "\n");
  append_line(line, (size_t)(o.p - line));
}

/* Appends a record to <dir>/c-<pid>.jsonl. */
static void record(const char* name, const char* value, const char* function) {
  char line[kRecordBytes];
  Out o = {line, line + sizeof line - 2};
  put_str(&o, "{");
  put_process(&o);
  put_str(&o, ",\"variable\":");
  put_json_string(&o, name, strlen(name), kVariableOut);
  put_str(&o, ",\"was_set\":");
  put_str(&o, value != NULL ? "true" : "false");
  if (value != NULL && looks_secret(name)) {
    put_str(&o, ",\"value_redacted\":true");
  } else if (value != NULL) {
    put_str(&o, ",\"value\":");
    if (!put_json_string(&o, value, strlen(value), kValueOut)) {
      put_str(&o, ",\"value_truncated\":true");
    }
  }
  put_str(&o, ",\"function\":\"");
  put_str(&o, function);
  put_str(&o, "\"}");
  o.end += 2; /* the reserve keeps room for the terminator even when a field was cut */
  put_str(&o, "\n");
  append_line(line, (size_t)(o.p - line));
}

/* Marks that the tracer was loaded in at least one process: <dir>/loaded-c.json, created once
 * (O_EXCL) by the first traced process. Lets the collector tell "never read" from "never loaded".
 */
static void mark_loaded(void) {
  if (g_dir_len == 0) return;
  char path[kDirBytes + 32];
  Out po = {path, path + sizeof path - 1};
  put_bytes(&po, g_dir, g_dir_len);
  put_str(&po, "/loaded-c.json");
  *po.p = '\0';
  int fd = raw_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[kRecordBytes];
  Out o = {line, line + sizeof line - 2};
  put_str(&o, "{");
  put_process(&o);
  put_str(&o, "}");
  o.end += 2;
  put_str(&o, "\n");
  write_all(fd, line, (size_t)(o.p - line));
  close(fd);
}

static void maybe_record(const char* name, const char* value, const char* function) {
  int i = watch_index(name);
  if (i < 0) return;
  int pid = (int)getpid();
  int owner = atomic_load(&g_seen_pid);
  if (owner != pid && atomic_compare_exchange_strong(&g_seen_pid, &owner, pid)) {
    /* First traced read in a forked child: forget the parent's reads. */
    for (int k = 0; k < g_watch_count; ++k) atomic_store(&g_seen[k], 0);
  }
  if (atomic_exchange(&g_seen[i], 1) != 0) return;
  record(name, value, function);
}

static char* traced(const char* name, int secure) {
  if (t_busy) {
    /* Nested call (from dlsym, or from our own setup): answer without tracing. */
    if (secure && getauxval(AT_SECURE) != 0) return NULL;
    return scan_environ(name);
  }
  int saved_errno = errno;
  if (atomic_load_explicit(&g_state, memory_order_acquire) != 2) capture_config();
  resolve_real();
  getenv_fn real = secure ? g_real_secure_getenv : g_real_getenv;
  char* value;
  if (real != NULL) {
    value = real(name);
  } else {
    value = (secure && getauxval(AT_SECURE) != 0) ? NULL : scan_environ(name);
  }
  if (g_watch_count > 0) {
    t_busy = 1;
    maybe_record(name, value, secure ? "secure_getenv" : "getenv");
    t_busy = 0;
  }
  errno = saved_errno;
  return value;
}

IB_EXPORT char* getenv(const char* name) {
  return traced(name, 0);
}

IB_EXPORT char* secure_getenv(const char* name) {
  return traced(name, 1);
}

/* A process that clears its environment takes the tracer from its children: said, then done. */
typedef int (*clearenv_fn)(void);
IB_EXPORT int clearenv(void) {
  int saved_errno = errno;
  if (atomic_load(&g_state) != 2) capture_config();
  if (!t_busy) {
    t_busy = 1;
    record_event("clearenv");
    t_busy = 0;
  }
  void* f = dlsym(RTLD_NEXT, "clearenv");
  clearenv_fn real = NULL;
  memcpy(&real, &f, sizeof real);
  errno = saved_errno;
  if (real != NULL) return real();
  if (environ != NULL) environ = NULL; /* glibc's own effect, should dlsym find nothing */
  return 0;
}

__attribute__((constructor)) static void ib_envtrace_init(void) {
  int saved_errno = errno;
  if (atomic_load(&g_state) != 2) capture_config();
  resolve_real();
  if (g_dir_len > 0) {
    mark_loaded();
    t_busy = 1;
    record_event("start");
    t_busy = 0;
  }
  errno = saved_errno;
}

/* ---- Writes into the engine's installed files ------------------------------------------------ */

/* The real functions, by index, resolved together on first use. */
enum {
  kOpen,
  kOpen64,
  kOpen2,
  kOpen64_2,
  kOpenat,
  kOpenat64,
  kOpenat2,
  kOpenat64_2,
  kCreat,
  kCreat64,
  kFopen,
  kFopen64,
  kRename,
  kRenameat,
  kRenameat2,
  kRealCount
};
static const char* const kRealNames[kRealCount] = {
    "open",     "open64",     "__open_2",     "__open64_2", "openat",
    "openat64", "__openat_2", "__openat64_2", "creat",      "creat64",
    "fopen",    "fopen64",    "rename",       "renameat",   "renameat2"};
static atomic_int g_files_resolved = 0;
static void* g_real_file[kRealCount];

/* Which paths this process wrote lately (hashes) and how many it recorded; reset on fork. */
static atomic_int g_write_pid = 0;
static atomic_int g_write_count = 0;
static atomic_ullong g_recent[kRecentWrites];
static atomic_uint g_recent_next = 0;

/* The real function `which`, or NULL while it cannot be resolved (inside our own dlsym, whose
 * allocator may open a file: the caller then makes the system call itself). */
static void* real_file_fn(int which) {
  if (!atomic_load_explicit(&g_files_resolved, memory_order_acquire)) {
    if (t_busy) return NULL;
    t_busy = 1;
    for (int i = 0; i < kRealCount; ++i) g_real_file[i] = dlsym(RTLD_NEXT, kRealNames[i]);
    atomic_store_explicit(&g_files_resolved, 1, memory_order_release);
    t_busy = 0;
  }
  return g_real_file[which];
}

static int opens_for_writing(int flags) {
  int acc = flags & O_ACCMODE;
  return acc == O_WRONLY || acc == O_RDWR || (flags & (O_CREAT | O_TRUNC | O_APPEND)) != 0;
}

/* fopen's mode: w, a or + (before a ",ccs=" suffix). */
static int mode_writes(const char* mode) {
  for (const char* m = mode; m != NULL && *m != '\0' && *m != ','; ++m) {
    if (*m == 'w' || *m == 'a' || *m == '+') return 1;
  }
  return 0;
}

/* open's optional third argument is there only when the flags need it (glibc's own rule). */
static int needs_mode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* `path` made absolute into buf (relative to the working folder for AT_FDCWD, else to dirfd's
 * folder as /proc/self/fd names it); symbolic links are not resolved. Returns the length, 0 when
 * it cannot be told or does not fit. */
static size_t absolute_path(int dirfd, const char* path, char* buf, size_t cap) {
  size_t pl = strlen(path);
  size_t base = 0;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      if (getcwd(buf, cap) == NULL) return 0;
      base = strlen(buf);
    } else {
      char link[64];
      Out lo = {link, link + sizeof link - 1};
      put_str(&lo, "/proc/self/fd/");
      put_long(&lo, (long)dirfd);
      *lo.p = '\0';
      ssize_t n = readlink(link, buf, cap);
      if (n <= 0 || (size_t)n >= cap || buf[0] != '/') return 0;
      base = (size_t)n;
    }
    if (base > 0 && buf[base - 1] == '/') --base;
    if (base + 1 >= cap) return 0;
    buf[base++] = '/';
  }
  if (base + pl >= cap) return 0;
  memcpy(buf + base, path, pl + 1);
  return base + pl;
}

/* Whether an absolute path is one of the engine's installed files: a site-packages or
 * dist-packages component, or under a configured prefix; never a bytecode cache. */
static int is_engine_file(const char* path, size_t len) {
  if (len >= 4 && memcmp(path + len - 4, ".pyc", 4) == 0) return 0;
  int packages = 0;
  const char* p = path;
  while (*p != '\0') {
    while (*p == '/') ++p;
    const char* start = p;
    while (*p != '\0' && *p != '/') ++p;
    size_t n = (size_t)(p - start);
    if (n == 11 && memcmp(start, "__pycache__", 11) == 0) return 0;
    if (n == 13 &&
        (memcmp(start, "site-packages", 13) == 0 || memcmp(start, "dist-packages", 13) == 0)) {
      packages = 1;
    }
  }
  if (packages) return 1;
  for (int i = 0; i < g_prefix_count; ++i) {
    size_t n = g_prefix_len[i];
    if (len > n && memcmp(path, g_prefix[i], n) == 0 && path[n] == '/') return 1;
  }
  return 0;
}

/* Whether to record this write: not among the process's recent paths, and under its cap. */
static int first_write(const char* path, size_t len) {
  int pid = (int)getpid();
  int owner = atomic_load(&g_write_pid);
  if (owner != pid && atomic_compare_exchange_strong(&g_write_pid, &owner, pid)) {
    for (int k = 0; k < kRecentWrites; ++k) atomic_store(&g_recent[k], 0);
    atomic_store(&g_write_count, 0);
  }
  unsigned long long h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; ++i) {
    h ^= (unsigned char)path[i];
    h *= 1099511628211ull;
  }
  h |= 1u; /* 0 is an empty slot */
  for (int k = 0; k < kRecentWrites; ++k) {
    if (atomic_load(&g_recent[k]) == h) return 0;
  }
  atomic_store(&g_recent[atomic_fetch_add(&g_recent_next, 1u) % kRecentWrites], h);
  return atomic_fetch_add(&g_write_count, 1) < kWriteCap;
}

static void record_write(const char* path, size_t len, const char* function) {
  char line[kRecordBytes];
  Out o = {line, line + sizeof line - 2};
  put_str(&o, "{");
  put_process(&o);
  put_str(&o, ",\"event\":\"write\",\"path\":");
  put_json_string(&o, path, len, kPathOut);
  put_str(&o, ",\"function\":\"");
  put_str(&o, function);
  put_str(&o, "\"}");
  o.end += 2;
  put_str(&o, "\n");
  append_line(line, (size_t)(o.p - line));
}

/* After a successful write open or rename: records it when it is an engine file. Keeps errno. */
static void note_write(int dirfd, const char* path, const char* function) {
  if (t_busy || path == NULL || path[0] == '\0') return;
  int saved_errno = errno;
  if (atomic_load_explicit(&g_state, memory_order_acquire) != 2) capture_config();
  if (g_dir_len > 0) {
    t_busy = 1;
    char abs[PATH_MAX];
    size_t len = absolute_path(dirfd, path, abs, sizeof abs);
    if (len > 0 && is_engine_file(abs, len) && first_write(abs, len)) {
      record_write(abs, len, function);
    }
    t_busy = 0;
  }
  errno = saved_errno;
}

typedef int (*open_fn)(const char*, int, ...);
typedef int (*open2_fn)(const char*, int);
typedef int (*openat_fn)(int, const char*, int, ...);
typedef int (*openat2_fn)(int, const char*, int);
typedef int (*creat_fn)(const char*, mode_t);
typedef FILE* (*fopen_fn)(const char*, const char*);
typedef int (*rename_fn)(const char*, const char*);
typedef int (*renameat_fn)(int, const char*, int, const char*);
typedef int (*renameat2_fn)(int, const char*, int, const char*, unsigned int);

/* POSIX guarantees dlsym's object pointer converts to a function pointer; ISO C does not. */
#define IB_REAL(type, which, var)   \
  type var = NULL;                  \
  do {                              \
    void* f_ = real_file_fn(which); \
    memcpy(&var, &f_, sizeof var);  \
  } while (0)

static int sys_openat(int dirfd, const char* path, int flags, mode_t mode) {
  return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int traced_openat(int which, int dirfd, const char* path, int flags, mode_t mode,
                         const char* function) {
  int saved_errno = errno;
  IB_REAL(openat_fn, which, real);
  errno = saved_errno;
  int fd = real != NULL ? real(dirfd, path, flags, mode) : sys_openat(dirfd, path, flags, mode);
  if (fd >= 0 && opens_for_writing(flags)) note_write(dirfd, path, function);
  return fd;
}

static int traced_open(int which, const char* path, int flags, mode_t mode, const char* function) {
  int saved_errno = errno;
  IB_REAL(open_fn, which, real);
  errno = saved_errno;
  int fd = real != NULL ? real(path, flags, mode) : sys_openat(AT_FDCWD, path, flags, mode);
  if (fd >= 0 && opens_for_writing(flags)) note_write(AT_FDCWD, path, function);
  return fd;
}

/* The fortified variants (called without a mode): theirs checks the flags. */
static int traced_open2(int which, int dirfd, const char* path, int flags, const char* function) {
  int saved_errno = errno;
  void* f = real_file_fn(which);
  errno = saved_errno;
  int fd;
  if (f == NULL) {
    fd = sys_openat(dirfd, path, flags, 0);
  } else if (dirfd == AT_FDCWD && (which == kOpen2 || which == kOpen64_2)) {
    open2_fn real;
    memcpy(&real, &f, sizeof real);
    fd = real(path, flags);
  } else {
    openat2_fn real;
    memcpy(&real, &f, sizeof real);
    fd = real(dirfd, path, flags);
  }
  if (fd >= 0 && opens_for_writing(flags)) note_write(dirfd, path, function);
  return fd;
}

IB_EXPORT int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return traced_open(kOpen, path, flags, mode, "open");
}

IB_EXPORT int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return traced_open(kOpen64, path, flags, mode, "open64");
}

IB_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return traced_openat(kOpenat, dirfd, path, flags, mode, "openat");
}

IB_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return traced_openat(kOpenat64, dirfd, path, flags, mode, "openat64");
}

IB_EXPORT int __open_2(const char* path, int flags) {
  return traced_open2(kOpen2, AT_FDCWD, path, flags, "open");
}

IB_EXPORT int __open64_2(const char* path, int flags) {
  return traced_open2(kOpen64_2, AT_FDCWD, path, flags, "open64");
}

IB_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return traced_open2(kOpenat2, dirfd, path, flags, "openat");
}

IB_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return traced_open2(kOpenat64_2, dirfd, path, flags, "openat64");
}

static int traced_creat(int which, const char* path, mode_t mode, const char* function) {
  int saved_errno = errno;
  IB_REAL(creat_fn, which, real);
  errno = saved_errno;
  int fd = real != NULL ? real(path, mode)
                        : sys_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  if (fd >= 0) note_write(AT_FDCWD, path, function);
  return fd;
}

IB_EXPORT int creat(const char* path, mode_t mode) {
  return traced_creat(kCreat, path, mode, "creat");
}

IB_EXPORT int creat64(const char* path, mode_t mode) {
  return traced_creat(kCreat64, path, mode, "creat64");
}

/* fopen without the real one (only inside our own dlsym): its flags, then fdopen. */
static FILE* fallback_fopen(const char* path, const char* mode) {
  int flags = 0;
  const char* m = mode;
  if (*m == 'r') {
    flags = O_RDONLY;
  } else if (*m == 'w') {
    flags = O_WRONLY | O_CREAT | O_TRUNC;
  } else if (*m == 'a') {
    flags = O_WRONLY | O_CREAT | O_APPEND;
  } else {
    errno = EINVAL;
    return NULL;
  }
  for (++m; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*m == 'e') flags |= O_CLOEXEC;
    if (*m == 'x') flags |= O_EXCL;
  }
  int fd = sys_openat(AT_FDCWD, path, flags, 0666);
  if (fd < 0) return NULL;
  FILE* f = fdopen(fd, mode);
  if (f == NULL) close(fd);
  return f;
}

static FILE* traced_fopen(int which, const char* path, const char* mode, const char* function) {
  int saved_errno = errno;
  IB_REAL(fopen_fn, which, real);
  errno = saved_errno;
  FILE* f = real != NULL ? real(path, mode) : fallback_fopen(path, mode);
  if (f != NULL && mode_writes(mode)) note_write(AT_FDCWD, path, function);
  return f;
}

IB_EXPORT FILE* fopen(const char* path, const char* mode) {
  return traced_fopen(kFopen, path, mode, "fopen");
}

IB_EXPORT FILE* fopen64(const char* path, const char* mode) {
  return traced_fopen(kFopen64, path, mode, "fopen64");
}

static int sys_renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                         unsigned int flags) {
#ifdef SYS_renameat
  if (flags == 0) return (int)syscall(SYS_renameat, olddirfd, oldpath, newdirfd, newpath);
#endif
  return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

IB_EXPORT int rename(const char* oldpath, const char* newpath) {
  int saved_errno = errno;
  IB_REAL(rename_fn, kRename, real);
  errno = saved_errno;
  int r = real != NULL ? real(oldpath, newpath)
                       : sys_renameat2(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
  if (r == 0) note_write(AT_FDCWD, newpath, "rename");
  return r;
}

IB_EXPORT int renameat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  int saved_errno = errno;
  IB_REAL(renameat_fn, kRenameat, real);
  errno = saved_errno;
  int r = real != NULL ? real(olddirfd, oldpath, newdirfd, newpath)
                       : sys_renameat2(olddirfd, oldpath, newdirfd, newpath, 0);
  if (r == 0) note_write(newdirfd, newpath, "renameat");
  return r;
}

IB_EXPORT int renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                        unsigned int flags) {
  int saved_errno = errno;
  IB_REAL(renameat2_fn, kRenameat2, real);
  errno = saved_errno;
  int r = real != NULL ? real(olddirfd, oldpath, newdirfd, newpath, flags)
                       : sys_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
  if (r == 0) note_write(newdirfd, newpath, "renameat2");
  return r;
}
