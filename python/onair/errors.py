"""Exceptions: every libonair result code as a typed exception with a kind and advice.

``OnairError.kind`` is the code's stable name (``"chat_too_long"``…),
``.advice`` says what to do, ``.code`` is the C result number. No exception
text ever holds a token: messages come from the library, which keeps secrets
out of them.
"""

from __future__ import annotations

from . import _ffi

# code: (kind, advice). Names and advice for the caller's own mistakes (the
# advice empty where the library's message says what to do already); the
# service's problems (kinds and advice from the core) come as `Problem` values.
_CODES: dict[int, tuple[str, str]] = {
    1: ("null_parameter", ""),
    2: ("invalid_utf8", ""),
    3: ("panic", "report the bug"),
    4: ("invalid_base_url", ""),
    5: ("invalid_credentials", "use the app's client id (a UUID) and a non-empty secret"),
    6: ("invalid_tokens", "start without the file and re-authorize"),
    7: ("unknown_request", "report only request ids the bot gave you"),
    8: ("not_a_stream", "use on_response for SEND and the stream calls for OPEN_STREAM"),
    9: ("stream_not_started", "call on_stream_open before on_stream_bytes"),
    10: ("misuse", "follow the bot's driver contract"),
    11: ("chat_empty", ""),
    12: ("chat_too_long", "split it first (onair.split_chat; say() splits)"),
    15: ("no_tokens", "authorize the bot first"),
    16: ("unknown_endpoint", "use one of the core's endpoint names (token, chat, events, …)"),
    17: ("invalid_argument", ""),
    18: ("bad_tag", "use a short tag without control characters"),
    19: ("too_many_timers", "cancel a timer first"),
    20: ("invalid_state", "start without it"),
    21: ("no_event", "pass an event from a decoder or a bot"),
    22: ("out_of_range", "use an index below the length"),
    23: ("no_current", "poll or take an item first"),
    24: ("busy", "serialize calls on it (the package's objects do)"),
    25: ("invalid_kit_config", ""),
    26: ("kit_state_too_new", "upgrade onair, or start without it"),
    27: ("no_kit", "configure a kit (Config(kit=...))"),
    28: ("invalid_client_id", "use the app's client id as the service issued it"),
    29: ("invalid_client_secret", ""),
    30: ("invalid_handle", "a bug in the package: report it"),
    31: ("freed_handle", "make a new one"),
    32: ("too_many_handles", "close objects you no longer use"),
}


class OnairError(Exception):
    """A libonair call failed. ``kind``: the code's name; ``advice``: what to do
    (empty when the message says it). The text is the message, then the advice:
    ``the saved tokens did not load: … : start without the file and re-authorize``."""

    code: int
    kind: str
    advice: str

    def __init__(self, code: int, detail: str | None = None) -> None:
        self.code = code
        self.kind, self.advice = _CODES.get(code, ("unknown", "see the message"))
        base = (_ffi.lib.onair_result_message(code) or b"").decode("utf-8", "replace")
        self.detail = detail or ""
        msg = f"{base}: {detail}" if detail and detail != base else base
        # The kind is `.kind`; the advice is said only where the message does
        # not say it already.
        super().__init__(f"{msg}: {self.advice}" if self.advice else msg)


class MisuseError(OnairError):
    """The caller broke the API's contract (a local error, never the server's)."""


class ChatRejected(OnairError):
    """The chat message was not queued (empty, or over 200 UTF-16 units)."""


class InvalidConfig(OnairError):
    """The base URL, credentials or saved token file were refused."""


class KitConfigError(InvalidConfig):
    """The kit configuration was refused: ``key`` says where (``commands[1].name``,
    empty for the whole document), ``message`` what is wrong there."""

    def __init__(self, code: int, key: str, message: str) -> None:
        where = f"kit config: {key}: " if key else "kit config: "
        super().__init__(code, where + message)
        self.key = key
        self.message = message


class StoreError(InvalidConfig):
    """What a store holds could not be loaded at the start: ``what`` is ``"tokens"``
    or ``"state"``, ``where`` names the store (a ``FileStore``'s path), ``problem``
    what is wrong, ``advice`` what to do; ``kind`` is ``invalid_tokens``,
    ``invalid_state`` or ``kit_state_too_new``. Its text is one line that says all
    of it, and never holds what the store holds (it may be a secret)."""

    def __init__(self, code: int, what: str, where: str, problem: str) -> None:
        super().__init__(code, problem)
        self.what = what
        self.where = where
        self.problem = problem
        if code == 26:
            self.advice = "upgrade onair, or move the file away and start again (the bot then counts the broadcast from now)"
        elif what == "tokens":
            self.advice = "move the file away (or restore a good copy) and authorize the bot again with a new consent code"
        else:
            self.advice = (
                "move the file away (or restore a good copy) and start again"
                " (the bot then counts the broadcast from now and may greet people again)"
            )
        saved = "the saved token pair" if what == "tokens" else "the saved kit state"
        self.args = (f"{where}: {saved} does not load: {problem}; {self.advice}",)

    def __str__(self) -> str:
        return str(self.args[0])


class ClosedError(ValueError):
    """The object was closed (``close()``, ``with``): its libonair handle is gone."""


class ReentrantCallError(RuntimeError):
    """A method was called while the same thread is inside a call on the same object.

    That happens in a signal handler that interrupted a call: there, call only
    ``close()`` or ``Bot.shutdown()`` (they take effect when the interrupted
    call returns), or set a flag and act on it in the loop.
    """


_CLASSES: dict[int, type[OnairError]] = {
    4: InvalidConfig,
    5: InvalidConfig,
    6: InvalidConfig,
    28: InvalidConfig,
    29: InvalidConfig,
    7: MisuseError,
    8: MisuseError,
    9: MisuseError,
    10: MisuseError,
    11: ChatRejected,
    12: ChatRejected,
    23: MisuseError,
}


def error(code: int, detail: str | None = None) -> OnairError:
    """The exception for a result code."""
    return _CLASSES.get(code, OnairError)(code, detail)


def check(code: int) -> None:
    if code:
        raise error(code)
