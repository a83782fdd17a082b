"""``trainproof dataset DATASET...`` (formerly ``trainproof preflight``): is this training data usable, before the run starts?

The dataset is a file of JSON records: JSON Lines (``.jsonl``, streamed line by line, never
read as one string), a ``.json`` array (parsed whole), either of them gzip-compressed
(recognised by its magic bytes, e.g. ``.jsonl.gz``). A ``.json`` file whose first line is a
complete object is read as JSON Lines (``datasets.Dataset.to_json`` writes that). Record
indices are 0-based, as ``dataset[i]`` addresses them; line numbers are 1-based lines of the
(decompressed) file.

**Where the text is.** The first record that has one of these shapes decides the shape of
the dataset (in this order; ``--text-field`` overrides them):

=================  =============================================  =========================
shape              fields                                         trained part (emptiness)
=================  =============================================  =========================
chat               ``messages: [{role, content}]``                assistant messages
sharegpt           ``conversations: [{from, value}]``             ``gpt`` messages
prompt/completion  ``prompt``, ``completion``                     ``completion``
alpaca             ``instruction``, ``input`` (optional), ``output``  ``output``
dolly              ``instruction``, ``context`` (optional), ``response``  ``response``
text               ``text``                                       ``text``
text-field         ``--text-field`` (dotted path: ``data.body``)  the value
=================  =============================================  =========================

A chat record with no assistant message is judged on all its messages. Records of another
shape count as missing their text (TP-PRE-EMPTY-TEXT). The shape is in the report's
``meta.shape`` and in a note of the text output.

**Token lengths** (``--tokenizer``) are those of the text encoded with
``add_special_tokens=True``, as a trainer's tokenising map does: prompt and completion are
concatenated, Alpaca/Dolly fields are joined by blank lines, chat records are rendered with
the tokenizer's chat template when it has one (then encoded with
``add_special_tokens=False``, the template writes its own markers), else their contents
are joined by newlines. A prompt template of your own adds tokens, so lengths are lower
bounds (``meta.tokens.length_basis``).

**How EOS, pad and BOS are determined.**

* A directory, with ``transformers`` installed: ``AutoTokenizer.from_pretrained(dir,
  local_files_only=True)``; its ``eos_token`` / ``pad_token`` / ``bos_token`` are what the
  training script will see (from tokenizer_config.json and special_tokens_map.json).
  A name that is not a local path is looked up the same way in the local Hugging Face
  cache only; nothing is ever downloaded.
* A ``tokenizer.json`` (or a directory when ``transformers`` is not installed):
  ``tokenizers.Tokenizer.from_file``. A tokenizer.json does not say which token plays
  which role, so each role comes from the first of these that names one (the source is
  reported in ``meta.tokenizer.special``):

  1. ``special_tokens_map.json``, then ``tokenizer_config.json``, next to the file
     (``eos_token`` / ``pad_token`` / ``bos_token``, a string or an AddedToken dict; the
     first file wins, as in transformers' loader);
  2. pad only: the padding the tokenizer.json itself enables (``padding.pad_token``);
  3. the post-processor: encoding a probe text with and without special tokens, the last
     token it appends is the EOS and the first one it prepends is the BOS;
  4. a well-known name present in the vocabulary (:data:`EOS_NAMES`, :data:`PAD_NAMES`,
     :data:`BOS_NAMES`).

  A role named by a config file but absent from the vocabulary counts as missing. Roles
  found only by 3 or 4 are unknown to a script that loads the file with
  ``PreTrainedTokenizerFast(tokenizer_file=...)`` unless it passes them; the note says so.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, Level, Skip
from . import finding, report

#: How many line numbers, record indices or pairs a finding lists (presentation only).
SHOW = 10
#: How many distinct keys TP-PRE-NO-TEXT-FIELD lists (presentation only).
KEYS_SHOWN = 30
#: Distinct keys counted at most (memory bound for records with data-like keys).
_KEYS_TRACKED = 10_000
#: Records encoded per tokenizer call.
_BATCH = 512
HF_EXTRA = 'pip install "trainproof[hf]"'
PROBE = "Hello world, this is a probe."

EOS_NAMES = ("</s>", "<eos>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "[EOS]")
PAD_NAMES = ("<pad>", "[PAD]", "<|pad|>", "<|padding|>", "<|finetune_right_pad_id|>")
BOS_NAMES = ("<s>", "<bos>", "<|begin_of_text|>", "<|startoftext|>", "[BOS]")


ALL_IDS = (
    "TP-PRE-MALFORMED-JSONL",
    "TP-PRE-EMPTY-TEXT",
    "TP-PRE-DUPLICATE-TEXT",
    "TP-PRE-NO-TEXT-FIELD",
    "TP-PRE-MISSING-EOS-TOKEN",
    "TP-PRE-MISSING-PAD-TOKEN",
    "TP-PRE-PAD-EQUALS-EOS",
    "TP-PRE-NO-EOS-APPEND",
    "TP-PRE-BOS-TOKEN-INFO",
    "TP-PRE-CONTEXT-OVERFLOW",
    "TP-PRE-CONTEXT-CHECK-SKIPPED",
    "TP-PRE-OK",
)
_DATA_IDS = ("TP-PRE-EMPTY-TEXT", "TP-PRE-DUPLICATE-TEXT")
_TOK_IDS = (
    "TP-PRE-MISSING-EOS-TOKEN",
    "TP-PRE-MISSING-PAD-TOKEN",
    "TP-PRE-PAD-EQUALS-EOS",
    "TP-PRE-NO-EOS-APPEND",
    "TP-PRE-BOS-TOKEN-INFO",
    "TP-PRE-CONTEXT-OVERFLOW",
)


class DatasetError(Exception):
    """The dataset cannot be read at all (missing, not JSON, empty): exit 2."""


class TokenizerError(Exception):
    """The tokenizer cannot be loaded (not local, no [hf] extra, broken files): exit 2."""


# --- reading -----------------------------------------------------------------------------


@dataclass
class _Bad:
    """Malformed lines / elements: count and the first few."""

    count: int = 0
    where: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    unit: str = "line"

    def add(self, where: int, reason: str) -> None:
        self.count += 1
        if len(self.where) < SHOW:
            self.where.append(where)
            self.reasons.append(reason)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _open(path: Path, gz: bool):
    return gzip.open(path, "rb") if gz else open(path, "rb")


def _first_byte(path: Path, gz: bool) -> bytes:
    """The first byte that is not whitespace (after a UTF-8 BOM), or b'' for an empty file."""
    with _open(path, gz) as f:
        start = True
        while True:
            chunk = f.read(65536)
            if not chunk:
                return b""
            if start and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            start = False
            s = chunk.lstrip()
            if s:
                return s[:1]


def _json_reason(e: json.JSONDecodeError) -> str:
    return f"invalid JSON: {e.msg} (column {e.colno})"


def _kind(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(v), "a number")


@dataclass
class _Source:
    """How a dataset file is read: its container and where its records come from."""

    path: Path
    gz: bool
    container: str  # jsonl | json
    notes: list[str] = field(default_factory=list)
    blank: int = 0

    @property
    def label(self) -> str:
        return self.container + (".gz" if self.gz else "")

    def rows(self, bad: _Bad) -> Iterator[tuple[int, int | None, dict]]:
        """Yield ``(index, line, record)`` for every record that is a JSON object."""
        if self.container == "json":
            yield from self._array(bad)
            return
        idx = 0
        with _open(self.path, self.gz) as f:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if not raw.strip():
                    self.blank += 1
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    bad.add(lineno, "not UTF-8")
                    continue
                except json.JSONDecodeError as e:
                    bad.add(lineno, _json_reason(e))
                    continue
                if not isinstance(obj, dict):
                    bad.add(lineno, f"not an object ({_kind(obj)})")
                    continue
                yield idx, lineno, obj
                idx += 1

    def _array(self, bad: _Bad) -> Iterator[tuple[int, int | None, dict]]:
        with _open(self.path, self.gz) as f:
            raw = f.read()
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            bad.add(1, "not UTF-8")
            return
        except json.JSONDecodeError as e:
            bad.add(e.lineno, _json_reason(e))
            return
        items = doc
        if isinstance(doc, dict):
            lists = [k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
            if len(lists) == 1:
                items = doc[lists[0]]
                self.notes.append(f"records read from the document's `{lists[0]}` array")
            else:
                items = [doc]
        if not isinstance(items, list):
            bad.add(1, f"the document is {_kind(items)}, not an array of objects")
            return
        bad.unit = "element"
        idx = 0
        for i, obj in enumerate(items):
            if not isinstance(obj, dict):
                bad.add(i, f"not an object ({_kind(obj)})")
                continue
            yield idx, None, obj
            idx += 1


def open_dataset(path: Path) -> _Source:
    """Decide how to read ``path``; raises :class:`DatasetError` when it cannot be read."""
    if not path.exists():
        raise DatasetError(f"no such file: {path}")
    if path.is_dir():
        raise DatasetError(f"{path} is a directory; give a .jsonl, .json or .jsonl.gz file")
    try:
        gz = _is_gzip(path)
        first = _first_byte(path, gz)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise DatasetError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if not first:
        raise DatasetError(f"{path} is empty")
    if name.endswith((".jsonl", ".ndjson")):
        return _Source(path, gz, "jsonl")
    if first == b"[":
        return _Source(path, gz, "json")
    if first == b"{":
        # JSON Lines under a .json name, unless the first line is not a whole object (a
        # pretty-printed document): then the file is parsed as one document.
        with _open(path, gz) as f:
            for raw in f:
                if raw.strip():
                    try:
                        json.loads(raw.decode("utf-8-sig"))
                        return _Source(path, gz, "jsonl")
                    except (UnicodeDecodeError, json.JSONDecodeError):
                        return _Source(path, gz, "json")
    if name.endswith(".json"):
        return _Source(path, gz, "json")  # reported as malformed by the parser
    raise DatasetError(f"{path} is not JSON Lines or a JSON array (it starts with {first!r})")


# --- shapes ------------------------------------------------------------------------------

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
class _Sample:
    full: str  # what is encoded
    target: str  # the trained part (judged for emptiness)
    key: str  # what duplicates are compared on
    messages: list | None = None  # normalised chat messages, for a chat template


@dataclass(frozen=True)
class _Shape:
    name: str
    fields: str
    required: tuple[str, ...]

    def matches(self, obj: dict) -> bool:
        return all(k in obj for k in self.required)

    def extract(self, obj: dict) -> _Sample | str:
        """The record's text, or why there is none (``missing`` / ``not text``)."""
        if not self.matches(obj):
            return "missing"
        if self.name in ("chat", "sharegpt"):
            return _chat(obj[self.required[0]], sharegpt=self.name == "sharegpt")
        if self.name == "text":
            t = _as_text(obj["text"])
            return "not text" if t is None else _Sample(t, t, t)
        if self.name == "prompt/completion":
            p, c = _as_text(obj["prompt"]), _as_text(obj["completion"])
            if p is None or c is None:
                return "not text"
            return _Sample(p + c, c, p + "\x1f" + c)
        first, opt, last = {
            "alpaca": ("instruction", "input", "output"),
            "dolly": ("instruction", "context", "response"),
        }[self.name]
        a, b, c = _as_text(obj[first]), _as_text(obj.get(opt)), _as_text(obj[last])
        if a is None or b is None or c is None:
            return "not text"
        return _Sample("\n\n".join(x for x in (a, b, c) if x), c, "\x1f".join((a, b, c)))


def _chat(msgs: Any, sharegpt: bool) -> _Sample | str:
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
    return _Sample(full, target, key, norm)


SHAPES = (
    _Shape("chat", "messages[].content", ("messages",)),
    _Shape("sharegpt", "conversations[].value", ("conversations",)),
    _Shape("prompt/completion", "prompt + completion", ("prompt", "completion")),
    _Shape("alpaca", "instruction + input + output", ("instruction", "output")),
    _Shape("dolly", "instruction + context + response", ("instruction", "response")),
    _Shape("text", "text", ("text",)),
)

_MISSING = object()


def _resolve(obj: Any, path: str) -> tuple[Any, int, Any]:
    """``(value or _MISSING, parts resolved, the container at the deepest part reached)``."""
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
            return _MISSING, i, cur
        cur = nxt
    return cur, len(parts), None


@dataclass(frozen=True)
class _FieldShape:
    path: str
    name: str = "text-field"

    @property
    def fields(self) -> str:
        return self.path

    def matches(self, obj: dict) -> bool:
        return _resolve(obj, self.path)[0] is not _MISSING

    def extract(self, obj: dict) -> _Sample | str:
        v = _resolve(obj, self.path)[0]
        if v is _MISSING:
            return "missing"
        if isinstance(v, list) and v and all(isinstance(m, dict) and "role" in m for m in v):
            return _chat(v, sharegpt=False)
        t = _as_text(v)
        return "not text" if t is None else _Sample(t, t, t)


# --- tokenizer -----------------------------------------------------------------------------


@dataclass
class Special:
    """One special-token role: the token, its id (None: not in the vocabulary), where it came from."""

    token: str | None = None
    id: int | None = None
    source: str = ""

    @property
    def ok(self) -> bool:
        return self.token is not None and self.id is not None

    def describe(self) -> str:
        if self.token is None:
            return "none"
        if self.id is None:
            return f"`{self.token}` (not in the vocabulary; {self.source})"
        return f"`{self.token}` (id {self.id}, {self.source})"

    def to_dict(self) -> dict:
        return {"token": self.token, "id": self.id, "source": self.source or None}


@dataclass
class Tok:
    """A loaded tokenizer: how it encodes, and its EOS / pad / BOS."""

    name: str
    backend: str  # "transformers" | "tokenizers"
    impl: Any
    eos: Special
    pad: Special
    bos: Special
    model_max_length: int | None = None
    chat_template: bool = False
    inferred: list[str] = field(default_factory=list)

    def encode(self, texts: list[str], special: bool = True) -> list[list[int]]:
        if not texts:
            return []
        if self.backend == "transformers":
            return [list(x) for x in self.impl(texts, add_special_tokens=special, verbose=False)["input_ids"]]
        return [e.ids for e in self.impl.encode_batch(texts, add_special_tokens=special)]

    def decode(self, ids: list[int]) -> str:
        return self.impl.decode(ids, skip_special_tokens=False)

    def render_chat(self, messages: list[dict]) -> str | None:
        if not self.chat_template:
            return None
        try:
            out = self.impl.apply_chat_template(messages, tokenize=False)
        except Exception:  # noqa: BLE001 - a template that rejects a record falls back to plain text
            return None
        return out if isinstance(out, str) else None

    def added_around(self, text: str = PROBE) -> tuple[list[int], list[int]]:
        """The ids encoding adds before and after ``text`` (its post-processor)."""
        plain = self.encode([text], special=False)[0]
        full = self.encode([text], special=True)[0]
        n = len(plain)
        for i in range(len(full) - n + 1):
            if full[i : i + n] == plain:
                return full[:i], full[i + n :]
        return [], []

    def describe(self) -> str:
        how = "transformers AutoTokenizer" if self.backend == "transformers" else "tokenizers (tokenizer.json)"
        return f"{self.name} via {how}; eos {self.eos.describe()}, pad {self.pad.describe()}, bos {self.bos.describe()}"

    def meta(self) -> dict:
        return {
            "path": self.name,
            "backend": self.backend,
            "special": {"eos": self.eos.to_dict(), "pad": self.pad.to_dict(), "bos": self.bos.to_dict()},
            "model_max_length": self.model_max_length,
            "chat_template": self.chat_template,
        }


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _import_hf():
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        raise TokenizerError(f"--tokenizer needs the optional Hugging Face dependencies: {HF_EXTRA}") from None
    try:
        import transformers
    except ImportError:
        transformers = None
    return transformers


def load_tokenizer(spec: str) -> Tok:
    """Load a local tokenizer (see the module doc); raises :class:`TokenizerError`."""
    transformers = _import_hf()
    p = Path(spec).expanduser()
    if p.is_file():
        if p.name in ("tokenizer_config.json", "special_tokens_map.json"):
            p = p.parent
        elif p.suffix.lower() == ".json":
            return _load_tokenizer_json(spec, p)
        else:
            raise TokenizerError(f"tokenizer {spec}: not a tokenizer.json; pass the tokenizer's directory")
    if p.is_dir():
        if transformers is not None:
            return _load_auto(spec, str(p), transformers)
        if (p / "tokenizer.json").is_file():
            return _load_tokenizer_json(spec, p / "tokenizer.json")
        raise TokenizerError(
            f"tokenizer {spec}: the directory has no tokenizer.json, and loading it another way "
            f"needs transformers: {HF_EXTRA}"
        )
    if transformers is not None and _HUB_ID.match(spec) and not spec.endswith(".json"):
        try:
            return _load_auto(spec, spec, transformers, cached=True)
        except TokenizerError:
            pass
    raise TokenizerError(
        f"tokenizer {spec}: no local copy (not a directory or tokenizer.json here, nor in the "
        "local Hugging Face cache); trainproof never downloads: download it first "
        f"(e.g. `hf download {spec}`) and pass the local directory"
    )


def _load_auto(spec: str, where: str, transformers, cached: bool = False) -> Tok:
    try:
        tok = transformers.AutoTokenizer.from_pretrained(where, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - any loader failure is one line, exit 2
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TokenizerError(f"tokenizer {spec}: transformers could not load it: {first}") from None
    src = "transformers cache" if cached else "transformers"

    def role(name: str) -> Special:
        token = getattr(tok, f"{name}_token", None)
        if token is None:
            return Special(source=src)
        token = str(token)
        tid = tok.convert_tokens_to_ids(token)
        if isinstance(tid, list):
            tid = tid[0] if tid else None
        unk = getattr(tok, "unk_token", None)
        if tid is not None and unk is not None and token != str(unk) and tid == tok.unk_token_id:
            tid = None
        return Special(token, tid, src)

    mml = getattr(tok, "model_max_length", None)
    mml = int(mml) if isinstance(mml, int) and 0 < mml < 10**8 else None
    return Tok(
        spec, "transformers", tok, role("eos"), role("pad"), role("bos"), mml, bool(getattr(tok, "chat_template", None))
    )


def _config_roles(directory: Path) -> tuple[dict[str, tuple[str, str]], int | None]:
    """Roles named by special_tokens_map.json / tokenizer_config.json (the first file wins),
    and tokenizer_config.json's model_max_length."""
    roles: dict[str, tuple[str, str]] = {}
    mml = None
    for fname in ("special_tokens_map.json", "tokenizer_config.json"):
        f = directory / fname
        if not f.is_file():
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TokenizerError(f"cannot read {f}: {e}") from None
        if not isinstance(data, dict):
            continue
        for role in ("eos", "pad", "bos"):
            v = data.get(f"{role}_token")
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str) and v and role not in roles:
                roles[role] = (v, fname)
        m = data.get("model_max_length")
        if fname == "tokenizer_config.json" and isinstance(m, int) and 0 < m < 10**8:
            mml = m
    return roles, mml


def _load_tokenizer_json(spec: str, path: Path) -> Tok:
    from tokenizers import Tokenizer

    try:
        impl = Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - a broken file is one line, exit 2
        raise TokenizerError(f"tokenizer {spec}: tokenizers could not load {path.name}: {e}") from None
    roles, mml = _config_roles(path.parent)
    tok = Tok(spec, "tokenizers", impl, Special(), Special(), Special(), mml, False)
    pre, post = tok.added_around()

    def named(token: str, source: str) -> Special:
        return Special(token, impl.token_to_id(token), source)

    def by_name(names: tuple[str, ...]) -> Special:
        for n in names:
            tid = impl.token_to_id(n)
            if tid is not None:
                return Special(n, tid, "well-known name")
        return Special()

    def by_id(tid: int, source: str) -> Special:
        return Special(impl.id_to_token(tid), tid, source)

    for role, fallback, names in (("eos", post[-1:], EOS_NAMES), ("bos", pre[:1], BOS_NAMES), ("pad", [], PAD_NAMES)):
        if role in roles:
            sp = named(*roles[role])
        elif role == "pad" and isinstance(impl.padding, dict) and impl.padding.get("pad_token"):
            sp = named(impl.padding["pad_token"], "tokenizer.json padding")
        elif fallback:
            sp = by_id(fallback[0], "post-processor")
        else:
            sp = by_name(names)
        setattr(tok, role, sp)
        if sp.token is not None and sp.source in ("post-processor", "well-known name"):
            tok.inferred.append(role)
    return tok


# --- the scan ------------------------------------------------------------------------------


@dataclass
class _Examples:
    count: int = 0
    items: list = field(default_factory=list)

    def add(self, item) -> None:
        self.count += 1
        if len(self.items) < SHOW:
            self.items.append(item)


def _where(index: int, line: int | None) -> str:
    return f"record {index}" + (f", line {line}" if line is not None else "")


def _list(xs: list, total: int, unit: str = "") -> str:
    """``record 3`` / ``records 3, 7, 9 (and 12 more)``."""
    s = ", ".join(str(x) for x in xs)
    s += f" (and {total - len(xs)} more)" if total > len(xs) else ""
    return f"{unit}{'s' if total > 1 else ''} {s}" if unit else s


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else f"{100 * x:.2g}%"


class _Scan:
    """One streaming pass over the records: text, emptiness, duplicates and token lengths."""

    def __init__(self, text_field: str | None, tok: Tok | None) -> None:
        self.shape = _FieldShape(text_field) if text_field else None
        self.fixed = text_field is not None
        self.tok = tok
        self.records = 0
        self.keys: Counter = Counter()
        self.nested: Counter = Counter()
        self.nested_depth = -1
        self.nested_prefix = ""
        self.unmatched = _Examples()  # before a shape is known
        self.empty = _Examples()
        self.empty_kinds: Counter = Counter()
        self.first_seen: dict[bytes, int] = {}
        self.repeated: set[bytes] = set()
        self.dups = _Examples()
        self.pending: list[tuple[int, int | None, str, bool]] = []
        self.lengths = array("q")
        self.len_index = array("q")
        self.len_line = array("q")  # -1: no line (a .json array)
        self.no_eos = _Examples()
        self.double_bos = _Examples()
        self.bos_first = 0
        self.template_failed = 0
        self.template_used = 0
        self.first_match: int | None = None

    def _track_keys(self, obj: dict) -> None:
        for k in obj:
            if k in self.keys or len(self.keys) < _KEYS_TRACKED:
                self.keys[k] += 1
        if self.fixed and "." in self.shape.path:
            v, depth, container = _resolve(obj, self.shape.path)
            if v is _MISSING and isinstance(container, dict) and depth > 0:
                if depth > self.nested_depth:
                    self.nested_depth, self.nested = depth, Counter()
                    self.nested_prefix = ".".join(self.shape.path.split(".")[:depth])
                if depth == self.nested_depth:
                    for k in container:
                        if k in self.nested or len(self.nested) < _KEYS_TRACKED:
                            self.nested[k] += 1

    def add(self, index: int, line: int | None, obj: dict) -> None:
        self.records += 1
        self._track_keys(obj)
        if self.shape is None:
            self.shape = next((s for s in SHAPES if s.matches(obj)), None)
            if self.shape is None:
                self.unmatched.add((index, line))
                return
        if not self.shape.matches(obj):
            if self.first_match is None:  # --text-field not seen yet
                self.unmatched.add((index, line))
            else:
                self._empty(index, line, "missing")
            return
        if self.first_match is None:
            self.first_match = index
        s = self.shape.extract(obj)
        if isinstance(s, str):
            self._empty(index, line, s)
            return
        if not s.target.strip():
            self._empty(index, line, "empty")
            return
        digest = hashlib.blake2b(s.key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        first = self.first_seen.get(digest)
        if first is None:
            self.first_seen[digest] = index
        else:
            self.repeated.add(digest)
            self.dups.add((first, index))
        if self.tok is not None:
            text, special = s.full, True
            if s.messages is not None and self.tok.chat_template:
                rendered = self.tok.render_chat(s.messages)
                if rendered is None:
                    self.template_failed += 1
                else:
                    text, special = rendered, False
                    self.template_used += 1
            self.pending.append((index, line, text, special))
            if len(self.pending) >= _BATCH:
                self.flush()

    def _empty(self, index: int, line: int | None, kind: str) -> None:
        self.empty.add((index, line, kind))
        self.empty_kinds[kind] += 1

    def finish(self) -> None:
        """Records seen before a fixed --text-field first matched count as missing it."""
        self.flush()
        if self.first_match is not None and self.unmatched.count:
            pre = self.unmatched
            merged = _Examples(
                pre.count + self.empty.count, ([(i, ln, "missing") for i, ln in pre.items] + self.empty.items)[:SHOW]
            )
            self.empty_kinds["missing"] += pre.count
            self.empty = merged
            self.unmatched = _Examples()

    def flush(self) -> None:
        if not self.pending or self.tok is None:
            self.pending = []
            return
        tok = self.tok
        batch, self.pending = self.pending, []
        ids: dict[int, list[int]] = {}
        for special in (True, False):
            part = [(k, b) for k, b in enumerate(batch) if b[3] is special]
            for (k, _), enc in zip(part, tok.encode([b[2] for _, b in part], special=special)):
                ids[k] = enc
        eos, bos = tok.eos.id if tok.eos.ok else None, tok.bos.id if tok.bos.ok else None
        for k, (index, line, _text, _sp) in enumerate(batch):
            seq = ids[k]
            self.lengths.append(len(seq))
            self.len_index.append(index)
            self.len_line.append(-1 if line is None else line)
            if eos is not None and not self._ends_with_eos(seq, eos):
                self.no_eos.add((index, line))
            if bos is not None and seq and seq[0] == bos:
                self.bos_first += 1
                if len(seq) > 1 and seq[1] == bos:
                    self.double_bos.add((index, line))

    def _ends_with_eos(self, seq: list[int], eos: int) -> bool:
        if not seq:
            return False
        if seq[-1] == eos:
            return True
        tail = seq[-8:]
        if eos not in tail:
            return False
        last = len(tail) - 1 - tail[::-1].index(eos)
        return not self.tok.decode(tail[last + 1 :]).strip()


# --- judging -------------------------------------------------------------------------------


def _percentile(sorted_vals: list[int], q: float) -> int:
    if not sorted_vals:
        return 0
    k = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return int(sorted_vals[k])


def check_dataset(
    path: Path, text_field: str | None = None, tokenizer: str | None = None, max_len: int | None = None, mute=()
):
    """Judge a dataset file. Returns ``(report, error)``: ``error`` is the command-level
    reason exit 2 applies even when the dataset itself was judged (the tokenizer could not
    be loaded), else ``None``."""
    mute = set(mute)
    tok, tok_error = None, None
    if tokenizer is not None:
        try:
            tok = load_tokenizer(tokenizer)
        except TokenizerError as e:
            tok_error = str(e)
    try:
        src = open_dataset(path)
    except DatasetError as e:
        return report(str(path), "dataset", [], error=str(e)), tok_error
    bad = _Bad()
    scan = _Scan(text_field, tok)
    try:
        for index, line, obj in src.rows(bad):
            scan.add(index, line, obj)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        return report(str(path), "dataset", [], error=f"cannot read {path}: {e}"), tok_error
    scan.finish()

    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    meta: dict = {
        "container": src.label,
        "shape": None,
        "text_fields": None,
        "records": scan.records,
        "malformed": bad.count,
    }
    notes = list(src.notes)
    if src.blank:
        notes.append(f"{src.blank} blank line(s) skipped")

    ran.append("TP-PRE-MALFORMED-JSONL")
    if bad.count:
        unit = bad.unit
        first = "; ".join(f"{unit} {w}: {r}" for w, r in zip(bad.where[:3], bad.reasons[:3]))
        findings.append(
            finding(
                "TP-PRE-MALFORMED-JSONL",
                f"{bad.count} {unit}(s) are not valid JSON objects ({_list(bad.where, bad.count, unit)})",
                evidence=f"First: {first}. {scan.records} valid record(s) were read.",
                data={"count": bad.count, unit + "s": bad.where, "reasons": bad.reasons, "records": scan.records},
                line=bad.where[0] if unit == "line" else None,
            )
        )
    if scan.records == 0 and not bad.count:
        return report(str(path), "dataset", [], ran=ran, error=f"{path}: no records", meta=meta, notes=notes), tok_error

    shape = scan.shape if scan.first_match is not None else None
    if scan.records and shape is None:
        shown = scan.keys.most_common(KEYS_SHOWN)
        keys_txt = ", ".join(f"{k} ({n})" for k, n in shown) or "none"
        what = (
            f"no record has the --text-field path `{text_field}`"
            if text_field
            else "no record has a known text shape (text, prompt/completion, instruction/output, messages, "
            "conversations)"
        )
        evidence = f"Keys seen in {scan.records} record(s), with counts: {keys_txt}"
        if len(scan.keys) > KEYS_SHOWN:
            evidence += f" (and {len(scan.keys) - KEYS_SHOWN} more)"
        evidence += "."
        data = {"keys": dict(shown), "distinct_keys": len(scan.keys), "records": scan.records, "text_field": text_field}
        if scan.nested:
            nested = scan.nested.most_common(KEYS_SHOWN)
            evidence += f" Keys under `{scan.nested_prefix}`: " + ", ".join(f"{k} ({n})" for k, n in nested) + "."
            data["nested_keys"] = {"path": scan.nested_prefix, "keys": dict(nested)}
        findings.append(finding("TP-PRE-NO-TEXT-FIELD", what + "; pass --text-field", evidence=evidence, data=data))
        ran.append("TP-PRE-NO-TEXT-FIELD")
        notes.append("text shape: none detected")
        for rid in (*_DATA_IDS, *_TOK_IDS, "TP-PRE-CONTEXT-CHECK-SKIPPED"):
            skipped[rid] = Skip("absent", "no text field")
    elif shape is not None:
        meta["shape"], meta["text_fields"] = shape.name, shape.fields
        notes.append(f"text shape: {shape.name} ({shape.fields})")
        ran.extend(_DATA_IDS)
        findings += _data_findings(scan, shape)
        if tok is not None:
            notes.append(f"tokenizer: {tok.describe()}")
            if tok.inferred:
                notes.append(
                    "tokenizer.json names no " + "/".join(tok.inferred) + " token: found from the "
                    "post-processor or by name; a script loading it with PreTrainedTokenizerFast must "
                    "set it"
                )
            f, r, s, m = _tokenizer_findings(scan, tok, max_len)
            findings += f
            ran += r
            skipped.update(s)
            meta["tokenizer"] = tok.meta()
            meta["tokens"] = m
        else:
            why = tok_error or "no --tokenizer"
            for rid in _TOK_IDS:
                skipped[rid] = Skip("absent", why)
            if max_len is not None and tok_error is None:
                skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "--max-len needs --tokenizer to count tokens")

    findings = [f for f in findings if f.id not in mute]
    if (
        shape is not None
        and not any(f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED) for f in findings)
        and "TP-PRE-OK" not in mute
    ):
        parts = ["no malformed lines, empty texts or exact duplicates"]
        if tok is not None:
            parts.append("EOS and pad set and distinct, samples end with EOS")
            if max_len is not None:
                parts.append(f"none longer than {max_len} tokens")
        findings.append(
            finding(
                "TP-PRE-OK",
                f"{scan.records} record(s), shape {shape.name}: " + "; ".join(parts),
                data={"records": scan.records, "shape": shape.name},
            )
        )
        ran.append("TP-PRE-OK")
    return report(
        str(path),
        "dataset",
        findings,
        ran=ran,
        skipped=skipped,
        records=scan.records,
        meta=meta,
        notes=notes,
        mute=mute,
    ), tok_error


def _data_findings(scan: _Scan, shape) -> list[Finding]:
    out = []
    if scan.empty.count:
        kinds = dict(scan.empty_kinds)
        idx = [i for i, _, _ in scan.empty.items]
        first = "; ".join(f"{_where(i, ln)}: {k}" for i, ln, k in scan.empty.items[:3])
        trained = {
            "chat": "assistant messages",
            "sharegpt": "assistant messages",
            "prompt/completion": "completion",
            "alpaca": "output",
            "dolly": "response",
        }.get(shape.name, shape.fields)
        out.append(
            finding(
                "TP-PRE-EMPTY-TEXT",
                f"{scan.empty.count} of {scan.records} record(s) have no text to train on in `{trained}` "
                f"({_list(idx, scan.empty.count, 'record')})",
                evidence="By kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + f". First: {first}.",
                data={
                    "count": scan.empty.count,
                    "records": scan.records,
                    "indices": idx,
                    "lines": [ln for _, ln, _ in scan.empty.items],
                    "kinds": kinds,
                    "field": trained,
                },
                line=scan.empty.items[0][1],
            )
        )
    if scan.dups.count:
        pairs = [list(p) for p in scan.dups.items]
        out.append(
            finding(
                "TP-PRE-DUPLICATE-TEXT",
                f"{scan.dups.count} record(s) repeat an earlier record's text exactly "
                f"({len(scan.repeated)} distinct text(s) repeated, {_pct(scan.dups.count / scan.records)} of records)",
                evidence="First pairs (earlier, later record): " + ", ".join(f"({a}, {b})" for a, b in pairs[:5]) + ".",
                data={
                    "count": scan.dups.count,
                    "distinct": len(scan.repeated),
                    "records": scan.records,
                    "pairs": pairs,
                    "share": scan.dups.count / scan.records,
                },
            )
        )
    return out


def _tokenizer_findings(scan: _Scan, tok: Tok, max_len: int | None):
    out: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    n = len(scan.lengths)
    ran.append("TP-PRE-MISSING-EOS-TOKEN")
    if not tok.eos.ok:
        msg = (
            "the tokenizer has no EOS token"
            if tok.eos.token is None
            else f"the EOS token `{tok.eos.token}` ({tok.eos.source}) is not in the vocabulary"
        )
        out.append(
            finding(
                "TP-PRE-MISSING-EOS-TOKEN",
                msg,
                evidence=f"Tokenizer {tok.name} ({tok.backend}): eos {tok.eos.describe()}.",
                data={"eos": tok.eos.to_dict()},
            )
        )
    ran.append("TP-PRE-MISSING-PAD-TOKEN")
    if not tok.pad.ok:
        msg = (
            "the tokenizer has no pad token"
            if tok.pad.token is None
            else f"the pad token `{tok.pad.token}` ({tok.pad.source}) is not in the vocabulary"
        )
        out.append(
            finding(
                "TP-PRE-MISSING-PAD-TOKEN",
                msg + ": padded batching will fail until one is set",
                evidence=f"Tokenizer {tok.name} ({tok.backend}): pad {tok.pad.describe()}.",
                data={"pad": tok.pad.to_dict()},
            )
        )
    if tok.eos.ok and tok.pad.ok:
        ran.append("TP-PRE-PAD-EQUALS-EOS")
        if tok.eos.id == tok.pad.id:
            out.append(
                finding(
                    "TP-PRE-PAD-EQUALS-EOS",
                    f"pad is the EOS token `{tok.eos.token}` (id {tok.eos.id}): the usual LM collator masks EOS labels "
                    "with the padding, so the model does not learn to stop",
                    evidence=f"pad {tok.pad.describe()}, eos {tok.eos.describe()}.",
                    data={"id": tok.eos.id, "token": tok.eos.token},
                )
            )
    else:
        skipped["TP-PRE-PAD-EQUALS-EOS"] = Skip("absent", "no EOS or no pad token")
    pre, post = tok.added_around()
    appends = tok.eos.ok and bool(post) and post[-1] == tok.eos.id
    prepends = tok.bos.ok and bool(pre) and pre[0] == tok.bos.id
    if tok.eos.ok and n:
        ran.append("TP-PRE-NO-EOS-APPEND")
        if scan.no_eos.count:
            idx = [i for i, _ in scan.no_eos.items]
            added = ("appends " + ", ".join(f"`{tok.decode([t])}`" for t in post)) if post else "appends nothing"
            out.append(
                finding(
                    "TP-PRE-NO-EOS-APPEND",
                    f"{scan.no_eos.count} of {n} encoded record(s) do not end with EOS `{tok.eos.token}` "
                    f"({_list(idx, scan.no_eos.count, 'record')})",
                    evidence=f"Encoding with special tokens {added} after the text; the text does not end with "
                    f"`{tok.eos.token}` either.",
                    data={
                        "count": scan.no_eos.count,
                        "encoded": n,
                        "indices": idx,
                        "lines": [ln for _, ln in scan.no_eos.items],
                        "tokenizer_appends_eos": appends,
                    },
                    line=scan.no_eos.items[0][1],
                )
            )
    else:
        skipped["TP-PRE-NO-EOS-APPEND"] = Skip("absent", "no EOS token" if not tok.eos.ok else "no record to encode")
    ran.append("TP-PRE-BOS-TOKEN-INFO")
    if tok.bos.ok:
        msg = f"BOS `{tok.bos.token}` (id {tok.bos.id}, {tok.bos.source}); encoding " + (
            "prepends it" if prepends else "does not prepend it"
        )
        if scan.double_bos.count:
            msg += f"; {scan.double_bos.count} record(s) start with BOS twice"
    else:
        msg = "no BOS token; encoded samples start directly with the text"
    out.append(
        finding(
            "TP-PRE-BOS-TOKEN-INFO",
            msg,
            evidence=f"{scan.bos_first} of {n} encoded record(s) start with BOS." if tok.bos.ok else "",
            data={
                "bos": tok.bos.to_dict(),
                "prepends": prepends,
                "starts_with_bos": scan.bos_first,
                "double_bos": scan.double_bos.count,
                "double_bos_indices": [i for i, _ in scan.double_bos.items],
            },
        )
    )

    lengths = sorted(scan.lengths)
    total = int(sum(lengths))
    meta = {
        "encoded": n,
        "total": total,
        "max": lengths[-1] if n else 0,
        "mean": round(total / n, 2) if n else 0,
        "p50": _percentile(lengths, 0.5),
        "p95": _percentile(lengths, 0.95),
        "length_basis": _basis(scan, tok),
        "max_len": max_len,
    }
    if scan.template_failed:
        meta["chat_template_failed"] = scan.template_failed
    if n:
        k = max(range(n), key=lambda j: (scan.lengths[j], -j))
        li, ll = int(scan.len_index[k]), (int(scan.len_line[k]) if scan.len_line[k] >= 0 else None)
        meta["longest"] = {"tokens": int(scan.lengths[k]), "index": li, "line": ll}
    if max_len is None:
        ran.append("TP-PRE-CONTEXT-CHECK-SKIPPED")
        skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "no --max-len")
        msg = "no --max-len: truncation not checked"
        ev = ""
        if n:
            ev = (
                f"Longest: {meta['longest']['tokens']} tokens ({_where(li, ll)}); median {meta['p50']}, "
                f"95th percentile {meta['p95']} tokens over {n} record(s)."
            )
        if tok.model_max_length:
            ev += f" The tokenizer's model_max_length is {tok.model_max_length}."
        out.append(
            finding(
                "TP-PRE-CONTEXT-CHECK-SKIPPED",
                msg,
                evidence=ev.strip(),
                data={k2: meta[k2] for k2 in ("encoded", "max", "p50", "p95")}
                | {"model_max_length": tok.model_max_length},
            )
        )
    elif n:
        ran.append("TP-PRE-CONTEXT-OVERFLOW")
        over = [
            (int(scan.len_index[j]), int(scan.lengths[j]), int(scan.len_line[j]))
            for j in range(n)
            if scan.lengths[j] > max_len
        ]
        cut = sum(ln - max_len for _, ln, _ in over)
        meta.update({"over": len(over), "truncated_tokens": cut})
        if over:
            share_r, share_t = len(over) / n, cut / total if total else 0.0
            idx = [i for i, _, _ in over[:SHOW]]
            out.append(
                finding(
                    "TP-PRE-CONTEXT-OVERFLOW",
                    f"{len(over)} of {n} record(s) ({_pct(share_r)}) exceed --max-len {max_len} tokens; "
                    f"the longest is {meta['longest']['tokens']} tokens ({_where(li, ll)})",
                    evidence=f"Truncation would cut {cut} of {total} tokens ({_pct(share_t)}). Over the limit: "
                    f"{_list(idx, len(over), 'record')}. Median length {meta['p50']}, "
                    f"95th percentile {meta['p95']}.",
                    data={
                        "max_len": max_len,
                        "over": len(over),
                        "encoded": n,
                        "share_records": share_r,
                        "truncated_tokens": cut,
                        "total_tokens": total,
                        "share_tokens": share_t,
                        "longest": meta["longest"],
                        "indices": idx,
                    },
                    line=over[0][2] if over[0][2] >= 0 else None,
                )
            )
    else:
        skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "no record to encode")
    return out, ran, skipped, meta


def _basis(scan: _Scan, tok: Tok) -> str:
    name = scan.shape.name if scan.shape is not None else ""
    if name in ("chat", "sharegpt") or scan.template_used or scan.template_failed:
        if scan.template_used and not scan.template_failed:
            return "chat template, add_special_tokens=False"
        if scan.template_used:
            return "chat template (contents joined by newlines where it failed)"
        return "message contents joined by newlines, add_special_tokens=True (no chat template)"
    if name == "prompt/completion":
        return "prompt + completion, add_special_tokens=True"
    if name in ("alpaca", "dolly"):
        return "fields joined by blank lines (no prompt template), add_special_tokens=True"
    return "text, add_special_tokens=True"
