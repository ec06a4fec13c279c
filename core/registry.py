"""One registry mechanism for everything that plugs in (policies, backfill variants, loaders,
backends, metrics).

A :class:`Registry` maps names to plug-in objects of one kind. Plug-ins arrive three ways, all
ending in the same table:

* built-ins call :meth:`Registry.register` when their module is imported (as a decorator or a
  call);
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

import importlib
import threading
from importlib import metadata
from typing import Callable, Generic, Iterator, TypeVar

from .errors import ConfigError, UnknownNameError

T = TypeVar("T")

#: Entry-point groups read by the twin's registries (documented in docs/plugins.md).
ENTRY_POINT_GROUPS = ("twinsweep.policies", "twinsweep.backfill", "twinsweep.loaders",
                      "twinsweep.backends", "twinsweep.metrics")


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
        self._entry_points: dict[str, metadata.EntryPoint] | None = None
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
        return obj

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and interactive sessions). Unknown names are ignored."""
        with self._lock:
            self._items.pop(name, None)

    # -- lookup ----------------------------------------------------------------------------------
    def get(self, name: str) -> T:
        """The plug-in called ``name``: registered, installed (entry point, loaded now) or a
        ``"module:object"`` path. Raises UnknownNameError listing the valid names, or ConfigError
        when an installed or dotted plug-in cannot be imported (naming it and why)."""
        obj = self._items.get(name)
        if obj is not None:
            return obj
        if not isinstance(name, str):
            raise UnknownNameError(self.kind, repr(name), self.names())
        ep = self._installed().get(name)
        if ep is not None:
            try:
                loaded = ep.load()
            except Exception as exc:  # noqa: BLE001 - one clear error naming the plug-in
                raise ConfigError(f"{self.kind} {name!r}: the installed plug-in {ep.value!r} "
                                  f"(entry point group {self.group!r}) cannot be loaded: "
                                  f"{type(exc).__name__}: {exc}") from exc
            return self.register(name, loaded)
        if ":" in name and not name.startswith(":"):
            return self.register(name, load_object(name, self.kind))
        raise UnknownNameError(self.kind, name, self.names())

    def resolve(self, name: str) -> str:
        """``name`` if it is valid (loading it if needed); else the :meth:`get` error."""
        self.get(name)
        return name

    def names(self) -> list[str]:
        """Every valid name, registered or installed, sorted."""
        return sorted(set(self._items) | set(self._installed()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._items or name in self._installed())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        """``(name, plug-in)`` for every valid name (installed plug-ins are loaded)."""
        return [(n, self.get(n)) for n in self.names()]

    def in_order(self) -> list[tuple[str, T]]:
        """``(name, plug-in)`` in registration order: the built-ins as their modules registered
        them, then the installed plug-ins not loaded yet (by name, loaded now). The order in which
        a kind breaks ties (e.g. two loaders that give a file the same detection score). Raises
        ConfigError when an installed plug-in cannot be loaded (naming it)."""
        for name in sorted(self._installed()):
            if name not in self._items:
                self.get(name)
        return list(self._items.items())

    def _installed(self) -> dict[str, metadata.EntryPoint]:
        if self.group is None:
            return {}
        if self._entry_points is None:
            with self._lock:
                if self._entry_points is None:
                    self._entry_points = {ep.name: ep for ep in metadata.entry_points(group=self.group)}
        return self._entry_points

    def refresh(self) -> None:
        """Read the installed entry points again (after installing a plug-in package)."""
        with self._lock:
            self._entry_points = None

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items)} registered, group={self.group!r})"


def load_object(path: str, kind: str = "plug-in"):
    """Import ``"package.module:attribute"`` (attribute may be dotted). Raises ConfigError naming
    the path and why it cannot be imported."""
    mod_name, _, attr = path.partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"{kind} {path!r}: expected 'module:object'")
    try:
        obj = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"{kind} {path!r}: cannot import module {mod_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{kind} {path!r}: module {mod_name!r} has no attribute {attr!r}") from None
    return obj


def _same_definition(a, b) -> bool:
    """The same class or function imported twice (e.g. a module loaded under two names)."""
    return (getattr(a, "__qualname__", None) is not None
            and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
            and getattr(a, "__module__", None) == getattr(b, "__module__", None))


def _describe(obj) -> str:
    mod = getattr(obj, "__module__", None)
    qn = getattr(obj, "__qualname__", None)
    return f"{mod}.{qn}" if mod and qn else type(obj).__name__
