"""core.registry: one mechanism for every plug-in kind (register / get / names, entry points,
``module:object`` paths, errors that list the valid names)."""

from __future__ import annotations

import sys
import types
from importlib import metadata

import pytest

from twinsweep.core.errors import ConfigError, UnknownNameError
from twinsweep.core.registry import Registry, load_object


class _A:
    pass


class _B:
    pass


def test_register_get_names_and_errors_list_valid_names():
    reg = Registry("widget")
    reg.register("a", _A)

    @reg.register("b")
    class Local:
        pass

    assert reg.get("a") is _A and reg.get("b") is Local
    assert reg.names() == ["a", "b"] and "a" in reg and "z" not in reg and list(reg) == ["a", "b"]
    with pytest.raises(UnknownNameError, match=r"unknown widget 'c'; valid widget names: a, b"):
        reg.get("c")
    reg.register("a", _A)  # the same object again: no-op
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("a", _B)
    reg.register("a", _B, replace=True)
    assert reg.get("a") is _B
    with pytest.raises(ConfigError, match="non-empty string"):
        reg.register("", _A)


def test_check_hook_runs_at_registration():
    def check(name, obj):
        if not isinstance(obj, type):
            raise ConfigError(f"widget {name!r} must be a class")

    reg = Registry("widget", check=check)
    with pytest.raises(ConfigError, match="must be a class"):
        reg.register("f", lambda: None)
    assert reg.names() == []


def test_dotted_path_is_imported_and_registered(monkeypatch):
    mod = types.ModuleType("tw_fake_plugin")
    mod.Thing = _A
    monkeypatch.setitem(sys.modules, "tw_fake_plugin", mod)
    reg = Registry("widget")
    assert reg.get("tw_fake_plugin:Thing") is _A
    assert "tw_fake_plugin:Thing" in reg.names()
    with pytest.raises(ConfigError, match="has no attribute 'Nope'"):
        load_object("tw_fake_plugin:Nope")
    with pytest.raises(ConfigError, match="cannot import module"):
        load_object("tw_no_such_module_xyz:Thing")


def test_entry_points_are_listed_before_loading_and_loaded_on_get(monkeypatch):
    mod = types.ModuleType("tw_fake_ep")
    mod.Widget = _B
    monkeypatch.setitem(sys.modules, "tw_fake_ep", mod)
    eps = [metadata.EntryPoint("installed", "tw_fake_ep:Widget", "twinsweep.test"),
           metadata.EntryPoint("broken", "tw_fake_ep:Missing", "twinsweep.test")]
    real = metadata.entry_points

    def fake(**kw):
        return [e for e in eps if e.group == kw.get("group")] if kw.get("group") == "twinsweep.test" else real(**kw)

    monkeypatch.setattr(metadata, "entry_points", fake)
    reg = Registry("widget", group="twinsweep.test")
    reg.register("builtin", _A)
    assert reg.names() == ["broken", "builtin", "installed"]
    assert reg.get("installed") is _B
    with pytest.raises(ConfigError, match="'broken': the installed plug-in 'tw_fake_ep:Missing'"):
        reg.get("broken")
