#!/usr/bin/env python3
"""Writes python/onair/_wire.py, the Python values and readers of the core's JSON
lines, from the committed JSON Schemas (schema/*.json, generated from the Rust
types). Run by scripts/regen-wire; the Python suite fails when the committed
module differs from what this writes.

usage: python3 python/gen_wire.py [--check] [--stdout]

  --check   exit 1 (naming scripts/regen-wire) when python/onair/_wire.py is stale
  --stdout  print the module instead of writing it

What the schema says becomes the classes: one frozen slotted dataclass per item,
event, action, notice, call result and value inside them, fields in snake_case,
typed from the schema (``Literal`` for a closed set of strings, a ``str`` enum for
the spec's open ones, ``X | None`` where null is allowed, a default where a field
may be absent), docstrings from the Rust doc comments; and the readers: one per
class, the tables that pick one by the line's tag, and the events' fast path.

What the schema cannot say is in the tables below (Python's names and wording,
positional order kept from earlier releases, a stricter type where the Rust
writes a plain string) and in python/onair/_values.py (behaviour, as mixins). A
field added in Rust needs neither: it is typed, read and documented from the
schema alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schema"
TARGET = ROOT / "python" / "onair" / "_wire.py"
COMMAND = "scripts/regen-wire"

Json = dict[str, Any]

# ---- what the schema cannot say --------------------------------------------------------

# A variant's class name where Python's is not its tag in PascalCase, by
# "<union>:<tag>"; a definition's where it is not the definition's name, by "def:<name>".
NAMES: dict[str, str] = {
    "notice:problem": "ProblemNotice",
    "item:unknown": "UnknownFrame",
    "item:error": "FrameError",
    "def:Explanation": "Problem",
    "def:ResultLine": "CallResult",
    "def:DecodeErrorKind": "FrameErrorCode",
}
# A closed set of names also given as a tuple of its values, by its alias.
VALUE_TUPLES: dict[str, str] = {"ReplyKind": "REPLY_KINDS"}
# A property Python names otherwise than its snake_case, by "<Class>.<key>" or by key.
RENAMES: dict[str, str] = {
    "FrameError.error": "code",
    "call": "call_id",
}
# In the action lines, `id` is the request's id.
ACTION_ID = "request_id"

# Mixins a class takes its behaviour from (python/onair/_values.py), by class name;
# "Notice" is the base of every notice.
BASES: dict[str, str] = {
    "Like": "_LikeMixin",
    "End": "_EndMixin",
    "Problem": "_ProblemMixin",
    "Request": "_RequestMixin",
    "Stopped": "_StoppedMixin",
    "Done": "_DoneMixin",
    "Failed": "_FailedMixin",
    "Tally": "_TallyMixin",
}
CLASS_ARGS: dict[str, str] = {"Request": ", repr=False"}
# Classes whose every field has its type's empty value as default.
EMPTY_DEFAULTS = {"Tally", "ReplyCounters"}

# Per field ("<Class>.<field>", or "<field>" for any class): Python's type (the
# Rust writes a plain string), how it is read ({v}: the JSON value), its default,
# "nodefault" (a nullable field kept before required ones), its place ("order":
# smaller first; fields without one follow in the schema's order).
FIELDS: dict[str, dict[str, Any]] = {
    "Milestone.user": {"nodefault": True, "after": "total"},
    "Milestone.event": {"type": "Like | Donation"},
    "Command.event": {"type": "Chat"},
    "BroadcastEnded.event": {"type": "End"},
    "Stopped.reason": {"order": 1},
    "Stopped.missing": {"order": 2},
    "Stopped.problem": {"order": 3},
    "Failed.problem": {"order": 1},
    "Failed.until_ms": {"order": 2},
    "Failed.message": {"order": 3},
    "Failed.stop": {"order": 4},
    "FrameError.code": {"order": 0},
    "FrameError.message": {"order": 1},
    "FrameError.event": {"order": 2},
    "FrameError.id": {"order": 3},
    "FrameError.raw": {"order": 4},
    "UnknownFrame.event": {"order": 0},
    "UnknownFrame.data": {"order": 1},
    "UnknownFrame.id": {"order": 2},
    "Request.body": {"type": "bytes", "read": '{v}.encode("utf-8")'},
    "PersistTokens.tokens": {"default": "field(repr=False)"},
    "PersistTokens.generation": {"default": "0"},
    "Problem.detail_code": {"default": "None"},
    "Problem.oauth_error": {"default": "None"},
    "Problem.retry_after_ms": {"default": "None"},
    "Problem.quota_scope": {"default": "None"},
    "Problem.recently_revoked": {"default": "False"},
    "Notice.message": {"default": 'field(default="", compare=False)'},
    "Notice.level": {"default": 'field(default="info", compare=False)'},
    "Unreachable.level": {"default": 'field(default="warn", compare=False)'},
    "GaveUp.level": {"default": 'field(default="warn", compare=False)'},
    "RepliesDropped.level": {"default": 'field(default="warn", compare=False)'},
    "DailyQuotaReached.level": {"default": 'field(default="warn", compare=False)'},
}
# A map of these, by their class, is this hand-written mapping (else a dict).
MAPPINGS = {"PersonTotals": "People"}
# Definitions read from other documents than the action and item lines.
EXTRA = [("status.json", "ReplyCounters")]

# Docstrings in Python's words (Python's names for the calls), by class; a class
# without one takes the Rust doc comment.
DOCS: dict[str, str] = {
    "ReplyKind": """What a reply is for (``Bot.reply``, ``RepliesDropped``, ``ReplyCounters``): its
freshness, and whether replies of its kind waiting together go out as one message
(``welcome``, ``welcome_back``, ``thanks``; never ``milestone`` or ``command``).""",
    "Role": "What the poster of a chat is, as far as the bot can tell.",
    "Allowed": "Who may run a command.",
    "PresenceType": '``presence.type``: the spec sends only ``JOIN``.',
    "LikeType": '``like.type``: ``PAID`` (bought with the paid currency) or ``FREE``.',
    "EndReason": "``end.reason``.",
    "User": """Who did it: ``id`` (the key for a person, scoped to bot and DJ) and
``nickname`` (``None`` when missing, never empty).""",
    "Chat": "A chat message (``chat``).",
    "Presence": "A listener joined (``presence``).",
    "Like": "Hearts (``like``): ``total_amount`` is what this event adds to the broadcast.",
    "Donation": "A donation (``donation``): ``amount`` in currency units; ``message`` None without a note.",
    "End": "The last frame of a stream connection (``end``).",
    "Heartbeat": "The service's ``:heartbeat`` comment.",
    "Comment": "Any other SSE comment.",
    "Retry": "A ``retry:`` field (milliseconds).",
    "UnknownFrame": "A frame whose event name this version of the core does not know; ``data`` raw.",
    "FrameError": "A frame that did not decode (the stream goes on): its code, why, and its raw data.",
    "Problem": "A classified response (``onair explain``): what it was and what to do.",
    "Request": """An HTTP request to send as it is. It may carry an ``Authorization`` header and a
form with secrets: ``repr`` names the headers and hides their values and the body.""",
    "PersonTotals": "One person's totals in a broadcast (the DJ is kept out).",
    "Tally": """A broadcast's totals by person: the shape of the emulator ledger's ``totals``.

``attendance`` is the number of people who joined.""",
    "Send": """Send ``request``; report with ``Bot.on_response`` (or ``on_transport_error``).
The bot keeps ``timeout_ms`` itself: give the client no shorter timeout.""",
    "OpenStream": """Open ``request`` as a stream with no whole-body timeout (the bot's watchdog
covers it); report with ``on_stream_open``, ``on_stream_bytes``, ``on_stream_closed``.""",
    "CloseStream": """Close the connection ``request_id`` or drop that request: the bot is done with
it for ``reason`` (``ended``, ``silent``: the heartbeat watchdog, ``timed_out``: no
answer within its timeout, ``stopping``). Late reports for it are harmless.""",
    "Wait": """Nothing to do until ``until_ms`` (unix ms) or until a report; ``None``: only a
report moves the bot. Ends a drain.""",
    "Broadcast": "``GET /v1/live`` (``Bot.fetch_broadcast``).",
    "Listener": "A person in the room: ``id`` is the stable key.",
    "Listeners": "Every page of ``GET /v1/live/listeners``, people deduplicated by id.",
    "Fan": "One entry of the donation ranking.",
    "Fans": "``GET /v1/live/fans``: the top donors present (``total_count``: the list's size).",
    "ChatSent": "The service took the chat message (204).",
    "Stopped": """The bot has stopped; a person must act. Sticky: polling keeps returning it.

``code`` ``reauthorize`` (``resumes_with_new_consent``: ``authorize`` brings it
back), ``reconsent`` (``missing`` permissions), ``join_forbidden``,
``invalid_client``, ``fix_request`` / ``unexpected`` (with the ``problem``),
``shut_down``. Ends a drain.""",
    "Failed": """A call failed for good: ``failure`` says why; ``problem`` (the service's answer),
``until_ms`` (a daily quota's end), ``message`` or ``stop`` when it has one.""",
    "Done": "The answer to app call ``call_id`` (``send_chat``, ``say``, ``fetch_broadcast``, …).",
    "FrameSkipped": "A stream frame that did not decode was skipped.",
    "UnknownEvent": "A stream event this version of the core does not know.",
    "ProblemNotice": "An error response the bot is handling by itself (retry, refresh, reconnect).",
    "CommandRefused": "Someone ran a configured command they may not run.",
    "CallHeld": "A call made while the bot waits for consent: held until ``authorize``.",
    "ReconnectStormBraked": "Connections keep ending with ``RECONNECT`` at once: the next waits until ``until_ms``.",
    "Unreachable": """The service could not be reached: the first failure at once, then at most one
notice every 30 s while failures go on (the bot keeps retrying). ``endpoint`` and
``failure`` (``not_sent``, ``no_response``, ``timed_out``) are the latest
failure's; ``failures`` failed requests since ``since_ms``.""",
    "Reachable": "The service answered again after ``Unreachable``.",
    "GaveUp": """``count`` app calls of ``endpoint`` given up on for ``reason`` (``cancelled``,
``quota_blocked``, ``refused``, ``queue_full``, ``transport``, ``invalid_answer``); each also has
its ``Done``. The first at once, then at most one notice every 5 s per endpoint
and reason.""",
    "RepliesDropped": """``people`` replies of ``reply_kind`` (``welcome``, ``welcome_back``, ``thanks``,
``milestone``, ``command``) dropped, never sent, for ``reason`` (``stale``: not out
within their freshness; ``ended``, ``refused``, ``given_up``, ``queue_full``,
``stopped``); one notice per kind and reason at a time.""",
    "ReplyCounters": """One reply kind's counters since the bot started (``Bot.reply_counters``):
``messages`` the service took, ``people`` named in them, ``merged`` (replies that
went out in one message with others of their kind), ``dropped`` (never sent, any
reason) and ``dropped_<reason>`` for each reason of ``RepliesDropped``.""",
    "DailyQuotaReached": """A daily quota blocks permission ``scope`` (``None``: every call of the app)
until ``until_ms``; said once per block.""",
    "PersistTokens": """A new token pair is in force: save ``tokens`` (a secret, hidden from ``repr``)
and give it back to ``Bot`` after a restart.""",
    "Timer": "App timer ``tag`` is due (``Bot.schedule``, ``Bot.every``, ``Bot.set_timer``).",
    "NeedsAuthorization": """No tokens: get a consent code from the DJ, then ``authorize(code, redirect_uri)``.
Ends a drain.""",
    "Command": "A configured command run by someone allowed to; answer with ``say``.",
    "Arrival": """Someone to greet: their ``first`` sign in this broadcast, or ``back`` after
``away_ms`` unseen. ``event``: their join, or their chat.""",
    "Milestone": """A configured milestone crossed: the broadcast's ``hearts`` (``event``: the
``Like``), or one person ``donated`` (``user``; ``event``: the ``Donation``).""",
    "BroadcastEnded": """The broadcast is over: its final ``tally``. ``event``: the ``LIVE_ENDED`` frame,
``None`` when the end was inferred (another ``liveId``, not on air after a restart).""",
    "PersistState": """The kit's memory changed: save ``state`` before acting on what follows, and give it
back (``Bot(kit_state=…)``) after a restart: nobody greeted twice, no total lost.""",
}
FRAME_ID_DOC = "The frame's id (``<epochMillis>-<offset>``), or ``None``."

# ---- reading the schema ----------------------------------------------------------------


def pascal(tag: str) -> str:
    return tag[:1].upper() + tag[1:]


def snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def upper(value: str) -> str:
    return re.sub(r"\W", "_", value).upper()


def ref_name(node: Json) -> str | None:
    ref = node.get("$ref")
    return ref.removeprefix("#/$defs/") if isinstance(ref, str) else None


def prose(text: str) -> str:
    """A Rust doc comment as a Python docstring: no code blocks, reST literals."""
    text = re.sub(r"```.*?```\n?", "", text, flags=re.S).strip()
    if re.fullmatch(r"See \[`[^`]+`\]\.", text):  # a Rust cross-reference alone says nothing here
        return ""
    text = re.sub(r"(\w)::(\w)", r"\1.\2", text)
    text = re.sub(r"\[`([^`]+)`\](\([^)]*\))?", r"`\1`", text)
    text = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def docstring(text: str, indent: str) -> str:
    lines = text.split("\n")
    body = "\n".join((indent + line) if line and i else line for i, line in enumerate(lines))
    return f'{indent}"""{body}"""\n'


@dataclass
class Field:
    name: str
    key: str | None  # None: the event frame's id
    type: str
    read: str  # {v}: the JSON value
    required: bool
    default: str | None
    doc: str | None
    order: tuple[int, float, str]


@dataclass
class Cls:
    name: str
    doc: str
    fields: list[Field] = field(default_factory=list)
    base: str | None = None
    event: str | None = None  # an event payload's name


class Schema:
    def __init__(self, root: Path) -> None:
        self.docs: dict[str, Json] = {
            name: json.loads((root / name).read_text()) for name in ("action.json", "item.json", "status.json")
        }
        self.defs: dict[str, Json] = {}
        for document in self.docs.values():
            for name, node in document.get("$defs", {}).items():
                self.defs.setdefault(name, node)
        self.classes: dict[str, Cls] = {}
        self.def_class: dict[str, str] = {}  # definition -> class
        self.pending: list[tuple[str, str]] = []  # (definition, class) to build
        self.literals: dict[str, list[str]] = {}
        self.literal_docs: dict[str, str] = {}
        self.wrapped: dict[str, str] = {}  # a class read from one property of its line
        self.kinds: dict[str, list[str]] = {}
        self.unions: dict[str, tuple[str, list[tuple[str, str]]]] = {}  # alias -> (tag, [(value, class)])

    # -- nodes

    def props(self, node: Json) -> tuple[dict[str, Json], list[str]]:
        """An object's properties and required keys (in order), `$ref` and `allOf` flattened."""
        props: dict[str, Json] = dict(node.get("properties", {}))
        required = list(node.get("required", []))
        name = ref_name(node)
        if name is not None:
            more, req = self.props(self.defs[name])
            props = more | props
            required = req + [r for r in required if r not in req]
        for part in node.get("allOf", []):
            more, req = self.props(part)
            props |= more
            required += [r for r in req if r not in required]
        return props, required

    def tagged(self, node: Json) -> tuple[str, list[tuple[str, Json]]] | None:
        """A tagged union: its tag and its members by the tag's value."""
        members = node.get("oneOf")
        if not members:
            return None
        tag = None
        out: list[tuple[str, Json]] = []
        for member in members:
            props, _ = self.props(member)
            consts = [k for k, s in props.items() if "const" in s]
            if len(consts) != 1:
                return None
            tag = consts[0]
            out.append((props[tag]["const"], member))
        return (tag, out) if tag else None

    # -- classes

    def class_of_def(self, name: str) -> str:
        """The class a definition is read into (built when first named)."""
        if name in self.def_class:
            return self.def_class[name]
        node = self.defs[name]
        members = node.get("oneOf", [])
        if len(members) == 1 and ref_name(members[0]):  # the one line of a union, tagged
            cls = self.class_of_def(ref_name(members[0]) or "")
        else:
            cls = NAMES.get(f"def:{name}", name)
            self.pending.append((name, cls))
        self.def_class[name] = cls
        return cls

    def build_pending(self) -> None:
        while self.pending:
            name, cls = self.pending.pop(0)
            if cls not in self.classes:
                self.make(cls, self.defs[name], set(), self.defs[name].get("description"))

    def make(
        self,
        cls: str,
        node: Json,
        skip: set[str],
        doc: str | None,
        *,
        extra: Json | None = None,
        rename_id: bool = False,
        base: str | None = None,
    ) -> Cls:
        props, required = self.props(node)
        if extra is not None:  # the union's own properties (a notice's message and level)
            more, req = self.props(extra)
            props |= {k: v for k, v in more.items() if k not in props}
            required += [r for r in req if r not in required]
        c = Cls(cls, DOCS.get(cls) or prose(doc or "") or f"The ``{cls}`` value.")
        c.base = base or BASES.get(cls)
        self.classes[cls] = c
        keys = [k for k in required if k in props] + sorted(k for k in props if k not in required)
        for index, key in enumerate(keys):
            if key in skip:
                continue
            name = RENAMES.get(f"{cls}.{key}") or RENAMES.get(key) or snake(key)
            if rename_id and key == "id":
                name = ACTION_ID
            own = extra is not None and key in extra.get("properties", {})
            c.fields.append(self.field(c, name, key, props[key], key in required, index + (1000 if own else 0)))
        for f in c.fields:  # a field placed after another one
            after = (FIELDS.get(f"{cls}.{f.name}") or {}).get("after")
            if after is not None:
                anchor = next(g for g in c.fields if g.name == after)
                f.order = (f.order[0], anchor.order[1] + 0.5, f.name)
        return c

    def field(self, c: Cls, name: str, key: str, schema: Json, required: bool, index: int) -> Field:
        spec = FIELDS.get(f"{c.name}.{name}") or {}
        if c.base == "Notice" and name in ("message", "level"):
            spec = FIELDS.get(f"{c.name}.{name}") or FIELDS.get(f"Notice.{name}") or {}
        plain = FIELDS.get(name, {})
        pytype, read, kind, nullable = self.type_of(schema)
        narrow = "type" in spec and kind == "Event"  # a narrower event: the reader says so
        if "type" in spec:
            pytype = spec["type"]
        elif "type" in plain and pytype == "str":
            pytype = plain["type"]
        read = spec.get("read", read)
        default = spec.get("default")
        if default is None and not spec.get("nodefault"):
            if c.name in EMPTY_DEFAULTS:
                default = self.empty(kind, pytype, nullable)
            elif not required:
                default = self.empty(kind, pytype, True)
        if not required and kind in ("array", "map"):
            read = read.replace("{v}", "{v} or " + ("()" if kind == "array" else "{}"))
        elif not required and not nullable and kind != "scalar":
            nullable = True
        if nullable or (not required and kind == "scalar"):
            if kind in ("class", "Event", "union"):
                read = self.maybe(read)
            nullable = True
        if nullable:
            pytype = f"{pytype} | None"
        if narrow:
            read = f'cast("{pytype}", {read})'
        value = f'd["{key}"]' if required else f'd.get("{key}")'
        desc = schema.get("description")
        order = spec.get("order")
        has_default = default is not None and not (default.startswith("field(") and "default" not in default)
        return Field(
            name=name,
            key=key,
            type=pytype,
            read=read.replace("{v}", value),
            required=required,
            default=default,
            doc=prose(desc) or None if desc else None,
            order=(int(has_default), order if order is not None else 100 + index, name),
        )

    @staticmethod
    def maybe(read: str) -> str:
        """`read` of a value that may be null or absent."""
        call = re.fullmatch(r"(cast\([^,]+, )?(\w+)\(\{v\}\)\)?", read)
        if call is None:
            raise SystemExit(f"gen_wire: cannot read {read!r} when null")
        inner = f"_maybe({call.group(2)}, {{v}})"
        return f"{call.group(1)}{inner})" if call.group(1) else inner

    @staticmethod
    def empty(kind: str, pytype: str, nullable: bool) -> str:
        if kind == "array":
            return "()"
        if kind == "map":
            return f"field(default_factory={pytype.split('[')[0]})"
        if nullable:
            return "None"
        return {"int": "0", "float": "0.0", "bool": "False", "str": '""'}.get(pytype, "None")

    def type_of(self, schema: Json) -> tuple[str, str, str, bool]:
        """(Python type, reader of {v}, kind, nullable) of a property's schema."""
        nullable = False
        members = schema.get("anyOf")
        if members:
            rest = [m for m in members if m.get("type") != "null"]
            nullable = len(rest) < len(members)
            if len(rest) == 1:
                schema = rest[0]
        kinds = schema.get("type")
        if isinstance(kinds, list):
            nullable = nullable or "null" in kinds
            kinds = [k for k in kinds if k != "null"]
            kinds = kinds[0] if len(kinds) == 1 else kinds
        name = ref_name(schema)
        if name is not None:
            node = self.defs[name]
            if name == "EventRef":
                return "Event", "read_event({v})", "Event", nullable
            consts = node.get("enum") or [m.get("const") for m in node.get("oneOf", [])]
            if consts and all(isinstance(c, str) for c in consts):  # a closed set of names
                alias = NAMES.get(f"def:{name}", name)
                self.literals[alias] = consts
                self.literal_docs[alias] = node.get("description", "")
                return alias, "{v}", "scalar", nullable
            if "examples" in node and node.get("type") == "string":
                self.kinds[name] = node["examples"]
                return f"{name} | str", f"_kind(_{upper(name)}, {{v}})", "scalar", nullable
            if node.get("type") == "string":
                return "str", "{v}", "scalar", nullable
            members = node.get("oneOf", [])
            if len(members) == 1 and ref_name(members[0]):  # the one line of a union, tagged
                cls = self.class_of_def(name)
                return cls, f"read_{snake(cls).lstrip('_')}({{v}})", "class", nullable
            union = self.tagged(node)
            if union is not None:
                alias = NAMES.get(f"def:{name}", name)
                self.union(alias, union)
                return alias, f"read_{snake(alias).lstrip('_')}({{v}})", "union", nullable
            cls = self.class_of_def(name)
            return cls, f"read_{snake(cls).lstrip('_')}({{v}})", "class", nullable
        if kinds == "array":
            items = schema.get("items", {})
            if "prefixItems" in items:
                parts = [self.type_of(p)[0] for p in items["prefixItems"]]
                names = ", ".join(f"x{i}" for i in range(len(parts)))
                return (
                    f"tuple[tuple[{', '.join(parts)}], ...]",
                    f"tuple(({names}) for {names} in {{v}})",
                    "array",
                    nullable,
                )
            inner, read, _, _ = self.type_of(items)
            each = "" if read == "{v}" else f"{read.replace('{v}', 'x')} for x in "
            return f"tuple[{inner}, ...]", f"tuple({each}{{v}})", "array", nullable
        if kinds == "object" and isinstance(schema.get("additionalProperties"), dict):
            inner, read, _, _ = self.type_of(schema["additionalProperties"])
            mapping = MAPPINGS.get(inner)
            body = f"{{k: {read.replace('{v}', 'x')} for k, x in {{v}}.items()}}"
            if mapping:
                return mapping, f"{mapping}({body})", "map", nullable
            return f"dict[str, {inner}]", body, "map", nullable
        scalar = {"integer": "int", "number": "float", "boolean": "bool", "string": "str"}
        if isinstance(kinds, str) and kinds in scalar:
            return scalar[kinds], "{v}", "scalar", nullable
        return "Any", "{v}", "scalar", nullable

    def union(self, alias: str, union: tuple[str, list[tuple[str, Json]]]) -> None:
        if alias in self.unions:
            return
        tag, members = union
        self.unions[alias] = (tag, [])
        built = self.variants(alias.lower(), tag, members)
        self.unions[alias] = (tag, built)

    def wrappers(self) -> None:
        """Definitions a union member wraps (`{"type":"stopped","stop":{…}}`) are
        that member's class wherever they appear."""
        unions = [("action", self.docs["action.json"]), ("item", self.docs["item.json"])]
        unions += [(name.lower(), node) for name, node in self.defs.items()]
        for where, node in unions:
            union = self.tagged(node)
            if union is None:
                continue
            tag, members = union
            for value, member in members:
                props, _ = self.props(member)
                rest = {k: s for k, s in props.items() if k != tag}
                wrapped = ref_name(next(iter(rest.values()))) if len(rest) == 1 else None
                if wrapped is not None and "properties" in self.defs[wrapped] and "oneOf" not in self.defs[wrapped]:
                    self.def_class[wrapped] = NAMES.get(f"{where}:{value}", pascal(value))

    def variants(self, where: str, tag: str, members: list[tuple[str, Json]], **kw: Any) -> list[tuple[str, str]]:
        """The classes of a tagged union's members, as (tag value, class)."""
        out: list[tuple[str, str]] = []
        for value, member in members:
            props, _ = self.props(member)
            rest = {k: s for k, s in props.items() if k != tag}
            cls = NAMES.get(f"{where}:{value}", pascal(value))
            wrapped = ref_name(next(iter(rest.values()))) if len(rest) == 1 else None
            if wrapped is not None and "properties" in self.defs[wrapped] and "oneOf" not in self.defs[wrapped]:
                # `{"type":"stopped","stop":{…}}`: a Stopped with the stop's fields
                self.def_class[wrapped] = cls
                self.wrapped[cls] = next(iter(rest))
                if cls not in self.classes:
                    self.make(cls, self.defs[wrapped], set(), self.defs[wrapped].get("description"))
            else:
                inner = ref_name(member)
                if inner is not None:
                    self.def_class[inner] = cls
                doc = member.get("description") or (self.defs[inner].get("description") if inner else None)
                self.make(cls, member, {tag}, doc, **kw)
            out.append((value, cls))
        return out


# ---- writing the module ----------------------------------------------------------------


HEAD = '''\
# Generated by python/gen_wire.py from schema/*.json: do not edit.
# Regenerate with scripts/regen-wire (the Rust types, then the schema, then this).
"""The values of the core's JSON lines and their readers (internal).

The public names are in ``onair.events`` and ``onair.actions``; the readers are
used through ``onair._json``. Behaviour the schema cannot say comes from
``onair._values``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, ClassVar, Literal, TypeVar, Union, cast

from ._values import (
    Notice,
    OtherAction,
    OtherEvent,
    People,
    _DoneMixin,
    _EndMixin,
    _FailedMixin,
    _Kind,
    _LikeMixin,
    _ProblemMixin,
    _RequestMixin,
    _StoppedMixin,
    _TallyMixin,
)

Json = dict[str, Any]
_T = TypeVar("_T")

'''

READERS_HEAD = '''

# ---- the readers -------------------------------------------------------------------------


def _maybe(read: Callable[[Any], _T], value: Any) -> _T | None:
    return None if value is None else read(value)


def _kind(known: dict[str, Any], value: str) -> Any:
    """A known value as its enum member; a newer one kept as its string."""
    return known.get(value, value)


# A frozen dataclass's __init__ sets each field through object.__setattr__ (~0.85 µs
# for a chat); a plain slots dataclass with the same fields sets them as attributes
# (~0.25 µs). So the events are built as their "twin" (the same slots, in the same
# order, on the same bases: the same memory layout) and then made what they are by
# assigning __class__, which CPython allows between classes of one layout. The result
# is the frozen class's instance, field for field what its constructor makes.


def _twin(cls: type) -> Any:
    """A plain slots dataclass with ``cls``'s fields in its order (the same layout)."""
    names = [f.name for f in fields(cls)]
    body = {"__annotations__": {n: Any for n in names}}
    twin: Any = dataclass(slots=True)(type(f"_{cls.__name__}Twin", cls.__bases__, body))
    assert twin.__slots__ == cls.__slots__, cls  # type: ignore[attr-defined]
    return twin


# Users repeat (a chatty person, the regulars): one shared immutable User per
# (id, nickname) saves an object per event. Bounded; a dict's get/set are atomic.
_USERS: dict[tuple[str, str | None], User] = {}
_USERS_MAX = 4096
_UserTwin = _twin(User)


def _new_user(key: tuple[str, str | None]) -> User:
    if len(_USERS) >= _USERS_MAX:
        _USERS.clear()
    found: Any = _UserTwin(*key)
    found.__class__ = User
    _USERS[key] = found
    return found  # type: ignore[no-any-return]


def read_user(u: Json) -> User:
    key = (u["id"], u["nickname"])
    return _USERS.get(key) or _new_user(key)
'''


def field_line(f: Field) -> str:
    line = f"    {f.name}: {f.type}"
    if f.default is not None:
        line += f" = {f.default}"
    out = line + "\n"
    if f.doc:
        out += docstring(f.doc, "    ")
    return out


def class_text(c: Cls) -> str:
    args = CLASS_ARGS.get(c.name, "")
    base = f"({c.base})" if c.base else ""
    out = f"\n\n@dataclass(frozen=True, slots=True{args})\nclass {c.name}{base}:\n"
    out += docstring(c.doc, "    ")
    if c.event:
        out += f'\n    NAME: ClassVar[str] = "{c.event}"\n'
    if c.fields:
        out += "\n"
    for f in sorted(c.fields, key=lambda f: f.order):
        out += field_line(f)
    return out


def reader_text(c: Cls) -> str:
    fn = f"read_{snake(c.name).lstrip('_')}"
    if not c.fields:
        return f"\n\n_{upper(snake(c.name).lstrip('_'))} = {c.name}()\n\n\ndef {fn}(d: Json) -> {c.name}:\n    return _{upper(snake(c.name).lstrip('_'))}\n"
    args = ",\n        ".join(f.read for f in sorted(c.fields, key=lambda f: f.order))
    return f"\n\ndef {fn}(d: Json) -> {c.name}:\n    return {c.name}(\n        {args},\n    )\n"


def event_reader(c: Cls, extra_params: str) -> str:
    """An event payload's fast reader: its twin, the user inlined; the line's own
    fields (``extra_params``) given by the caller."""
    lines = [
        f"\n\n_{c.name}Twin = _twin({c.name})\n\n\n"
        f"def _{snake(c.name).lstrip('_')}(d: Json, id: str | None{extra_params}) -> {c.name}:\n"
    ]
    args = []
    user_inlined = False
    for f in sorted(c.fields, key=lambda f: f.order):
        if f.key is None or f.key.startswith("@"):
            args.append(f.name)
        elif f.type == "User" and not user_inlined:
            lines.append(f'    u = d["{f.key}"]\n    key = (u["id"], u["nickname"])\n')
            args.append("_USERS.get(key) or _new_user(key)")
            user_inlined = True
        elif f.read.startswith("_kind("):
            table = f.read.split("(", 1)[1].split(",", 1)[0]
            var = f"v_{f.name}"
            lines.append(f'    {var}: str = d["{f.key}"]\n')
            args.append(f"{table}.get({var}, {var})")
        else:
            args.append(f.read)
    lines.append(f"    e: Any = _{c.name}Twin({', '.join(args)})\n")
    lines.append(f"    e.__class__ = {c.name}\n    return e  # type: ignore[no-any-return]\n")
    return "".join(lines)


def reader(where: str, value: str, cls: str, wrapped: dict[str, str]) -> str:
    if cls in wrapped:
        return f"_{snake(where).lstrip('_')}_{snake(value)}"
    return f"read_{snake(cls).lstrip('_')}"


def wrapper(where: str, value: str, cls: str, key: str) -> str:
    """The reader of a line whose one property holds the class's fields."""
    return (
        f"\n\ndef {reader(where, value, cls, {cls: key})}(d: Json) -> {cls}:\n"
        f"    return read_{snake(cls).lstrip('_')}(d[\"{key}\"])\n"
    )


def generate(root: Path = SCHEMA) -> str:
    s = Schema(root)
    s.wrappers()
    action, item = s.docs["action.json"], s.docs["item.json"]

    # The values inside, in a reading order: the user, the events, then the rest.
    s.class_of_def("User")
    s.build_pending()
    events: list[tuple[str, str]] = []
    for member in s.defs["Event"]["anyOf"]:
        name = ref_name(member) or ""
        mark = re.fullmatch(r"`(\w+)`", member.get("description", ""))
        wire = mark.group(1) if mark else name.lower()
        cls = s.class_of_def(name)
        s.build_pending()
        s.classes[cls].event = wire
        s.classes[cls].fields.append(
            Field("id", None, "str | None", "id", False, "None", FRAME_ID_DOC, (1, 10_000, "id"))
        )
        events.append((wire, cls))
    event_classes = [cls for _, cls in events]

    # The action's event line may carry fields of its own beside the event's
    # (a donation's `replyKind`): each event class takes them, compared by
    # nobody (the same event read from the decoder equals it), read from the
    # line by read_event and absent (None) from an item line.
    envelope: list[Field] = []
    for _, member in s.tagged(action)[1]:  # type: ignore[index]
        props, _ = s.props(member)
        if "data" not in props or ref_name(props["data"]) != "Event":
            continue
        for key, node in props.items():
            if key in ("type", "event", "id", "data"):
                continue
            pytype, _read, _kind, _null = s.type_of(node)
            desc = node.get("description")
            envelope.append(
                Field(
                    snake(key), f"@{key}", f"{pytype} | None", snake(key), False,
                    "field(default=None, compare=False)",
                    prose(desc) or None if desc else None, (1, 10_001 + len(envelope), snake(key)),
                )
            )
    for cls in event_classes:
        s.classes[cls].fields.extend(Field(**vars(f)) for f in envelope)
    # The event readers' extra arguments: (parameter, what read_event passes, what an item line passes).
    extra_params = "".join(f", {f.name}: {f.type}" for f in envelope)
    from_line = "".join(f', line.get("{(f.key or "@")[1:]}")' for f in envelope)
    from_item = ", None" * len(envelope)

    def dispatch(
        where: str, tag: str, members: list[tuple[str, Json]], **kw: Any
    ) -> tuple[list[tuple[str, str]], str | None]:
        out: list[tuple[str, str]] = []
        special: str | None = None
        for value, member in members:
            props, _ = s.props(member)
            data = props.get("data")
            if data is not None and ref_name(data) == "Event":
                out.append((value, "<event>"))
                continue
            rest = {k: v for k, v in props.items() if k != tag}
            inner = ref_name(next(iter(rest.values()))) if len(rest) == 1 else None
            nested = s.tagged(s.defs[inner]) if inner is not None else None
            if inner is not None and nested is not None:
                special = value
                key = next(iter(rest))
                classes = s.variants(value, nested[0], nested[1], extra=s.defs[inner], base="Notice")
                out.append((value, f"<{key}>"))
                s.unions[value] = (nested[0], classes)
                continue
            out.extend(s.variants(where, tag, [(value, member)], **kw))
        s.build_pending()
        return out, special

    items, _ = dispatch("item", "type", s.tagged(item)[1])  # type: ignore[index]
    actions, notice_tag = dispatch("action", "type", s.tagged(action)[1], rename_id=True)  # type: ignore[index]
    for _, cls in EXTRA:
        s.class_of_def(cls)
    s.build_pending()

    # A notice's message and level come last (the notice's base properties).
    for _, cls in s.unions.get(notice_tag or "", ("", []))[1]:
        for f in s.classes[cls].fields:
            if f.key in ("message", "level"):
                f.order = (1, 5000 + f.order[1], f.name)

    out = [HEAD]
    for name, values in s.literals.items():
        out.append(f"{name} = Literal[{', '.join(json.dumps(v) for v in values)}]\n")
        doc = DOCS.get(name) or prose(s.literal_docs.get(name, ""))
        if doc:
            out.append(docstring(doc, ""))
        if name in VALUE_TUPLES:
            out.append(f"{VALUE_TUPLES[name]}: tuple[{name}, ...] = ({', '.join(json.dumps(v) for v in values)},)\n")
    for name, values in s.kinds.items():
        doc = DOCS.get(name) or prose(s.defs[name].get("description", "")) or f"``{name}``."
        out.append(f"\n\nclass {name}(_Kind):\n{docstring(doc, '    ')}\n")
        out.extend(f'    {upper(v)} = "{v}"\n' for v in values)
    for c in s.classes.values():
        out.append(class_text(c))

    # The unions.
    notices = s.unions.get(notice_tag or "", ("", []))[1]
    out.append("\n\nEvent = Union[" + ", ".join(event_classes + ["OtherEvent"]) + "]\n")
    out.append('"""A typed service event."""\n\n')
    out.append("EVENT_TYPES: tuple[type, ...] = (" + ", ".join(event_classes + ["OtherEvent"]) + ")\n\n")
    item_classes = [c for _, c in items if not c.startswith("<")]
    out.append("Item = Union[" + ", ".join(event_classes + ["OtherEvent"] + item_classes) + "]\n")
    out.append('"""Anything the decoder takes from a stream."""\n')
    for alias, (_, members) in s.unions.items():
        if alias == notice_tag:
            continue
        out.append(f"\n{alias} = Union[" + ", ".join(c for _, c in members) + "]\n")
    action_classes: list[str] = []
    for _, cls in actions:
        if cls == "<event>":
            action_classes += event_classes
        elif cls.startswith("<"):
            action_classes += [c for _, c in notices]
        else:
            action_classes.append(cls)
    out.append("\nAction = Union[\n    " + ",\n    ".join(action_classes + ["OtherAction"]) + ",\n]\n")
    out.append('"""Everything ``Bot.poll`` returns (an ``OtherEvent`` comes as itself too)."""\n')
    public = [*s.literals, *s.kinds, *s.classes, "Event", "EVENT_TYPES", "Item", *s.unions, "Action"]
    public = sorted(set(public) - {notice_tag or ""})
    out.append("\n__all__ = [\n" + "".join(f'    "{name}",\n' for name in public) + "]\n")

    # The readers.
    out.append(READERS_HEAD)
    for name in s.kinds:
        out.append(f"\n_{upper(name)}: dict[str, {name} | str] = {{m.value: m for m in {name}}}\n")
    for c in s.classes.values():
        if c.name == "User":
            continue
        out.append(event_reader(c, extra_params) if c.event else reader_text(c))
    arg_types = "".join(f", {f.type}" for f in envelope)
    out.append(f"\n\n_EVENTS: dict[str, Callable[[Json, str | None{arg_types}], Event]] = {{\n")
    out.extend(f'    "{wire}": _{snake(cls).lstrip("_")},\n' for wire, cls in events)
    out.append("}\n")
    out.append(f'''

def read_event(line: Json) -> Event:
    """An event line (``{{"event","id","data"}}``, with or without ``type``)."""
    name = line["event"]
    read = _EVENTS.get(name)
    if read is None:
        return OtherEvent(name, line["data"], line["id"])
    return read(line["data"], line["id"]{from_line})
''')
    for alias, (tag, members) in s.unions.items():
        if alias == notice_tag:
            continue
        fn = f"read_{snake(alias).lstrip('_')}"
        table = f"_{upper(snake(alias).lstrip('_'))}S"
        for v, name in members:
            if name in s.wrapped:
                out.append(wrapper(alias, v, name, s.wrapped[name]))
        out.append(f"\n\n{table}: dict[str, Callable[[Json], {alias}]] = {{\n")
        out.extend(f'    "{v}": {reader(alias, v, c, s.wrapped)},\n' for v, c in members)
        out.append("}\n")
        last = members[-1][1]
        out.append(
            f"\n\ndef {fn}(d: Json) -> {alias}:\n"
            f'    """A ``{alias}`` by its ``{tag}`` (one this package does not know read as ``{last}``)."""\n'
            f"    return {table}.get(d[\"{tag}\"], read_{snake(last).lstrip('_')})(d)\n"
        )
    out.append("\n\n_ITEMS: dict[str, Callable[[Json], Item]] = {\n")
    for value, cls in items:
        fn = "read_event" if cls == "<event>" else f"read_{snake(cls).lstrip('_')}"
        out.append(f'    "{value}": {fn},\n')
    out.append("}\n")
    out.append(f'''

def read_item(line: Json) -> Item:
    """A typed item line (``onair decode``'s)."""
    t = line["type"]
    read = _ITEMS.get(t)
    if read is None:
        raise ValueError(f"an item line of a type this package does not know: {{t!r}}")
    return read(line)


def read_items(lines: list[Json]) -> list[Item]:
    """A batch of item lines; events (the common case) without a second lookup."""
    events = _EVENTS
    out: list[Item] = []
    append = out.append
    for line in lines:
        if line["type"] == "event":
            read = events.get(line["event"])
            append(OtherEvent(line["event"], line["data"], line["id"]) if read is None else read(line["data"], line["id"]{from_item}))
        else:
            append(read_item(line))
    return out
''')
    if notice_tag:
        tag, members = s.unions[notice_tag]
        key = next(c for v, c in actions if v == notice_tag)[1:-1]
        out.append("\n\n_NOTICES: dict[str, Callable[[Json], Action]] = {\n")
        out.extend(f'    "{v}": read_{snake(c).lstrip("_")},\n' for v, c in members)
        out.append("}\n")
        out.append(
            f"\n\ndef _action_{notice_tag}(a: Json) -> Action:\n"
            f'    n = a["{key}"]\n'
            f'    read = _NOTICES.get(n["{tag}"])\n'
            "    return OtherAction(a) if read is None else read(n)\n"
        )
    out.append("\n\n_ACTIONS: dict[str, Callable[[Json], Action | OtherEvent]] = {\n")
    wrappers: list[str] = []
    for value, cls in actions:
        if cls == "<event>":
            out.append(f'    "{value}": read_event,\n')
        elif cls.startswith("<"):
            out.append(f'    "{value}": _action_{value},\n')
        else:
            if cls in s.wrapped:
                wrappers.append(wrapper("action", value, cls, s.wrapped[cls]))
            out.append(f'    "{value}": {reader("action", value, cls, s.wrapped)},\n')
    out.append("}\n")
    # The wrappers are defined before the table that names them.
    table_at = next(i for i, part in enumerate(out) if part.startswith("\n\n_ACTIONS:"))
    out[table_at:table_at] = wrappers
    out.append('''

def read_action(a: Json) -> Action | OtherEvent:
    """An action line (``ActionJson``)."""
    read = _ACTIONS.get(a["type"])
    return OtherAction(a) if read is None else read(a)
''')
    text = "".join(out)
    return re.sub(r"\n{4,}", "\n\n\n", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {TARGET.relative_to(ROOT)} is stale")
    parser.add_argument("--stdout", action="store_true", help="print the module instead of writing it")
    args = parser.parse_args()
    text = generate()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if not TARGET.exists() or TARGET.read_text() != text:
        TARGET.write_text(text)
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
