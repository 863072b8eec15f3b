"""The hand-written part of the values: what the schema cannot say.

``_wire`` (generated from ``schema/*.json`` by ``python/gen_wire.py``) defines the
value classes and their readers; a class that needs behaviour takes it in from a
mixin here (``__slots__ = ()``, so the generated class keeps its layout), and the
names of fixed strings the schema types as plain strings are here. Internal: the
public names are in ``onair.actions`` and ``onair.events``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol


class PersonTotals(Protocol):
    """One person's totals in a broadcast, as read here (``onair._wire.PersonTotals``
    is the class; this module names only what it reads, so it imports nothing
    from the generated module)."""

    @property
    def nickname(self) -> str | None: ...
    @property
    def hearts(self) -> int: ...
    @property
    def paid_hearts(self) -> int: ...
    @property
    def donated(self) -> int: ...
    @property
    def donations(self) -> int: ...
    @property
    def joins(self) -> int: ...
    @property
    def chats(self) -> int: ...



class _Kind(str, Enum):
    """A ``str`` enum whose ``str()`` and format are its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


# ---- behaviour the generated classes take in ------------------------------------------


class _LikeMixin:
    __slots__ = ()
    type: str

    @property
    def is_paid(self) -> bool:
        """Bought with the paid currency (``type == "PAID"``)."""
        return self.type == "PAID"


class _EndMixin:
    __slots__ = ()
    reason: str

    @property
    def is_live_ended(self) -> bool:
        """The broadcast is over (``LIVE_ENDED``)."""
        return self.reason == "LIVE_ENDED"


class _ProblemMixin:
    __slots__ = ()
    kind: str

    @property
    def is_ok(self) -> bool:
        return self.kind == "ok"


class _RequestMixin:
    """A request's ``repr`` names the headers and hides their values and the body."""

    __slots__ = ()
    endpoint: str
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        names = ", ".join(n for n, _ in self.headers)
        return (
            f"Request(endpoint={self.endpoint!r}, method={self.method!r}, url={self.url!r}, "
            f"headers=[{names}: <redacted>], body=<{len(self.body)} bytes redacted>)"
        )


class _StoppedMixin:
    __slots__ = ()
    code: str

    @property
    def resumes_with_new_consent(self) -> bool:
        return self.code == "reauthorize"


class _DoneMixin:
    __slots__ = ()
    result: object

    @property
    def ok(self) -> bool:
        return not getattr(self.result, "FAILED", False)


class _FailedMixin:
    __slots__ = ()
    FAILED: ClassVar[bool] = True
    """A call result that is a failure (``Done.ok`` is false)."""


class _TallyMixin:
    __slots__ = ()
    hearts: int
    donated: int
    attendance: int
    people: People

    def donors(self) -> list[tuple[str, PersonTotals]]:
        """Donors, highest total first (ties by id, so the order is stable)."""
        found = [(pid, p) for pid, p in self.people.items() if p.donated > 0]
        return sorted(found, key=lambda item: (-item[1].donated, item[0]))

    def to_dict(self) -> dict[str, Any]:
        """The core's JSON form (``TallyJson``): ``{"hearts","donated","attendance","people"}``."""
        return {
            "hearts": self.hearts,
            "donated": self.donated,
            "attendance": self.attendance,
            "people": {
                pid: {
                    "nickname": p.nickname,
                    "hearts": p.hearts,
                    "paidHearts": p.paid_hearts,
                    "donated": p.donated,
                    "donations": p.donations,
                    "joins": p.joins,
                    "chats": p.chats,
                }
                for pid, p in self.people.items()
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


class Notice:
    """Worth a log line, needs no action (every notice class derives from it).

    Every notice carries ``message`` (its log line, as the core words it) and
    ``level`` (``"warn"``: something was lost, refused or cannot be reached;
    ``"info"``: the bot handling things as it should), so a notice of any kind
    is logged by printing its ``message`` at its ``level``."""

    __slots__ = ()


# ---- values the schema has no class for -----------------------------------------------


class People(Mapping[str, "PersonTotals"]):
    """A read-only mapping of person id to totals, in id order; hashable."""

    __slots__ = ("_d",)

    def __init__(self, people: Mapping[str, PersonTotals] | None = None) -> None:
        self._d: dict[str, PersonTotals] = dict(sorted((people or {}).items()))

    def __getitem__(self, key: str) -> PersonTotals:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, People):
            return self._d == other._d
        return NotImplemented

    def __repr__(self) -> str:
        return f"People({self._d!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (People, (self._d,))


@dataclass(frozen=True, slots=True)
class OtherEvent:
    """An event kind newer than this package: its name and the core's JSON payload."""

    name: str
    data: Any
    id: str | None = None


@dataclass(frozen=True, slots=True)
class OtherAction:
    """An action newer than this package: its JSON form."""

    json: Any
