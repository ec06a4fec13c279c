"""core.registry: one mechanism for every plug-in kind (register / get / names, entry points,
``module:object`` paths, errors that list the valid names)."""

from __future__ import annotations

import json
import re
import os
import sys
import time
import types
import warnings
from importlib import metadata

import pytest

from twinsweep.core.errors import ConfigError, UnknownNameError
from twinsweep.core import registry
from twinsweep.core.registry import Registry, installed_entry_points, load_object


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


@pytest.mark.parametrize("kind", ["policy", "backfill"])
def test_class_plugins_are_checked_against_their_contract_when_registered(kind):
    """POLICIES and BACKFILLS share one check (core.registry.check_plugin_class): not a subclass,
    abstract, or Options outside the options model each raise one ConfigError naming the kind, the
    name and the public class to use; a class without a name of its own takes the registered one.
    Nothing half-registered is left behind."""
    from twinsweep.core.backfill import BACKFILLS, Backfill, BackfillOptions
    from twinsweep.core.policies import POLICIES, Policy, PolicyOptions

    reg, base, opts, method, public = {
        "policy": (POLICIES, Policy, PolicyOptions, "key", "twinsweep.core.policies"),
        "backfill": (BACKFILLS, Backfill, BackfillOptions, "select", "twinsweep.core.backfill")}[kind]
    with pytest.raises(ConfigError, match=rf"^{kind} 'x-not': a {kind} plug-in must be a subclass of "
                                          rf"{public}\.{base.__name__}, got <class"):
        reg.register("x-not", _A)
    abstract = type("Half", (base,), {})
    with pytest.raises(ConfigError, match=rf"^{kind} 'x-half': Half is abstract \(implement {method}\)$"):
        reg.register("x-half", abstract)
    concrete = {method: lambda self, *a, **k: None}
    bad_opts = type("BadOpts", (base,), {**concrete, "Options": _A})
    with pytest.raises(ConfigError, match=rf"^{kind} 'x-opts': BadOpts\.Options must subclass "
                                          rf"{public}\.{opts.__name__}$"):
        reg.register("x-opts", bad_opts)
    assert not {"x-not", "x-half", "x-opts"} & set(reg.names())
    good = type("Good", (base,), dict(concrete))
    try:
        reg.register("x-good", good)
        assert reg.get("x-good") is good and good.name == "x-good"
    finally:
        reg.unregister("x-good")


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


def _flat(found):
    """``metadata.entry_points()`` as one list of entry points (3.11: a dict of groups)."""
    return [e for g in dict.values(found) for e in g] if isinstance(found, dict) else list(found)


def test_one_scan_serves_every_group_and_matches_importlib_per_group(monkeypatch):
    """The installed entry points are scanned once per process for all groups (a run reads four:
    policies, backfills, metrics, loaders), and each group's table is what
    ``importlib.metadata.entry_points(group=...)`` gives, in its order; refresh() scans again."""
    calls = []
    real = metadata.entry_points

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(registry, "_SCAN", None)
    monkeypatch.setattr(metadata, "entry_points", counting)
    groups = sorted({e.group for e in _flat(real())}) + ["twinsweep.policies", "twinsweep.metrics"]
    tables = {g: installed_entry_points(g) for g in groups}
    assert calls == [{}]
    for g in groups:
        expect = {e.name: (e.value, e.group) for e in real(group=g)}
        assert [(n, (ep.value, ep.group)) for n, ep in tables[g].items()] == list(expect.items()), g
    assert any(tables.values())  # this environment has installed entry points (pytest's own, at least)
    reg = Registry("widget", group="twinsweep.policies")
    reg.names()
    assert calls == [{}]
    reg.refresh()
    reg.names()
    assert calls == [{}, {}]


def test_the_scan_is_cached_between_processes_until_the_environment_changes(monkeypatch, tmp_path):
    """With a user cache folder, a process whose environment is unchanged reads the scan of the
    last one instead of scanning (no ``importlib.metadata`` call); installing a distribution (a
    new ``*.dist-info`` in a ``sys.path`` entry) or changing its entry points is a new key, hence
    a scan; other files in a ``sys.path`` entry are not."""
    calls = []
    real = metadata.entry_points

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TWINSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(metadata, "entry_points", counting)
    monkeypatch.setattr(registry, "_SCAN", None)
    first = {g: dict(installed_entry_points(g)) for g in ("console_scripts", "pytest11")}
    assert calls == [{}]
    assert len(list((tmp_path / "cache").glob("entry-points-*.json"))) == 1
    (site / "results.txt").write_text("x")  # other files in a sys.path entry (python -m's working directory)
    registry.forget_entry_points()  # a new process, as far as the scan goes
    again = {g: dict(installed_entry_points(g)) for g in ("console_scripts", "pytest11")}
    assert calls == [{}] and again == first and any(first.values())
    (site / "newpkg-1.0.dist-info").mkdir()  # pip installs a distribution into a sys.path entry
    registry.forget_entry_points()
    installed_entry_points("pytest11")
    assert calls == [{}, {}]
    (site / "newpkg-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nx = os:path\n")  # its entry points change
    registry.forget_entry_points()
    assert installed_entry_points("pytest11")["x"].value == "os:path"
    assert calls == [{}, {}, {}]
    (tmp_path / "cache").joinpath("x").write_text("")  # the folder is the user's: other files are left alone
    for f in (tmp_path / "cache").glob("entry-points-*.json"):
        f.write_text("{not json")  # a damaged cache file is scanned again, never an error
    registry.forget_entry_points()
    assert installed_entry_points("pytest11")["x"].value == "os:path"
    assert calls == [{}, {}, {}, {}]


@pytest.mark.parametrize("text", ["", "{not json", "[" * 5000, "null", '{"abc": 1}', "[[1, 2]]",
                                  '[[5, "m:o", "twinsweep.policies"]]', '[["x", 5, "twinsweep.policies"]]',
                                  '[["a", "b", "c", "d"]]', "[null]"])
def test_a_damaged_or_foreign_cached_scan_is_replaced_by_a_scan(monkeypatch, tmp_path, text):
    """Whatever the cached file holds that is not a list of [name, value, group] strings, the next
    process scans (the same entry points as importlib.metadata) and rewrites the file; never an error."""
    monkeypatch.setenv("TWINSWEEP_CACHE", str(tmp_path))
    monkeypatch.setattr(registry, "_SCAN", None)
    first = dict(installed_entry_points("console_scripts"))
    (path,) = tmp_path.glob("entry-points-*.json")
    path.write_text(text)
    calls = []
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: calls.append(kw) or real(**kw))
    registry.forget_entry_points()
    assert dict(installed_entry_points("console_scripts")) == first and calls == [{}]
    rows = json.loads(path.read_text())  # rewritten: the scan's rows
    assert path.read_text() != text and rows and all(len(r) == 3 and all(isinstance(x, str) for x in r) for r in rows)


def test_an_egg_s_entry_points_are_part_of_the_key(monkeypatch, tmp_path):
    """A distribution installed as an egg folder (``NAME.egg/EGG-INFO``, easy_install / buildout):
    editing its entry points is a new key, so the next process sees the new plug-in."""
    egg = tmp_path / "plug-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: plug\nVersion: 1.0\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[twinsweep.test]\nold = os:path\n")
    monkeypatch.syspath_prepend(str(egg))
    monkeypatch.setenv("TWINSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "_SCAN", None)
    assert set(installed_entry_points("twinsweep.test")) == {"old"}
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[twinsweep.test]\nold = os:path\nnewer = os:sep\n")
    registry.forget_entry_points()
    assert set(installed_entry_points("twinsweep.test")) == {"old", "newer"}


def test_entry_points_replaced_at_the_same_size_with_the_old_mtime_are_a_new_key(monkeypatch, tmp_path):
    """``cp -p`` / ``rsync -a`` of an edited ``entry_points.txt`` of the same size keeps the old
    modification time: the status-change time (set by the kernel) still makes it a new key."""
    dist = tmp_path / "site" / "plug-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plug\nVersion: 1.0\n")
    ep = dist / "entry_points.txt"
    ep.write_text("[twinsweep.test]\naaa = os:path\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("TWINSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "_SCAN", None)
    assert set(installed_entry_points("twinsweep.test")) == {"aaa"}
    before = ep.stat()
    time.sleep(0.01)  # a later status-change time even on a coarse clock
    ep.write_text("[twinsweep.test]\nbbb = os:path\n")  # same size
    os.utime(ep, ns=(before.st_atime_ns, before.st_mtime_ns))  # what cp -p does
    assert ep.stat().st_size == before.st_size and ep.stat().st_mtime_ns == before.st_mtime_ns
    registry.forget_entry_points()
    assert set(installed_entry_points("twinsweep.test")) == {"bbb"}


def test_cached_scans_of_other_environments_are_pruned_after_a_month(monkeypatch, tmp_path):
    monkeypatch.setenv("TWINSWEEP_CACHE", str(tmp_path))
    old, recent = tmp_path / "entry-points-old.json", tmp_path / "entry-points-recent.json"
    for f in (old, recent):
        f.write_text("[]")
    month = registry.SCAN_MAX_AGE_S
    os.utime(old, (time.time() - month - 60,) * 2)
    os.utime(recent, (time.time() - month + 3600,) * 2)
    monkeypatch.setattr(registry, "_SCAN", None)
    installed_entry_points("console_scripts")
    assert not old.exists() and recent.exists() and len(list(tmp_path.glob("entry-points-*.json"))) == 2


def test_entry_points_are_listed_before_loading_and_loaded_on_get(monkeypatch):
    mod = types.ModuleType("tw_fake_ep")
    mod.Widget = _B
    monkeypatch.setitem(sys.modules, "tw_fake_ep", mod)
    eps = [metadata.EntryPoint("installed", "tw_fake_ep:Widget", "twinsweep.test"),
           metadata.EntryPoint("broken", "tw_fake_ep:Missing", "twinsweep.test")]
    real = metadata.entry_points

    def fake(**kw):
        if not kw:  # the registries' one scan of every group
            return [*_flat(real()), *eps]
        return [e for e in eps if e.group == kw.get("group")] if kw.get("group") == "twinsweep.test" else real(**kw)

    monkeypatch.setattr(metadata, "entry_points", fake)
    monkeypatch.setattr(registry, "_SCAN", None)  # this process may have scanned before the fake
    reg = Registry("widget", group="twinsweep.test")
    reg.register("builtin", _A)
    assert reg.names() == ["broken", "builtin", "installed"]
    assert reg.get("installed") is _B
    with pytest.raises(ConfigError, match="'broken': the installed plug-in 'tw_fake_ep:Missing'"):
        reg.get("broken")


def _plugin_modules(tmp_path, monkeypatch, **bodies):
    """Modules ``tw_decl_<name>`` written to ``tmp_path`` (on sys.path, forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, body in bodies.items():
        (tmp_path / f"tw_decl_{name}.py").write_text(body)
        monkeypatch.delitem(sys.modules, f"tw_decl_{name}", raising=False)


def test_declared_builtins_import_on_first_use_and_keep_their_order(tmp_path, monkeypatch):
    """declare(): names listed without importing their module; get() imports only the module of
    that name; in_order() imports every declared module and lists declared names first in their
    declaration order, whatever order the modules were imported in (a detection tie-break)."""
    reg = Registry("widget")
    monkeypatch.setitem(sys.modules, "tw_decl_registry", types.SimpleNamespace(REG=reg))
    src = "import tw_decl_registry as r\nclass {c}: pass\nr.REG.register({n!r}, {c})\n"
    _plugin_modules(tmp_path, monkeypatch,
                    one=src.format(c="One", n="one"),
                    two=src.format(c="Two", n="two") + "class Three: pass\nr.REG.register('three', Three)\n")
    reg.register("early", _A)  # registered before the declarations: after them in in_order
    for name, mod in (("one", "tw_decl_one"), ("two", "tw_decl_two"), ("three", "tw_decl_two")):
        reg.declare(name, mod)
    assert "tw_decl_one" not in sys.modules and "tw_decl_two" not in sys.modules
    assert reg.names() == ["early", "one", "three", "two"] and "three" in reg
    assert reg.get("three").__name__ == "Three"  # imports tw_decl_two (which registers two and three) only
    assert "tw_decl_two" in sys.modules and "tw_decl_one" not in sys.modules
    assert [n for n, _ in reg.in_order()] == ["one", "two", "three", "early"]
    assert "tw_decl_one" in sys.modules


def test_a_declared_name_taken_by_another_module_conflicts_as_if_imported_eagerly(tmp_path, monkeypatch):
    """Registering a declared built-in's name from elsewhere imports the built-in first, so the
    duplicate is refused (or replaced with replace=True) exactly as when built-ins load eagerly;
    a declared module that does not register its name is one clear error; unregister forgets."""
    reg = Registry("widget")
    monkeypatch.setitem(sys.modules, "tw_decl_registry", types.SimpleNamespace(REG=reg))
    _plugin_modules(tmp_path, monkeypatch,
                    b1="import tw_decl_registry as r\nclass B1: pass\nr.REG.register('b1', B1)\n",
                    silent="X = 1\n")
    reg.declare("b1", "tw_decl_b1")
    with pytest.raises(ConfigError, match="'b1' is already registered"):
        reg.register("b1", _A)
    assert reg.register("b1", _A, replace=True) is _A and reg.get("b1") is _A
    reg.declare("ghost", "tw_decl_silent")
    with pytest.raises(ConfigError, match="'ghost': declared as registered by module 'tw_decl_silent'"):
        reg.get("ghost")
    reg.unregister("ghost")
    assert "ghost" not in reg and "ghost" not in reg.names()


def test_summary_is_the_first_sentence_without_markup_or_references_the_reader_cannot_follow():
    from twinsweep.core.registry import Registry

    reg = Registry("widget")

    class A:
        """``fast``: *Starts* the ``head`` job first (DESIGN.md §3), then the rest (see the module
        docstring). More text."""

    class B:
        pass

    reg.register("fast", A)
    reg.register("bare", B)
    assert reg.summary("fast") == "Starts the head job first, then the rest."
    assert reg.summary("bare") == "—"
    assert reg.summary("missing").startswith("— (not available here: unknown ") and "'missing'" in reg.summary("missing")


@pytest.fixture
def fake_installed(monkeypatch):
    """``add(group, name, value)``: an installed entry point in this process's scan (as pip would
    leave it in an ``entry_points.txt``), undone after the test."""
    installed_entry_points("twinsweep.policies")  # the real scan first
    table = {g: dict(eps) for g, eps in registry._SCAN.items()}
    monkeypatch.setattr(registry, "_SCAN", table)
    monkeypatch.setattr(registry, "_SHADOW_WARNED", set())  # "once per process": this test's process

    def add(group: str, name: str, value: str) -> None:
        table.setdefault(group, {})[name] = registry.EntryPoint(name, value, group)

    return add


def test_an_entry_point_whose_import_registers_its_name_gives_what_was_registered(tmp_path, monkeypatch,
                                                                                    fake_installed):
    """A module that registers itself under the entry point's name at import (the docs' loader
    recipe: ``register_loader("csv-jobs", ...)``, entry point ``csv-jobs = "csv_jobs"``): the
    lookup gives the object the import registered, whether the entry point names the module or
    that object; an import that registers another object under the name is one error naming the
    entry point."""
    reg = Registry("widget", group="twinsweep.test-self")
    monkeypatch.setitem(sys.modules, "tw_decl_registry", types.SimpleNamespace(REG=reg))
    src = "import tw_decl_registry as r\nclass {c}: pass\nOTHER = type('Other', (), {{}})\nr.REG.register({n!r}, {c})\n"
    _plugin_modules(tmp_path, monkeypatch, mod=src.format(c="ByModule", n="by-module"),
                    obj=src.format(c="ByObject", n="by-object"), other=src.format(c="Mine", n="other"))
    fake_installed("twinsweep.test-self", "by-module", "tw_decl_mod")
    fake_installed("twinsweep.test-self", "by-object", "tw_decl_obj:ByObject")
    fake_installed("twinsweep.test-self", "other", "tw_decl_other:OTHER")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no shadowing warning either: the names are the entry points' own
        assert reg.get("by-module") is sys.modules["tw_decl_mod"].ByModule
        assert reg.get("by-object") is sys.modules["tw_decl_obj"].ByObject
        assert reg.names() == ["by-module", "by-object", "other"]
    with pytest.raises(ConfigError, match=r"widget 'other': importing the installed plug-in 'tw_decl_other:OTHER' "
                                          r"\(entry point group 'twinsweep.test-self'\) registered another object under "
                                          r"that name \(tw_decl_other.Mine\)"):
        reg.get("other")


def test_the_docs_loader_recipe_installed_by_entry_point_detects_and_loads(tmp_path, monkeypatch, fake_installed):
    """docs/plugins.md's csv_jobs.py exactly as shown, installed as its entry point
    ``csv-jobs = "csv_jobs"`` and never imported by hand: detection finds it, it loads, and
    detecting another trace (which loads every installed format) still works."""
    from test_docs_recipes import recipe_files
    from twinsweep.core.loaders import LOADERS, load_workload

    (tmp_path / "csv_jobs.py").write_text(recipe_files()["csv_jobs.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "csv_jobs", raising=False)
    fake_installed("twinsweep.loaders", "csv-jobs", "csv_jobs")
    log = tmp_path / "log.csv"
    log.write_text("job_id,submit_time,run_time,time_limit,nodes,user\na,0,100,200,60,u1\nb,10,50,100,60,u2\n")
    swf = tmp_path / "jobs.swf"
    swf.write_text("; MaxNodes: 4\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    try:
        assert load_workload(swf).format == "swf"  # every installed loader is loaded for detection
        wl = load_workload(log)
        assert (wl.format, list(wl.jobs["job_id"]), list(wl.jobs["run_time"])) == ("csv-jobs", ["a", "b"], [100, 50])
        assert LOADERS.get("csv-jobs").detect.__module__ == "csv_jobs"
    finally:
        LOADERS.unregister("csv-jobs")
        sys.modules.pop("csv_jobs", None)


def test_an_entry_point_named_like_a_builtin_is_warned_about_once(monkeypatch, fake_installed):
    """``fcfs = "pkg:LIFO"`` in twinsweep.policies: the built-in fcfs is used, and a
    ShadowedPluginWarning naming the entry point, its value and the built-in says so once per
    process, whether the name is looked up or listed."""
    from twinsweep.core.policies import FCFS, POLICIES

    monkeypatch.setattr(POLICIES, "_shadow_checked", set())
    fake_installed("twinsweep.policies", "fcfs", "tw_nowhere.pol:LIFO")
    with pytest.warns(registry.ShadowedPluginWarning) as got:
        assert POLICIES.get("fcfs") is FCFS
    assert [str(w.message) for w in got] == [
        "installed policy plug-in ignored: the entry point 'fcfs = tw_nowhere.pol:LIFO' (group "
        "'twinsweep.policies') has the name of a built-in policy (twinsweep.core.policies.basic.FCFS), and the "
        "built-in is used; give the entry point another name to use the plug-in"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: neither a lookup nor a listing warns again
        assert POLICIES.get("fcfs") is FCFS and POLICIES.names().count("fcfs") == 1
        monkeypatch.setattr(POLICIES, "_shadow_checked", set())
        POLICIES.names()
    # listed first (a new registry of the group): warned there, naming a declared built-in's module
    monkeypatch.setattr(registry, "_SHADOW_WARNED", set())
    reg = Registry("widget", group="twinsweep.test-shadow")
    reg.declare("ours", "tw_never_imported")
    fake_installed("twinsweep.test-shadow", "ours", "tw_theirs:Ours")
    with pytest.warns(registry.ShadowedPluginWarning, match=r"'ours = tw_theirs:Ours' \(group 'twinsweep.test-shadow'\) "
                                                            r"has the name of a built-in widget \(registered by "
                                                            r"tw_never_imported\), and the built-in is used"):
        assert reg.names() == ["ours"]
    assert "tw_never_imported" not in sys.modules
    # a built-in trace format: named by the module that built its Loader
    from twinsweep.core.loaders import LOADERS

    monkeypatch.setattr(LOADERS, "_shadow_checked", set())
    fake_installed("twinsweep.loaders", "swf", "tw_theirs.neg")
    with pytest.warns(registry.ShadowedPluginWarning, match=r"'swf = tw_theirs.neg' \(group 'twinsweep.loaders'\) has "
                                                            r"the name of a built-in format \(a Loader of "
                                                            r"twinsweep\.core\.loaders\.\w+\), and the built-in is used"):
        assert LOADERS.get("swf").name == "swf"


def test_a_plugin_that_fails_to_import_is_named_with_the_line_that_raised(tmp_path, monkeypatch):
    """The error names the plug-in file and line where its import failed (not only the exception)."""
    (tmp_path / "tw_raises_at_import.py").write_text("X = 1\nfrom tw_no_such_dependency_xyz import y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"No module named 'tw_no_such_dependency_xyz' \(raised at "
                                          + re.escape(str(tmp_path / "tw_raises_at_import.py")) + r", line 2\)"):
        load_object("tw_raises_at_import:X")
    with pytest.raises(ConfigError) as ei:  # a module that does not exist: nothing of the plug-in's to point at
        load_object("tw_no_such_module_xyz:Thing")
    assert "raised at" not in str(ei.value)


def test_an_installed_plugin_that_fails_to_import_is_not_called_unknown(monkeypatch):
    """A policy name that is installed but whose code cannot be loaded is not 'unknown' (before, the
    error said "unknown policy 'x'" and then listed 'x' among the valid names)."""
    from importlib.metadata import EntryPoint

    from twinsweep.core import registry as reg_mod
    from twinsweep.core.scheduler import check_names

    ep = EntryPoint("tw_broken_installed", "tw_no_such_module_xyz:Policy", "twinsweep.policies")
    real = reg_mod.installed_entry_points
    monkeypatch.setattr(reg_mod, "installed_entry_points",
                        lambda group: {**real(group), ep.name: ep} if group == "twinsweep.policies" else real(group))
    with pytest.raises(ConfigError) as ei:
        check_names("tw_broken_installed", "easy")
    msg = str(ei.value)
    assert "cannot be loaded" in msg and "tw_no_such_module_xyz" in msg, msg
    assert "unknown policy" not in msg and "valid policy names" not in msg, msg


def test_an_unknown_name_suggests_the_closest_valid_names():
    """difflib's close matches (cutoff 0.6), in every registry's unknown-name error; none when
    nothing is close."""
    from twinsweep.core.backfill import BACKFILLS
    from twinsweep.core.errors import UnknownNameError

    assert str(UnknownNameError("policy", "sfj", ["fcfs", "sjf", "ljf"])).endswith("; did you mean 'sjf'?")
    assert "did you mean" not in str(UnknownNameError("policy", "zzz", ["fcfs", "sjf"]))
    with pytest.raises(UnknownNameError, match=r"unknown backfill 'eazy'.*; did you mean 'easy'\?$"):
        BACKFILLS.get("eazy")
