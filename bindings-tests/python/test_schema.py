"""The Python values and readers against the wire form's JSON Schema (``schema/``,
generated from the core's Rust types).

- Fresh: ``onair._wire`` (the value classes and their readers) is generated from
  the schema by ``python/gen_wire.py``; the committed module must be what it
  writes today (``scripts/regen-wire`` rewrites the schema, the TypeScript types
  and it), and a field added to the schema becomes a typed, read field with no
  other edit.
- Classes: every variant of an action, notice, call result and item has a class;
  every property the schema gives it has a typed attribute (snake_case, or the
  rename below), nullable in Python where the schema allows ``null``, with a
  default where the schema lets the field be absent, and of the JSON type's
  Python kind (this checks the generator's tables of Python names and types).
- Readers: every pinned line of the core's JSON formats (one sample of every
  variant, ``core/tests/snapshots/json_formats__…``) read by ``onair._json`` gives
  a value whose attributes hold every property of the line.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import json
import shutil
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union

import pytest

from onair import _json, actions, events

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema"
PINNED = ROOT / "core/tests/snapshots/json_formats__every_json_line_format_is_pinned.snap"
GENERATED = ROOT / "python/onair/_wire.py"

Json = dict[str, Any]

# The variants, by their tag's value, and the class each is read into.
ACTIONS: dict[str, type | None] = {
    "send": actions.Send,
    "openStream": actions.OpenStream,
    "closeStream": actions.CloseStream,
    "event": None,  # the event classes themselves (EVENTS)
    "notice": None,  # the notice classes (NOTICES)
    "done": actions.Done,
    "persistTokens": actions.PersistTokens,
    "timer": actions.Timer,
    "needsAuthorization": actions.NeedsAuthorization,
    "wait": actions.Wait,
    "stopped": actions.Stopped,
    "command": actions.Command,
    "arrival": actions.Arrival,
    "milestone": actions.Milestone,
    "broadcastEnded": actions.BroadcastEnded,
    "persistState": actions.PersistState,
}
NOTICES: dict[str, type] = {
    "frameSkipped": actions.FrameSkipped,
    "unknownEvent": actions.UnknownEvent,
    "problem": actions.ProblemNotice,
    "callHeld": actions.CallHeld,
    "reconnectStormBraked": actions.ReconnectStormBraked,
    "commandRefused": actions.CommandRefused,
    "unreachable": actions.Unreachable,
    "reachable": actions.Reachable,
    "gaveUp": actions.GaveUp,
    "dailyQuotaReached": actions.DailyQuotaReached,
    "repliesDropped": actions.RepliesDropped,
}
RESULTS: dict[str, type] = {
    "broadcast": actions.Broadcast,
    "listeners": actions.Listeners,
    "fans": actions.Fans,
    "chatSent": actions.ChatSent,
    "failed": actions.Failed,
}
ITEMS: dict[str, type | None] = {
    "event": None,
    "unknown": events.UnknownFrame,
    "heartbeat": events.Heartbeat,
    "comment": events.Comment,
    "retry": events.Retry,
    "error": events.FrameError,
}
EVENTS: dict[str, type] = {
    "Chat": events.Chat,
    "Presence": events.Presence,
    "Like": events.Like,
    "Donation": events.Donation,
    "End": events.End,
}

# Where Python names a property otherwise than its snake_case.
RENAMES: dict[tuple[type, str], str] = {
    (actions.Send, "id"): "request_id",
    (actions.OpenStream, "id"): "request_id",
    (actions.CloseStream, "id"): "request_id",
    (actions.Done, "call"): "call_id",
    (actions.CallHeld, "call"): "call_id",
    (events.FrameError, "error"): "code",
}
# A property whose object is the class's own fields (`{"type":"stopped","stop":{…}}`
# is a `Stopped` with the stop's fields).
WRAPPERS = {"notice", "stop", "broadcast", "fans", "error"}
# The tags: which variant a line is, the class itself in Python.
TAGS = {"type", "kind"}


def load(name: str) -> Json:
    document: Json = json.loads((SCHEMA / name).read_text())
    return document


def resolve(root: Json, node: Json) -> Json:
    while "$ref" in node and "properties" not in node:
        node = root["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def properties(root: Json, node: Json) -> tuple[dict[str, Json], set[str]]:
    """An object schema's properties and required names, `$ref`'d and flattened
    parts included (a newtype variant, a flattened struct)."""
    props: dict[str, Json] = dict(node.get("properties", {}))
    required = set(node.get("required", []))
    if "$ref" in node:
        more, req = properties(root, root["$defs"][node["$ref"].removeprefix("#/$defs/")])
        props |= more
        required |= req
    for part in node.get("allOf", []):
        more, req = properties(root, part)
        props |= more
        required |= req
    return props, required


def variants(root: Json, node: Json, tag: str) -> dict[str, Json]:
    """A tagged union's members by their tag's value."""
    out: dict[str, Json] = {}
    for member in resolve(root, node)["oneOf"]:
        props, _ = properties(root, member)
        out[props[tag]["const"]] = member
    return out


def snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def attribute(cls: type, prop: str) -> str:
    return RENAMES.get((cls, prop), snake(prop))


def nullable(root: Json, schema: Json) -> bool:
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    members = schema.get("anyOf", []) + schema.get("oneOf", [])
    if any(nullable(root, m) for m in members):
        return True
    if "$ref" in schema:
        return nullable(root, root["$defs"][schema["$ref"].removeprefix("#/$defs/")])
    return False


def json_types(root: Json, schema: Json) -> set[str]:
    """The JSON types a property may take, `null` left out."""
    if "$ref" in schema:
        return json_types(root, root["$defs"][schema["$ref"].removeprefix("#/$defs/")])
    kinds = schema.get("type")
    if isinstance(kinds, str):
        out = {kinds}
    elif isinstance(kinds, list):
        out = set(kinds)
    else:
        out = set()
        for member in schema.get("anyOf", []) + schema.get("oneOf", []):
            out |= json_types(root, member)
        if "properties" in schema:
            out.add("object")
    out.discard("null")
    return out


def python_kinds(hint: Any) -> set[str]:
    """The JSON types a Python annotation holds, `None` left out."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return {"string", "integer", "number", "boolean", "array", "object"}
    if origin in (Union, types.UnionType):
        out: set[str] = set()
        for arg in typing.get_args(hint):
            out |= python_kinds(arg)
        return out
    if origin is Literal:
        return {"string" if isinstance(typing.get_args(hint)[0], str) else "integer"}
    if hint is type(None):
        return set()
    if hint is bool:
        return {"boolean"}
    if hint is int:
        return {"integer"}
    if hint is float:
        return {"number", "integer"}
    if hint is str or (isinstance(hint, type) and issubclass(hint, enum.Enum)):
        return {"string"}
    if hint is bytes:
        return {"string"}  # a request's body, as bytes
    if origin in (tuple, list):
        return {"array"}
    if dataclasses.is_dataclass(hint) or (isinstance(hint, type) and issubclass(hint, Mapping)):
        return {"object"}
    raise AssertionError(f"an annotation this test does not know: {hint!r}")


def accepts_none(hint: Any) -> bool:
    return hint is Any or type(None) in typing.get_args(hint)


def check_class(root: Json, cls: type, node: Json, skip: set[str], where: str) -> list[str]:
    """Every property of `node` (but `skip`) against `cls`'s fields."""
    problems: list[str] = []
    props, required = properties(root, node)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for prop, schema in props.items():
        if prop in skip:
            continue
        name = attribute(cls, prop)
        if name not in fields:
            problems.append(f"{where}: `{prop}` has no attribute `{name}` in {cls.__qualname__}")
            continue
        hint = hints[name]
        field = fields[name]
        has_default = (
            field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        )
        if nullable(root, schema) and not accepts_none(hint):
            problems.append(f"{where}: `{prop}` may be null; {cls.__qualname__}.{name}: {hint} may not")
        if prop not in required and not (has_default or accepts_none(hint)):
            problems.append(f"{where}: `{prop}` may be absent; {cls.__qualname__}.{name} has no default")
        if prop in required and not nullable(root, schema) and accepts_none(hint) and hint is not Any:
            problems.append(f"{where}: `{prop}` is never null; {cls.__qualname__}.{name}: {hint} says it may be")
        wanted = json_types(root, schema)
        if wanted and not wanted & python_kinds(hint):
            problems.append(f"{where}: `{prop}` is {sorted(wanted)}; {cls.__qualname__}.{name} is {hint}")
    return problems


def check_events(root: Json) -> list[str]:
    """The event payloads: each a class with its fields, and the frame's `id`."""
    problems: list[str] = []
    payloads = [m["$ref"].removeprefix("#/$defs/") for m in root["$defs"]["Event"]["anyOf"]]
    for name in payloads:
        cls = EVENTS.get(name)
        if cls is None:
            problems.append(f"event {name} has no Python class")
            continue
        problems += check_class(root, cls, root["$defs"][name], set(), f"event {name}")
        if "id" not in {f.name for f in dataclasses.fields(cls)}:
            problems.append(f"event {name}: {cls.__qualname__} has no frame `id`")
    return problems


def test_every_action_variant_and_field_has_its_python_class_and_attribute() -> None:
    root = load("action.json")
    problems: list[str] = []
    for tag, member in variants(root, root, "type").items():
        if tag not in ACTIONS:
            problems.append(f"action `{tag}` has no Python class")
            continue
        cls = ACTIONS[tag]
        props, _ = properties(root, member)
        if tag == "notice":
            for kind, notice in variants(root, props["notice"], "kind").items():
                if kind not in NOTICES:
                    problems.append(f"notice `{kind}` has no Python class")
                    continue
                problems += check_class(root, NOTICES[kind], resolve(root, props["notice"]), TAGS, "notice")
                problems += check_class(root, NOTICES[kind], notice, TAGS, f"notice `{kind}`")
        elif tag == "stopped":
            problems += check_class(root, actions.Stopped, props["stop"], set(), "stop")
        elif cls is not None:
            problems += check_class(root, cls, member, {"type"}, f"action `{tag}`")
    for kind, member in variants(root, root["$defs"]["ResultLine"], "kind").items():
        if kind not in RESULTS:
            problems.append(f"call result `{kind}` has no Python class")
            continue
        props, _ = properties(root, member)
        inner = props.get(kind) if kind in WRAPPERS else None
        problems += check_class(root, RESULTS[kind], inner or member, {"kind"}, f"result `{kind}`")
    # The values inside: a problem, a tally and its people, a user.
    problems += check_class(root, actions.Problem, root["$defs"]["Explanation"], set(), "problem")
    problems += check_class(root, actions.Tally, root["$defs"]["Tally"], set(), "tally")
    problems += check_class(root, actions.PersonTotals, root["$defs"]["PersonTotals"], set(), "person")
    problems += check_class(root, events.User, root["$defs"]["User"], set(), "user")
    problems += check_class(root, actions.Request, root["$defs"]["Request"], set(), "request")
    problems += check_events(root)
    assert not problems, "\n".join(problems)


def test_every_item_variant_and_field_has_its_python_class_and_attribute() -> None:
    root = load("item.json")
    problems: list[str] = []
    for tag, member in variants(root, root, "type").items():
        if tag not in ITEMS:
            problems.append(f"item `{tag}` has no Python class")
            continue
        cls = ITEMS[tag]
        if cls is not None:
            problems += check_class(root, cls, member, {"type"}, f"item `{tag}`")
    problems += check_events(root)
    assert not problems, "\n".join(problems)


def test_the_schema_check_sees_a_field_python_lacks() -> None:
    # The same check on a schema with one more property: it is named.
    root = load("action.json")
    member = dict(variants(root, root, "type")["timer"])
    member["properties"] = dict(member["properties"]) | {"firedAtMs": {"type": "integer"}}
    member["required"] = [*member["required"], "firedAtMs"]
    problems = check_class(root, actions.Timer, member, {"type"}, "action `timer`")
    assert problems == ["action `timer`: `firedAtMs` has no attribute `fired_at_ms` in Timer"]
    nulls = dict(member)
    nulls["properties"] = {"tag": {"type": ["string", "null"]}}
    assert check_class(root, actions.Timer, nulls, {"type"}, "t") == [
        "t: `tag` may be null; Timer.tag: <class 'str'> may not"
    ]


# ---- the readers, on every pinned line ----------------------------------------------


def pinned() -> list[tuple[str, Json]]:
    """(section, line) of every JSON line of the pinned formats."""
    body = PINNED.read_text().split("---\n", 2)[2]
    section = ""
    out: list[tuple[str, Json]] = []
    for line in body.split("\n"):  # not splitlines: a line may hold U+2028
        if not line:
            continue
        if line.startswith("# "):
            section = line[2:]
            continue
        out.append((section, json.loads(line)))
    return out


def same(line: Any, value: Any, where: str) -> list[str]:
    """Every property of a JSON value held by the Python value read from it."""
    if isinstance(line, dict):
        if isinstance(value, Mapping):
            if set(line) != set(value):
                return [f"{where}: keys {sorted(line)} read as {sorted(value)}"]
            return [p for k in line for p in same(line[k], value[k], f"{where}.{k}")]
        if "data" in line and "event" in line and type(value).__name__ in EVENTS:
            # An event line or reference: its payload's fields and the frame id.
            return same(line["data"], value, f"{where}.data") + same(line["id"], value.id, f"{where}.id")
        problems: list[str] = []
        for key, item in line.items():
            name = attribute(type(value), key)
            inner = getattr(value, name, None)
            nested = dataclasses.is_dataclass(inner) or isinstance(inner, Mapping)
            if key in WRAPPERS and isinstance(item, dict) and not nested:
                problems += same(item, value, f"{where}.{key}")
            elif hasattr(value, name):
                problems += same(item, inner, f"{where}.{key}")
            elif key not in TAGS:
                problems.append(f"{where}: `{key}` is not read into {type(value).__qualname__}")
        return problems
    if isinstance(line, list):
        if not isinstance(value, (tuple, list)) or len(value) != len(line):
            return [f"{where}: {line!r} read as {value!r}"]
        return [p for i, (a, b) in enumerate(zip(line, value)) for p in same(a, b, f"{where}[{i}]")]
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if line != value:
        return [f"{where}: {line!r} read as {value!r}"]
    return []


READERS = {
    "actions": _json.action,
    "the kit's actions and state": _json.action,
    "typed items": _json.item,
}


@pytest.mark.parametrize("section", sorted(READERS))
def test_every_pinned_line_is_read_whole(section: str) -> None:
    lines = [line for s, line in pinned() if s == section and "type" in line]
    assert lines, f"no pinned lines under {section!r}"
    problems: list[str] = []
    for line in lines:
        value = READERS[section](line)
        assert not isinstance(value, actions.OtherAction), f"not read: {line}"
        problems += same(line, value, line.get("type", "?"))
    assert not problems, "\n".join(problems)


def test_the_reader_check_sees_a_property_left_unread() -> None:
    line = next(line for _, line in pinned() if line.get("type") == "timer") | {"firedAtMs": 5}
    assert same(line, _json.action(line), "timer") == ["timer: `firedAtMs` is not read into Timer"]


# ---- the generated module -------------------------------------------------------------


def generator() -> Any:
    """python/gen_wire.py as a module."""
    spec = importlib.util.spec_from_file_location("gen_wire", ROOT / "python/gen_wire.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_wire"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["gen_wire"]
    return module


def load_generated(text: str) -> Any:
    """A generated module's text as a module of the onair package (beside _wire), left
    registered so that its classes' annotations resolve in it."""
    module = types.ModuleType("onair._wire_scratch")
    module.__package__ = "onair"
    sys.modules[module.__name__] = module
    exec(compile(text, "<generated>", "exec"), module.__dict__)
    return module


def test_the_generated_values_and_readers_are_fresh() -> None:
    written = generator().generate(SCHEMA)
    assert GENERATED.read_text() == written, (
        "python/onair/_wire.py is not what the schema gives: run scripts/regen-wire "
        "(it regenerates schema/*.json, wasm/types.d.ts and python/onair/_wire.py)"
    )


def test_a_field_added_to_the_schema_is_typed_and_read_with_no_other_edit(tmp_path: Path) -> None:
    # As the Rust would write it after a new field on one action and one notice, and
    # one action (wait) folded away.
    shutil.copytree(SCHEMA, tmp_path / "schema")
    path = tmp_path / "schema/action.json"
    root = json.loads(path.read_text())
    timer = variants(root, root, "type")["timer"]
    timer["properties"]["firedAtMs"] = {"type": "integer", "format": "uint64", "description": "When it fired."}
    timer["required"].append("firedAtMs")
    reachable = variants(root, root["$defs"]["NoticeJson"], "kind")["reachable"]
    reachable["properties"]["downMs"] = {"type": ["integer", "null"]}
    reachable["required"].append("downMs")
    root["oneOf"] = [m for m in root["oneOf"] if m["properties"]["type"]["const"] != "wait"]
    path.write_text(json.dumps(root))

    text = generator().generate(tmp_path / "schema")
    wire = load_generated(text)
    samples = {line.get("type"): line for _, line in pinned()}
    timer = samples["timer"] | {"firedAtMs": 5}
    read = wire.read_action(timer)
    assert type(read) is wire.Timer and read.fired_at_ms == 5 and read.tag == timer["tag"]
    assert typing.get_type_hints(wire.Timer)["fired_at_ms"] is int
    assert 'fired_at_ms: int\n    """When it fired."""' in text  # its doc comment, as the field's docstring
    reachable = next(line for _, line in pinned() if line.get("notice", {}).get("kind") == "reachable")
    reachable = reachable | {"notice": reachable["notice"] | {"downMs": None}}
    assert type(wire.read_action(reachable)) is wire.Reachable and wire.read_action(reachable).down_ms is None
    assert not hasattr(wire, "Wait") and "Wait" not in wire.__all__
    folded = {"type": "wait", "untilMs": 1}
    assert wire.read_action(folded) == actions.OtherAction(folded)
    # The new classes pass this file's field-by-field check against the new schema.
    members = variants(root, root, "type")
    assert check_class(root, wire.Timer, members["timer"], {"type"}, "timer") == []
    assert check_class(root, wire.CloseStream, members["closeStream"], {"type", "id"}, "closeStream") == []
