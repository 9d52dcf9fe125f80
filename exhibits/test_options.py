"""Each exhibit owns its run options (``exhibits/<id>/options.py``), its registry entry names the
model (``Exhibit.options``), and ``RunOptions`` is their composition: one base per exhibit, in
the registry's order (``jaxscope.run_options``, design 0059).

Checked here (:func:`options_problems`, on the real tree and on fakes that break each rule): every
options model an exhibit folder defines is a base of ``RunOptions``; every base comes from a
registered exhibit's ``options.py``; each field is defined once, its ``x-exhibits`` names only
registered exhibits, the owner among them; ``RunOptions`` adds no field of its own and still
refuses unknown ones; the composition refuses an entry that names no model of a folder's
``options.py`` or one it lacks; and importing the protocol, which imports the registry and
every options module, loads no JAX and no other exhibit module.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pytest
from jaxscope.protocol import RunOptions
from jaxscope.run_options import OptionsRegistryError, compose, options_as
from jaxscope.wire import WireModel
from pydantic import ValidationError, create_model
from pydantic.fields import FieldInfo

from exhibits import registry
from exhibits.recompile_hunt.options import RecompileHuntOptions
from exhibits.registry import EXHIBITS, EXHIBITS_DIR, Exhibit
from exhibits.sharding.options import ShardingOptions
from exhibits.vmap.options import VmapOptions

# No ``from __future__ import annotations``: the fake module is not in sys.modules, where pydantic
# would look its string annotations up.
FAKE_OPTIONS = """
from jaxscope.wire import WireModel
from pydantic import Field


class FakeOptions(WireModel):
    depth: int | None = Field(
        json_schema_extra={"x-exhibits": ["fake_exhibit", "no_such_exhibit"]},
        default=None,
        description="fake_exhibit: a depth",
    )
    width: int | None = Field(
        json_schema_extra={"x-exhibits": ["vmap"]}, default=None, description="vmap: a width"
    )


class FakeVmapOptions(WireModel):
    in_axes: str | None = Field(
        json_schema_extra={"x-exhibits": ["fake_exhibit"]},
        default=None,
        description="fake_exhibit: in_axes again",
    )
"""


def readers(field: FieldInfo) -> list[str]:
    """The exhibits a field's ``x-exhibits`` names (empty when it names none)."""
    extra = field.json_schema_extra
    named = extra.get("x-exhibits") if isinstance(extra, dict) else None
    return [str(e) for e in named] if isinstance(named, list) else []


def options_models(module: ModuleType) -> list[type[WireModel]]:
    """The options models ``module`` defines: its wire models with a field that names the
    exhibits reading it (``x-exhibits``); a view such as ``CallSpec`` names none."""
    return [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type)
        and issubclass(cls, WireModel)
        and cls.__module__ == module.__name__
        and any(readers(f) for f in cls.model_fields.values())
    ]


def options_problems(
    composed: type[WireModel], modules: Mapping[str, ModuleType], exhibit_ids: Sequence[str]
) -> list[str]:
    """What is wrong with ``composed`` (``RunOptions``) as the composition of the options
    ``modules`` (exhibit id -> its ``options.py``) of the exhibits ``exhibit_ids`` (the
    registry's order); empty: nothing."""
    problems: list[str] = []
    bases = composed.__bases__
    for module in modules.values():
        for model in options_models(module):
            if model not in bases:
                problems.append(
                    f"{model.__name__} ({module.__name__}) is not a base of {composed.__name__}: "
                    "name it in its exhibit's registry entry (options=...)"
                )
    owners: list[str] = []
    owned: dict[str, str] = {}
    for base in bases:
        owner = next((i for i, m in modules.items() if m.__name__ == base.__module__), None)
        if owner is None or owner not in exhibit_ids or not issubclass(base, WireModel):
            problems.append(
                f"{base.__name__} ({base.__module__}) is not from a registered exhibit's options.py"
            )
            continue
        owners.append(owner)
        for name, field in base.model_fields.items():
            if name in owned:
                problems.append(f"{name} is defined by both {owned[name]} and {base.__name__}")
                continue
            owned[name] = base.__name__
            named = readers(field)
            for unknown in (e for e in named if e not in exhibit_ids):
                problems.append(f"{base.__name__}.{name} names {unknown!r}, not an exhibit")
            if owner not in named:
                problems.append(f"{base.__name__}.{name}: {owner} owns it but does not read it")
    own = set(composed.model_fields) - set(owned)
    if own:
        problems.append(f"{composed.__name__} defines {sorted(own)} itself, not in an options.py")
    if owners != sorted(owners, key=list(exhibit_ids).index):
        problems.append(f"the bases are not in the registry's order: {owners}")
    return problems


def real_options_modules() -> dict[str, ModuleType]:
    """Every ``exhibits/<id>/options.py`` in the tree, by folder name."""
    return {
        path.parent.name: importlib.import_module(f"exhibits.{path.parent.name}.options")
        for path in sorted(EXHIBITS_DIR.glob("*/options.py"))
    }


def _fake_module(tmp_path: Path) -> ModuleType:
    name = "exhibits.fake_exhibit.options"
    path = tmp_path / "options.py"
    path.write_text(FAKE_OPTIONS)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_options_is_the_composition_of_every_exhibits_options() -> None:
    modules = real_options_modules()
    # The exhibits that own options today (transform_order reads vmap's in_axes and shard_map
    # sharding's mesh/spec: each option is defined once).
    assert set(modules) == {
        "tracing",
        "stations",
        "partial_eval",
        "vmap",
        "transform_order",
        "caches",
        "cache_key",
        "recompile_hunt",
        "sharding",
        "lazy_tensor",
        "pjrt_registry",
        "wrapped_fun",
    }
    assert options_problems(RunOptions, modules, list(EXHIBITS)) == []
    # One base per exhibit that has an options.py, in the registry's order.
    assert [b.__module__ for b in RunOptions.__bases__] == [
        f"exhibits.{i}.options" for i in EXHIBITS if i in modules
    ]


def test_an_options_model_left_out_of_run_options_fails(tmp_path: Path) -> None:
    modules = {**real_options_modules(), "fake_exhibit": _fake_module(tmp_path)}
    ids = [*EXHIBITS, "fake_exhibit"]
    assert options_problems(RunOptions, modules, ids) == [
        f"{cls} (exhibits.fake_exhibit.options) is not a base of RunOptions: "
        "name it in its exhibit's registry entry (options=...)"
        for cls in ("FakeOptions", "FakeVmapOptions")
    ]


def test_an_option_naming_no_exhibit_or_defined_twice_fails(tmp_path: Path) -> None:
    fake = _fake_module(tmp_path)
    modules = {**real_options_modules(), "fake_exhibit": fake}
    composed = create_model(
        "Composed", __base__=(*RunOptions.__bases__, fake.FakeOptions, fake.FakeVmapOptions)
    )
    assert options_problems(composed, modules, [*EXHIBITS, "fake_exhibit"]) == [
        "FakeOptions.depth names 'no_such_exhibit', not an exhibit",
        "FakeOptions.width: fake_exhibit owns it but does not read it",
        "in_axes is defined by both VmapOptions and FakeVmapOptions",
    ]
    # An exhibit the registry does not list owns no option, whatever its folder holds.
    unregistered = options_problems(composed, modules, list(EXHIBITS))
    assert unregistered == [
        *(
            f"{cls} (exhibits.fake_exhibit.options) is not from a registered exhibit's options.py"
            for cls in ("FakeOptions", "FakeVmapOptions")
        ),
        "Composed defines ['depth', 'width'] itself, not in an options.py",
    ]


def test_the_composition_keeps_the_wire_format() -> None:
    """The composed model refuses what each exhibit's model refuses, and unknown options."""
    composed = RunOptions.model_validate({"in_axes": "(0, None)", "steps": 3})
    assert options_as(composed, RecompileHuntOptions).steps == 3
    refused: list[dict[str, object]] = [
        {"no_such_option": 1},
        {"steps": 0},
        {"stack": ["pmap"]},
        {"calls": [{}] * 17},
        {"transform": "pmap"},
    ]
    for bad in refused:
        with pytest.raises(ValidationError):
            RunOptions.model_validate(bad)
    assert RunOptions().model_dump() == {
        "calls": [],
        "known": None,
        "in_axes": None,
        "out_axes": None,
        "stack": None,
        "preset": None,
        "perturb": None,
        "steps": None,
        "xla_flags": None,
        "mesh": None,
        "spec": None,
        "array_shape": None,
        "eager_mode": None,
        "torchax": None,
        "pjrt_device": None,
        "dynamic_plugins": None,
        "transform": None,
        "target": None,
    }


def test_the_protocol_imports_the_options_without_jax() -> None:
    """The server and the CLI import the protocol, and so the registry and every options module
    (no other exhibit module: no events, artefacts or probe), without JAX; the registry alone
    imports nothing of jaxscope (the protocol imports it while it is defined)."""
    code = (
        "import sys\n"
        "import exhibits.registry\n"
        "print(sorted(m for m in sys.modules if m.startswith('jaxscope')))\n"
        "import jaxscope.protocol\n"
        "print(sorted(m for m in sys.modules if m.startswith('exhibits.') and m.count('.') > 1))\n"
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    jaxscope_modules, loaded, jax_modules = out.stdout.splitlines()
    assert jaxscope_modules == "[]"
    assert loaded == str(sorted(m.__name__ for m in real_options_modules().values()))
    assert jax_modules == "[]"


def test_every_registry_entry_names_the_model_of_its_options_py() -> None:
    named = {e.id: e.options for e in EXHIBITS.values() if e.options is not None}
    assert set(named) == {p.parent.name for p in EXHIBITS_DIR.glob("*/options.py")} & set(EXHIBITS)
    for exhibit_id, model in named.items():
        assert getattr(real_options_modules()[exhibit_id], model) in RunOptions.__bases__


def test_the_composition_refuses_an_entry_without_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registered folder with an ``options.py`` whose entry names no model, or names one the
    module lacks, fails the composition (and so the protocol's import: the server, the worker,
    every test) with both named."""
    for name in ("silent", "misnamed"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "options.py").write_text(FAKE_OPTIONS)
    monkeypatch.setattr(registry, "EXHIBITS_DIR", tmp_path)
    monkeypatch.setitem(sys.modules, "exhibits.misnamed.options", _fake_module(tmp_path))
    table = {
        "silent": Exhibit(id="silent", title="S", summary="", default_example="x"),
        "misnamed": Exhibit(
            id="misnamed", title="M", summary="", default_example="x", options="NoSuchOptions"
        ),
    }
    with pytest.raises(OptionsRegistryError) as raised:
        compose(table)
    assert str(raised.value) == (
        "the options registry is inconsistent: exhibits/silent/options.py exists but the "
        "registry entry of silent names no options model (options=...); misnamed: "
        "options='NoSuchOptions' is not a WireModel of exhibits.misnamed.options"
    )
    # Named, it composes: the model is a base, its fields are RunOptions' fields.
    table["misnamed"] = Exhibit(
        id="misnamed", title="M", summary="", default_example="x", options="FakeOptions"
    )
    del table["silent"]
    composed = compose(table)
    assert [b.__name__ for b in composed.__bases__] == ["FakeOptions"]
    assert set(composed.model_fields) == {"depth", "width"}


def test_a_probe_reads_its_options_through_its_model() -> None:
    """``options_as`` gives the run's options as one exhibit's model (typed reads), the same
    object, and refuses a model that is not a base of ``RunOptions``."""
    options = RunOptions.model_validate({"in_axes": "(0, None)", "mesh": "m"})
    assert options_as(options, VmapOptions).in_axes == "(0, None)"
    assert options_as(options, ShardingOptions).mesh == "m"
    assert id(options_as(options, VmapOptions)) == id(options)

    class Stray(WireModel):
        depth: int | None = None

    with pytest.raises(TypeError, match="Stray is not a base of RunOptions"):
        options_as(options, Stray)
