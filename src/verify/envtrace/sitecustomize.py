"""inferbench environment-read tracer: the Python startup hook (docs/env-trace.md).

The launcher puts this file's folder first on PYTHONPATH, so `site` imports it as `sitecustomize`
in every Python process of the server (subprocesses and multiprocessing children inherit
PYTHONPATH and IB_ENVTRACE_*). Python reads its environment from a dict filled at startup, so the
LD_PRELOAD library never sees `os.environ[...]`; this hook does.

What counts as a read of a watched variable, recorded once per (process, variable) to
<IB_ENVTRACE_DIR>/py-<pid>.jsonl in the LD_PRELOAD library's record format:
  os.environ[k], os.environ.get(k), k in os.environ, setdefault, pop  -> function "os.environ"
  os.getenv(k)                                                        -> function "os.getenv"
What does not: copying or enumerating the whole environment (os.environ.copy(), dict(os.environ),
{**os.environ}, iterating keys/items/values), the usual way to hand the environment to a child;
it reads no variable in particular, and counting it would mark every variable as read.

Then any sitecustomize this file shadows (Debian's /usr/lib/python3.X/sitecustomize.py, a
virtualenv's) is executed, so the interpreter behaves as without us. The hook never raises and
never prints.
"""


def _ib_envtrace_install():
    import os
    import sys

    directory = os.environ.get("IB_ENVTRACE_DIR", "")
    watch = frozenset(n for n in os.environ.get("IB_ENVTRACE_WATCH", "").split(",") if n)
    # Installed also with nothing to watch: the collector then knows the process was traced.
    if not directory:
        return

    import _thread

    environ_type = type(os.environ)
    state = {"pid": None, "seen": set(), "lock": _thread.allocate_lock(), "ident": None}
    local = _thread._local()

    def clean(text):
        # os.environ decodes undecodable bytes as lone surrogates; JSON parsers reject those.
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def identity():
        pid = os.getpid()
        ident = state["ident"]
        if ident is None or ident["pid"] != pid:
            try:
                exe = os.readlink("/proc/self/exe")
            except OSError:
                exe = sys.executable or ""
            try:
                with open("/proc/self/cmdline", "rb") as f:
                    raw = f.read(600)
                cmdline = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                cmdline = " ".join(getattr(sys, "orig_argv", sys.argv))
            ident = {"pid": pid, "ppid": os.getppid(), "exe": clean(exe), "cmdline": cmdline}
            state["ident"] = ident
        return ident

    def append(path, record, exclusive=False):
        import json

        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_APPEND)
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, line)  # one write: O_APPEND keeps the line whole
        finally:
            os.close(fd)

    def watched(key):
        try:
            return key in watch
        except Exception:  # an unhashable key: the lookup itself raises for the caller
            return False

    def looks_secret(key):
        upper = str(key).upper()
        return any(w in upper for w in ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY",
                                        "CREDENTIAL", "AUTH", "COOKIE"))

    def note(key, was_set, value, function):
        if not watched(key) or getattr(local, "busy", False):
            return
        local.busy = True
        try:
            pid = os.getpid()
            with state["lock"]:
                if state["pid"] != pid:  # a forked child: its reads are its own
                    state["pid"] = pid
                    state["seen"] = set()
                if key in state["seen"]:
                    return
                state["seen"].add(key)
            record = dict(identity())
            record["variable"] = key
            record["was_set"] = bool(was_set)
            if was_set and looks_secret(key):
                record["value_redacted"] = True  # credentials never reach a trace file
            elif was_set:
                record["value"] = clean(str(value))
            record["function"] = function
            append(os.path.join(directory, "py-%d.jsonl" % pid), record)
        except Exception:
            pass
        finally:
            local.busy = False

    def enumerated(how):
        """Says once per process that it copied or enumerated the environment: a variable it
        then reads from the copy, or matches by prefix, is not seen (a blind spot)."""
        if getattr(local, "busy", False):
            return
        local.busy = True
        try:
            pid = os.getpid()
            with state["lock"]:
                if state.get("enumerated_pid") == pid:
                    return
                state["enumerated_pid"] = pid
            record = dict(identity())
            record["event"] = "enumerated"
            record["how"] = how
            append(os.path.join(directory, "py-%d.jsonl" % pid), record)
        except Exception:
            pass
        finally:
            local.busy = False

    def after_fork_in_child():
        state["lock"] = _thread.allocate_lock()  # another thread may have held it at fork

    class TracedEnviron(environ_type):
        """os.environ that reports reads of watched names. Reads driven by an enumeration of the
        environment (dict(os.environ), items(), copy(), iterating) are not reads (see above):
        __iter__ remembers the keys it hands out, and a lookup of the next of them in the same
        thread is the enumeration's own."""

        __slots__ = ()

        def __iter__(self):
            enumerated("os.environ iterated")
            keys = [self.decodekey(k) for k in list(self._data)]
            enumeration = {"keys": keys, "next": 0}
            local.enumeration = enumeration
            for k in keys:
                yield k

        def _enumerated(self, key):
            enumeration = getattr(local, "enumeration", None)
            if enumeration is None:
                return False
            keys, start = enumeration["keys"], enumeration["next"]
            try:
                i = keys.index(key, start)
            except ValueError:
                return False
            enumeration["next"] = i + 1
            return True

        def __getitem__(self, key):
            try:
                value = environ_type.__getitem__(self, key)
            except KeyError:
                if watched(key) and not self._enumerated(key):
                    note(key, False, None, "os.environ")
                raise
            if watched(key) and not self._enumerated(key):
                note(key, True, value, "os.environ")
            return value

        def copy(self):
            enumerated("os.environ.copy()")
            return {self.decodekey(k): self.decodevalue(v) for k, v in self._data.items()}

    # Look like the class it replaces in reprs and messages (isinstance holds: it is a subclass).
    TracedEnviron.__name__ = environ_type.__name__
    TracedEnviron.__qualname__ = environ_type.__qualname__
    TracedEnviron.__module__ = environ_type.__module__

    original_getenv = os.getenv

    def getenv(key, default=None):
        try:
            value = environ_type.__getitem__(os.environ, key)
            note(key, True, value, "os.getenv")
        except KeyError:
            note(key, False, None, "os.getenv")
        except Exception:
            pass
        return original_getenv(key, default)

    # Same identity as the original, so pickling os.getenv by reference (multiprocessing) works.
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(getenv, attribute, getattr(original_getenv, attribute, None))
    getenv.__wrapped__ = original_getenv

    os.environ.__class__ = TracedEnviron
    os.getenv = getenv
    try:
        os.register_at_fork(after_in_child=after_fork_in_child)
    except Exception:
        pass

    # Tell the collector the hook ran at all (created once, by the first Python process).
    try:
        record = dict(identity())
        append(os.path.join(directory, "loaded-py.json"), record, exclusive=True)
    except Exception:
        pass


def _ib_envtrace_chain():
    """Runs the sitecustomize module this one shadows, as `site` would have."""
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.realpath(__file__))

    def other(entry):
        try:
            return os.path.realpath(entry or os.getcwd()) != here
        except Exception:
            return True

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [p for p in sys.path if other(p)])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_ib_envtrace_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _ib_envtrace_install()
except Exception:
    pass
try:
    _ib_envtrace_chain()
except Exception:
    pass
