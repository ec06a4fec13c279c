"""One registry mechanism for everything that plugs in (policies, backfill variants, loaders,
backends, metrics).

A :class:`Registry` maps names to plug-in objects of one kind. Plug-ins arrive three ways, all
ending in the same table:

* built-ins call :meth:`Registry.register` when their module is imported (as a decorator or a
  call); a kind with many built-ins may :meth:`Registry.declare` them (name -> module) so that a
  module is imported only when one of its names is looked up (the trace formats: a run whose trace
  comes from the parse cache imports no loader at all);
* third-party packages declare a Python entry point in the registry's group (e.g.
  ``[project.entry-points."twinsweep.policies"] mypolicy = "mypkg.policy:MyPolicy"``); the entry
  point's name is the plug-in's name and its object is loaded on first use, so a plug-in that is
  installed is present in every process (pool workers, Ray actors, Slurm array tasks) without any
  import in the twin;
* a dotted path ``"module:object"`` given where a name is expected (``Registry.get``) imports
  that object and registers it under that string, for plug-ins that are not installed packages.

Every lookup error is one :class:`~twinsweep.core.errors.UnknownNameError` that lists the valid
names (built-in and installed), so a typo is caught where the name is read (a spec is validated
when it is loaded, not when a run starts).

Modelled on the registries of Optuna (samplers) and Ray Tune (searchers): a narrow contract,
looked up by name, with the valid names in every error.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import json
import os
import sys
import threading
import time
import warnings
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Callable, Generic, Iterator, Mapping, NamedTuple, TypeVar

from .atomic import atomic_write
from .errors import ConfigError, PluginError, TwinError, UnknownNameError
from .usercache import cache_dir

T = TypeVar("T")


class ShadowedPluginWarning(UserWarning):
    """An installed entry point has the name of a built-in plug-in of its group: the built-in is
    used and the entry point is ignored (warned once per process, :meth:`Registry.get` /
    :meth:`Registry.names`)."""


#: ``(group, name, value)`` of the shadowed entry points warned about in this process (once each).
_SHADOW_WARNED: set[tuple[str, str, str]] = set()

#: Entry-point groups read by the twin's registries (documented in docs/plugins.md).
ENTRY_POINT_GROUPS = ("twinsweep.policies", "twinsweep.backfill", "twinsweep.loaders",
                      "twinsweep.backends", "twinsweep.metrics")

class EntryPoint(NamedTuple):
    """An installed entry point as the registries keep it: ``name`` (the plug-in's name), ``value``
    (``"module:object"``, as in ``entry_points.txt``) and ``group``. :meth:`load` imports the object
    exactly as :meth:`importlib.metadata.EntryPoint.load` does (it is that method). A plain tuple,
    so that a cached scan (:func:`installed_entry_points`) is read without importing
    ``importlib.metadata`` (which imports the e-mail parser: ~6 ms CPU at every start)."""

    name: str
    value: str
    group: str

    def load(self):
        """The entry point's object (imports its module). Raises what the import raises."""
        from importlib import metadata  # here: only a run that loads an installed plug-in pays its import

        return metadata.EntryPoint(self.name, self.value, self.group).load()


#: The process's installed entry points, group -> name -> entry point: read once for every group
#: (:func:`installed_entry_points`). One ``importlib.metadata`` scan reads every installed
#: distribution's ``entry_points.txt`` (with its import, about 10 ms CPU for the ~150
#: distributions of this project's environment); a ``twinsweep run`` reads four groups (the CLI's
#: policy and backfill names, the metric plug-ins of the stats, the loaders), so one scan instead
#: of one per group, and the scan is kept in the user cache between processes (:func:`_scan_key`).
_SCAN: dict[str, dict[str, EntryPoint]] | None = None
_SCAN_LOCK = threading.Lock()
#: bump when the cached scan's layout changes
_SCAN_LAYOUT = 1


def installed_entry_points(group: str) -> Mapping[str, EntryPoint]:
    """The installed entry points of ``group``, name -> :class:`EntryPoint` (a read-only view of
    the process's scan; the same names and values as ``importlib.metadata.entry_points(group=group)``:
    where two distributions declare one name the later one wins). The installed distributions are
    scanned once per process for all groups (:data:`_SCAN`), and the scan is kept in the user cache
    folder (:func:`twinsweep.core.usercache.cache_dir`, ``entry-points-<key>.json``) under a key
    that changes whenever a distribution is installed or removed (:func:`_scan_key`), so that a
    process whose environment is unchanged reads it instead of scanning (``TWINSWEEP_CACHE=off``:
    every process scans). :func:`forget_entry_points` (or :meth:`Registry.refresh`) makes the next
    call of this process scan again."""
    global _SCAN
    with _SCAN_LOCK:
        if _SCAN is None:
            _SCAN = _cached_scan()
        return MappingProxyType(_SCAN.get(group, {}))


def forget_entry_points() -> None:
    """Drop the process's scan of installed entry points (after installing a plug-in package)."""
    global _SCAN
    with _SCAN_LOCK:
        _SCAN = None


def _scan_key() -> str:
    """The key of the installed environment: the interpreter, the meta-path finders (which may
    provide distributions too) and, for each entry of ``sys.path``, the distributions it holds
    (``*.dist-info`` / ``*.egg-info`` names, and ``EGG-INFO`` in an entry that is an egg,
    ``NAME.egg``: the folders ``importlib.metadata`` reads), each with the modification time,
    status-change time, inode and size of its ``entry_points.txt``). Installing, upgrading or
    removing a distribution, or editing its entry points, changes the key — also a file replaced
    at the same size with its modification time kept (``cp -p``, ``rsync -a``): the kernel sets
    the status-change time, which no tool can set back; other files in a ``sys.path`` entry (the working directory of
    ``python -m``) do not. An entry that is not a folder (a zip) counts by its own modification
    time. Costs one ``listdir`` per entry and one ``stat`` per distribution (~0.5 ms for the
    ~150 distributions here, against ~10 ms for the scan and its import)."""
    stamp: list = [_SCAN_LAYOUT, sys.version, sys.executable,
                   [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path]]
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        try:
            names = os.listdir(folder)
        except OSError:  # a zip or a missing entry
            try:
                stamp.append((folder, os.stat(folder).st_mtime_ns))
            except OSError:
                stamp.append((folder, None))
            continue
        stamp.append(folder)
        # the metadata folders importlib.metadata reads (its Lookup, names compared in lower case):
        # NAME.dist-info and NAME.egg-info, and EGG-INFO when the entry itself is an egg (NAME.egg)
        egg = os.path.basename(folder).lower().endswith(".egg")
        for name in sorted(n for n in names if n.lower().endswith((".dist-info", ".egg-info"))
                           or (egg and n.lower() == "egg-info")):
            try:
                st = os.stat(os.path.join(folder, name, "entry_points.txt"))
                stamp.append((name, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size))
            except OSError:  # no entry points (or an egg-info file)
                stamp.append(name)
    return hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:32]


def _cached_scan() -> dict[str, dict[str, EntryPoint]]:
    """group -> name -> entry point: from the user cache when the environment's key matches,
    else scanned (and cached: best effort, a cache that cannot be written only costs the scan)."""
    folder = cache_dir()
    path = folder / f"entry-points-{_scan_key()}.json" if folder is not None else None
    if path is not None:
        try:
            rows = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):  # missing, unreadable, truncated, not JSON: scan again
            rows = None
        if isinstance(rows, list) and all(isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) for x in r)
                                          for r in rows):
            return _table(EntryPoint(*row) for row in rows)
    found = _scan()  # no cached scan, or one of another shape (foreign or damaged): it is replaced
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps([list(ep) for eps in found.values() for ep in eps.values()])
            atomic_write(path, lambda tmp: Path(tmp).write_text(text), sync=False)
            _prune_scans(path)
        except OSError:
            pass
    return found


#: A cached scan of another environment (another key) not written for this long is deleted
#: when a new scan is written (s): 30 days. An environment used again after that scans once.
SCAN_MAX_AGE_S = 30 * 86400


def _prune_scans(keep: Path) -> None:
    """Delete the cached scans beside ``keep`` older than :data:`SCAN_MAX_AGE_S` (each install or
    removal of a distribution leaves the previous key's file behind). Best effort."""
    limit = time.time() - SCAN_MAX_AGE_S
    for old in keep.parent.glob("entry-points-*.json"):
        try:
            if old != keep and old.stat().st_mtime < limit:
                old.unlink()
        except OSError:
            pass


def _scan() -> dict[str, dict[str, EntryPoint]]:
    from importlib import metadata  # here: a process whose scan is cached never imports it (~6 ms CPU)

    found = metadata.entry_points()
    # Python 3.11: a SelectableGroups dict (group -> EntryPoints) whose dict methods are
    # deprecated, read through dict's own; 3.12+: one EntryPoints sequence
    eps = [e for g in dict.values(found) for e in g] if isinstance(found, dict) else found
    return _table(EntryPoint(e.name, e.value, e.group) for e in eps)


def _table(eps) -> dict[str, dict[str, EntryPoint]]:
    table: dict[str, dict[str, EntryPoint]] = {}
    for ep in eps:
        table.setdefault(ep.group, {})[ep.name] = ep
    return table


class Registry(Generic[T]):
    """Named plug-ins of one kind.

    Args:
        kind: what the plug-ins are, for messages (``"policy"``, ``"backfill"``, ``"loader"`` …).
        group: the entry-point group read for installed plug-ins, or None.
        check: optional ``check(name, obj)`` run at registration; raises ConfigError (e.g. when
            ``obj`` does not implement the kind's ABC).

    Thread-safe for registration; lookups read a plain dict.
    """

    def __init__(self, kind: str, group: str | None = None,
                 check: Callable[[str, T], None] | None = None):
        self.kind = kind
        self.group = group
        self._check = check
        self._items: dict[str, T] = {}
        self._declared: dict[str, str] = {}  # built-in name -> module that registers it, not imported yet
        self._builtin_rank: dict[str, int] = {}  # declared names in declaration order (in_order's order)
        self._from_entry_point: set[str] = set()  # names registered by loading their installed entry point
        self._shadow_checked: set[str] = set()  # names checked against the installed entry points
        self._lock = threading.RLock()

    # -- registration ----------------------------------------------------------------------------
    def register(self, name: str, obj: T | None = None, *, replace: bool = False):
        """Register ``obj`` under ``name``; without ``obj``, return a decorator that does.

        Registering the same object twice is a no-op (modules may be imported twice under
        different names); another object under a taken name raises ConfigError unless
        ``replace``. Raises ConfigError for an empty or non-string name.
        """
        if obj is None:
            def deco(o: T) -> T:
                self.register(name, o, replace=replace)
                return o

            return deco
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{self.kind} plug-in: a name must be a non-empty string, got {name!r}")
        module = self._declared.get(name)
        if module is not None and module not in sys.modules:  # another module takes a built-in's name:
            self._import_declared([module])                   # the built-in first, as if imported eagerly
        with self._lock:
            old = self._items.get(name)
            if old is not None and old is not obj and not replace:
                if _same_definition(old, obj):
                    return obj
                raise ConfigError(f"{self.kind} {name!r} is already registered ({_describe(old)}); "
                                  "pass replace=True to override it")
            if self._check is not None:
                self._check(name, obj)
            self._items[name] = obj
            self._declared.pop(name, None)
        return obj

    def declare(self, name: str, module: str) -> None:
        """Announce the built-in ``name``, registered by ``module`` when that module is imported,
        without importing it: :meth:`get` of the name imports the module, :meth:`in_order` and
        :meth:`items` import every declared module, :meth:`names` and ``in`` list declared names
        as they are. Declared names keep their declaration order in :meth:`in_order`, ahead of
        names registered otherwise, whatever order their modules are imported in. A name
        registered already is left as it is."""
        with self._lock:
            self._builtin_rank.setdefault(name, len(self._builtin_rank))
            if name not in self._items:
                self._declared[name] = module

    def _import_declared(self, modules: list[str]) -> None:
        # importing outside the lock: a module registers (takes the lock) while it is imported
        for mod in dict.fromkeys(modules):
            importlib.import_module(mod)
        with self._lock:
            missing = [(n, m) for n, m in self._declared.items() if m in modules and m in sys.modules]
        if missing:
            raise ConfigError(f"{self.kind} {missing[0][0]!r}: declared as registered by module {missing[0][1]!r}, "
                              "which did not register it")

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and interactive sessions). Unknown names are ignored."""
        with self._lock:
            self._items.pop(name, None)
            self._declared.pop(name, None)
            self._builtin_rank.pop(name, None)
            self._from_entry_point.discard(name)
            self._shadow_checked.discard(name)

    # -- lookup ----------------------------------------------------------------------------------
    def get(self, name: str) -> T:
        """The plug-in called ``name``: registered, installed (entry point, loaded now) or a
        ``"module:object"`` path.

        An installed entry point whose import registers ``name`` itself (a module calling e.g.
        ``register_loader(name, ...)`` at import, with the entry point's object that module or the
        object it registered) gives what the import registered. An entry point named like a
        name registered otherwise (a built-in) is not used: the registered plug-in is, and a
        :class:`ShadowedPluginWarning` says so once per process.

        Raises UnknownNameError listing the valid names, or ConfigError when an installed or
        dotted plug-in cannot be imported, or when importing an entry point registers another
        object under its name (naming it and why)."""
        obj = self._items.get(name)
        if obj is not None:
            if name not in self._shadow_checked:
                self._check_shadowed([name])
            return obj
        module = self._declared.get(name) if isinstance(name, str) else None
        if module is not None:
            self._import_declared([module])
            self._check_shadowed([name])
            return self._items[name]
        if not isinstance(name, str):
            raise UnknownNameError(self.kind, repr(name), self.names())
        ep = self._installed().get(name)
        if ep is not None:
            return self._load_entry_point(ep)
        if ":" in name and not name.startswith(":"):
            return self.register(name, load_object(name, self.kind))
        raise UnknownNameError(self.kind, name, self.names())

    def _load_entry_point(self, ep: EntryPoint) -> T:
        """Load the installed entry point ``ep`` (its name not registered yet) and register its
        object under its name, or take what its import registered under that name (see
        :meth:`get`). Raises ConfigError naming the entry point when it cannot be imported or its
        import registered another object under its name."""
        name = ep.name
        try:
            loaded = ep.load()
        except Exception as exc:  # noqa: BLE001 - one clear error naming the plug-in
            raise ConfigError(f"{self.kind} {name!r}: the installed plug-in {ep.value!r} "
                              f"(entry point group {self.group!r}) cannot be loaded: "
                              f"{type(exc).__name__}: {exc}{raised_at(exc)}") from exc
        mine = self._items.get(name)  # registered by the import itself (e.g. register_loader at import)
        if mine is not None and mine is not loaded:
            if not (isinstance(loaded, ModuleType) and _comes_from(mine, loaded.__name__)):
                raise ConfigError(f"{self.kind} {name!r}: importing the installed plug-in {ep.value!r} "
                                  f"(entry point group {self.group!r}) registered another object under that "
                                  f"name ({_describe(mine)}); point the entry point at that object or at the "
                                  "module that registers it, or register it under another name")
            loaded = mine
        obj = self.register(name, loaded)
        self._from_entry_point.add(name)
        self._shadow_checked.add(name)
        return obj

    def _check_shadowed(self, names) -> None:
        """Warn (:class:`ShadowedPluginWarning`, once per process and entry point) for each of
        ``names`` (registered or declared here) that an installed entry point of this registry's
        group also names, unless the registered object is that entry point's (loaded from it, or
        defined in its module): the entry point is ignored."""
        installed = self._installed()
        for name in names:
            self._shadow_checked.add(name)
            ep = installed.get(name)
            if ep is None or name in self._from_entry_point:
                continue
            obj = self._items.get(name)
            ep_module = ep.value.partition(":")[0].strip()
            if obj is not None and _comes_from(obj, ep_module):
                continue  # the plug-in's own module registered it (imported by hand as well as installed)
            if obj is None:  # a declared built-in, not imported yet
                what, builtin = f"registered by {self._declared.get(name)}", True
            else:
                origin = plugin_origin(obj) or "?"
                what = _describe(obj) if hasattr(obj, "__qualname__") else f"a {type(obj).__name__} of {origin}"
                builtin = name in self._builtin_rank or is_builtin_module(origin)
            key = (ep.group, name, ep.value)
            if key in _SHADOW_WARNED:
                continue
            _SHADOW_WARNED.add(key)
            warnings.warn(f"installed {self.kind} plug-in ignored: the entry point '{name} = {ep.value}' "
                          f"(group {ep.group!r}) has the name of {'a built-in' if builtin else 'an already registered'} "
                          f"{self.kind} ({what}), and the {'built-in' if builtin else 'registered one'} is used; "
                          "give the entry point another name to use the plug-in",
                          ShadowedPluginWarning, stacklevel=3)

    def resolve(self, name: str) -> str:
        """``name`` if it is valid (loading it if needed); else the :meth:`get` error."""
        self.get(name)
        return name

    def summary(self, name: str) -> str:
        """The first sentence of the docstring of the plug-in ``name``, for people (a report's or a
        validation page's "what it does"): its leading ````name``:`` and reST markup removed, and
        references to the team's design notes (DESIGN.md, not shipped with the package) and to the
        module docstring (not on the reader's page) dropped;
        ``—`` when it has no docstring; when ``name`` is not valid here (e.g. a plug-in not
        installed on the machine that builds the page, though the runs used it), ``—`` and why:
        ``"— (not available here: unknown policy 'wfp'; ...)"``, the error's first 200 characters."""
        try:
            doc = self.get(name).__doc__ or ""
        except Exception as exc:  # noqa: BLE001 - an unknown or unloadable name has no summary, not an error
            why = " ".join(str(exc).split())
            return f"— (not available here: {why[:200]}{'…' if len(why) > 200 else ''})"
        text = " ".join(doc.split())
        text = re.sub(rf"^``{re.escape(name)}``:\s*", "", text)
        text = re.sub(r",?\s*\(?DESIGN\.md §[\d.]+\)?", "", text)
        text = re.sub(r"\s*\((see )?(the )?module docstring\)", "", text)  # not on the reader's page
        m = re.match(r"(.+?\.)(\s|$)", text)
        text = (m.group(1) if m else text).replace("``", "").replace("*", "")
        return text[:1].upper() + text[1:] if text else "—"

    def names(self) -> list[str]:
        """Every valid name, registered or installed, sorted. An installed entry point named like
        a built-in is listed once (the built-in's name) and warned about (:meth:`get`)."""
        installed = self._installed()
        here = set(self._items) | set(self._declared)
        unchecked = [n for n in installed if n in here and n not in self._shadow_checked]
        if unchecked:
            self._check_shadowed(unchecked)
        return sorted(here | set(installed))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._items or name in self._declared or name in self._installed())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        """``(name, plug-in)`` for every valid name (installed plug-ins are loaded)."""
        return [(n, self.get(n)) for n in self.names()]

    def in_order(self) -> list[tuple[str, T]]:
        """``(name, plug-in)`` in registration order: the built-ins as their modules registered
        them, then the installed plug-ins not loaded yet (by name, loaded now). The order in which
        a kind breaks ties (e.g. two loaders that give a file the same detection score). Raises
        ConfigError when an installed plug-in cannot be loaded (naming it). Declared built-ins
        (:meth:`declare`) are imported now and come first, in their declaration order."""
        if self._declared:
            self._import_declared(list(self._declared.values()))
        for name in sorted(self._installed()):
            if name not in self._items:
                self.get(name)
            elif name not in self._shadow_checked:
                self._check_shadowed([name])
        rank = self._builtin_rank
        return sorted(self._items.items(), key=lambda kv: (0, rank[kv[0]]) if kv[0] in rank else (1, 0))

    def _installed(self) -> Mapping[str, EntryPoint]:
        return installed_entry_points(self.group) if self.group is not None else {}

    def refresh(self) -> None:
        """Read the installed entry points again (after installing a plug-in package): drops the
        process's scan (:func:`installed_entry_points`), which every registry reads."""
        forget_entry_points()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items)} registered, group={self.group!r})"


_IMPORT_MACHINERY = (os.path.dirname(importlib.__file__) + os.sep, __file__)


def raised_at(exc: BaseException) -> str:
    """``" (raised at FILE, line N)"``: where a plug-in's code failed, while it was imported or
    when the twin called it (:func:`plugin_raised`, an in-process external
    scheduler) — the innermost frame of ``exc``'s traceback outside Python's import machinery and
    this module (the plug-in's own line, or the library line it called) — or ``""`` when there is
    none (the module itself was not found) or ``exc`` is a SyntaxError, whose message names its
    file and line already."""
    if isinstance(exc, SyntaxError):
        return ""
    where, tb = None, exc.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith("<") and not f.startswith(_IMPORT_MACHINERY[0]) and f != _IMPORT_MACHINERY[1]:
            where = (f, tb.tb_lineno)
        tb = tb.tb_next
    return f" (raised at {where[0]}, line {where[1]})" if where else ""


#: What a plug-in call may raise that is not turned into a :func:`plugin_raised` PluginError:
#: the twin's own errors (a ConfigError a constructor raises on purpose, a PluginError naming the
#: plug-in already) and the failures of the machine rather than of the plug-in's code — out of
#: memory, an I/O error (an NFS hiccup), a recursion limit — which a sweep retries (a PluginError
#: is deterministic and never retried: ``core.errors.INPUT_ERRORS``).
PASSED_THROUGH: tuple[type[BaseException], ...] = (TwinError, MemoryError, OSError, RecursionError)


def plugin_raised(who: str, call: str, exc: Exception) -> PluginError:
    """The one error for an exception a plug-in's own code raised while the twin called it:
    a :class:`~twinsweep.core.errors.PluginError` naming the plug-in (``who``: ``"policy 'wfp'"``),
    the call with its job and simulated time (``call``), the exception and the file and line that
    raised it (:func:`raised_at`), instead of a traceback through the engine or, in a
    sweep, a bare ``"ValueError: boom"`` naming neither. Raise it ``from exc`` (the traceback stays
    chained). What :data:`PASSED_THROUGH` holds is not wrapped: callers re-raise it as it is
    (``except PASSED_THROUGH: raise`` before ``except Exception``)."""
    return PluginError(f"{who}: {call} raised {type(exc).__name__}: {exc}{raised_at(exc)}")


def load_object(path: str, kind: str = "plug-in"):
    """Import ``"package.module:attribute"`` (attribute may be dotted). Raises ConfigError naming
    the path and why it cannot be imported."""
    mod_name, _, attr = path.partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"{kind} {path!r}: expected 'module:object'")
    try:
        obj = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"{kind} {path!r}: cannot import module {mod_name!r}: {type(exc).__name__}: {exc}"
                          f"{raised_at(exc)}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{kind} {path!r}: module {mod_name!r} has no attribute {attr!r}") from None
    return obj


def check_plugin_class(name: str, obj, *, kind: str, base: type, options_base: type, public_base: str,
                       public_options: str, implement: str) -> None:
    """The contract a class-based plug-in kind (policies, backfill variants) checks when a class is
    registered under ``name``: ``obj`` is a concrete subclass of ``base`` (no abstract method left;
    ``implement`` names what to write) whose ``Options`` subclasses ``options_base``; a class
    without a ``name`` of its own takes ``name``. Use it as a :class:`Registry`'s ``check`` with the
    keywords bound (``functools.partial``).

    Raises ConfigError naming ``kind``, ``name`` and what is wrong, with the import paths a plug-in
    author uses (``public_base``, ``public_options``)."""
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ConfigError(f"{kind} {name!r}: a {kind} plug-in must be a subclass of {public_base}, got {obj!r}")
    if getattr(obj, "__abstractmethods__", None):
        raise ConfigError(f"{kind} {name!r}: {obj.__qualname__} is abstract (implement {implement})")
    if not (isinstance(obj.Options, type) and issubclass(obj.Options, options_base)):
        raise ConfigError(f"{kind} {name!r}: {obj.__qualname__}.Options must subclass {public_options}")
    if not obj.__dict__.get("name"):
        obj.name = name


#: The twin's own top-level package: a registered object defined under it is a built-in.
_PACKAGE = __name__.split(".")[0]


def is_builtin_module(module: str) -> bool:
    """Whether module ``module`` (a dotted name) is part of the twin (:data:`_PACKAGE`)."""
    return module == _PACKAGE or module.startswith(f"{_PACKAGE}.")


def plugin_origin(obj) -> str | None:
    """The name of the module a plug-in object comes from: a module's own name; the module that
    defines a class or function; for an instance, the module of its first field that is a function
    or class (a ``Loader``'s ``detect``, a ``Metric``'s ``compute``: the module that built it
    with ``register_loader`` / ``Metric(...)``), else the module of its class."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    if isinstance(obj, type) or hasattr(obj, "__qualname__"):
        return getattr(obj, "__module__", None)
    try:
        fields = list(vars(obj).values())
    except TypeError:  # no __dict__ (slots)
        fields = [getattr(obj, n, None) for n in getattr(type(obj), "__slots__", ())]
    for v in fields:
        if callable(v) and hasattr(v, "__qualname__"):
            return getattr(v, "__module__", None)
    return type(obj).__module__


def _comes_from(obj, module: str) -> bool:
    """``obj`` is module ``module`` itself, or is defined or built there (:func:`plugin_origin`)."""
    return plugin_origin(obj) == module


def _same_definition(a, b) -> bool:
    """The same class or function imported twice (e.g. a module loaded under two names)."""
    return (getattr(a, "__qualname__", None) is not None
            and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
            and getattr(a, "__module__", None) == getattr(b, "__module__", None))


def _describe(obj) -> str:
    mod = getattr(obj, "__module__", None)
    qn = getattr(obj, "__qualname__", None)
    return f"{mod}.{qn}" if mod and qn else type(obj).__name__
