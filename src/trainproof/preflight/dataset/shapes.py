"""Where a record's text is: the known record shapes (chat, ShareGPT, prompt/completion, Alpaca,
Dolly, text) and a ``--text-field`` path, each giving the text encoded, the trained part and
what duplicates are compared on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ASSISTANT = {"assistant", "gpt", "model", "bot", "chatbot"}
_SHAREGPT_ROLE = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
    "function_call": "assistant",
    "observation": "tool",
}


def _as_text(v: Any) -> str | None:
    """A field's text: a string, null (empty), or a list of strings / message parts; else None."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = []
        for x in v:
            if isinstance(x, str):
                parts.append(x)
            elif isinstance(x, dict):
                t = x.get("content", x.get("text", x.get("value")))
                t = _as_text(t)
                if t is None:
                    return None
                parts.append(t)
            else:
                return None
        return "\n".join(parts)
    return None


@dataclass
class Sample:
    """One record's text: what is encoded, the trained part, the duplicate key and, for chat
    records, the messages as ``[{role, content}]``."""

    full: str  # what is encoded
    target: str  # the trained part (judged for emptiness)
    key: str  # what duplicates are compared on
    messages: list | None = None  # normalised chat messages, for a chat template


@dataclass(frozen=True)
class Shape:
    """A known record shape: its name, the fields it reads and the keys a record must have."""

    name: str
    fields: str
    required: tuple[str, ...]

    def matches(self, obj: dict) -> bool:
        return all(k in obj for k in self.required)

    def extract(self, obj: dict) -> Sample | str:
        """The record's text, or why there is none (``missing`` / ``not text``)."""
        if not self.matches(obj):
            return "missing"
        if self.name in ("chat", "sharegpt"):
            return _chat(obj[self.required[0]], sharegpt=self.name == "sharegpt")
        if self.name == "text":
            t = _as_text(obj["text"])
            return "not text" if t is None else Sample(t, t, t)
        if self.name == "prompt/completion":
            p, c = _as_text(obj["prompt"]), _as_text(obj["completion"])
            if p is None or c is None:
                return "not text"
            return Sample(p + c, c, p + "\x1f" + c)
        first, opt, last = {
            "alpaca": ("instruction", "input", "output"),
            "dolly": ("instruction", "context", "response"),
        }[self.name]
        a, b, c = _as_text(obj[first]), _as_text(obj.get(opt)), _as_text(obj[last])
        if a is None or b is None or c is None:
            return "not text"
        return Sample("\n\n".join(x for x in (a, b, c) if x), c, "\x1f".join((a, b, c)))


def _chat(msgs: Any, sharegpt: bool) -> Sample | str:
    if not isinstance(msgs, list):
        return "not text"
    norm = []
    for m in msgs:
        if not isinstance(m, dict):
            return "not text"
        role = m.get("from" if sharegpt else "role")
        content = _as_text(m.get("value" if sharegpt else "content"))
        if content is None:
            return "not text"
        role = str(role) if role is not None else ""
        if sharegpt:
            role = _SHAREGPT_ROLE.get(role, role)
        norm.append({"role": role, "content": content})
    said = [m["content"] for m in norm if m["role"] in _ASSISTANT]
    target = "\n".join(said if said else [m["content"] for m in norm])
    full = "\n".join(m["content"] for m in norm)
    key = "\x1e".join(f"{m['role']}\x1f{m['content']}" for m in norm)
    return Sample(full, target, key, norm)


SHAPES = (
    Shape("chat", "messages[].content", ("messages",)),
    Shape("sharegpt", "conversations[].value", ("conversations",)),
    Shape("prompt/completion", "prompt + completion", ("prompt", "completion")),
    Shape("alpaca", "instruction + input + output", ("instruction", "output")),
    Shape("dolly", "instruction + context + response", ("instruction", "response")),
    Shape("text", "text", ("text",)),
)

MISSING = object()


def resolve(obj: Any, path: str) -> tuple[Any, int, Any]:
    """``(value or MISSING, parts resolved, the container at the deepest part reached)``."""
    if isinstance(obj, dict) and path in obj:
        return obj[path], len(path.split(".")), obj
    cur = obj
    parts = path.split(".")
    for i, p in enumerate(parts):
        if isinstance(cur, dict) and p in cur:
            nxt = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            nxt = cur[int(p)]
        else:
            return MISSING, i, cur
        cur = nxt
    return cur, len(parts), None


@dataclass(frozen=True)
class FieldShape:
    """The ``--text-field`` shape: a key or dotted path (``data.body``, ``turns.0.text``)."""

    path: str
    name: str = "text-field"

    @property
    def fields(self) -> str:
        return self.path

    def matches(self, obj: dict) -> bool:
        return resolve(obj, self.path)[0] is not MISSING

    def extract(self, obj: dict) -> Sample | str:
        v = resolve(obj, self.path)[0]
        if v is MISSING:
            return "missing"
        if isinstance(v, list) and v and all(isinstance(m, dict) and "role" in m for m in v):
            return _chat(v, sharegpt=False)
        t = _as_text(v)
        return "not text" if t is None else Sample(t, t, t)
