"""Loading a local tokenizer and finding its EOS, pad and BOS (see :mod:`trainproof.preflight.dataset`
for the order the roles are looked for in); nothing is ever downloaded."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HF_EXTRA = 'pip install "trainproof[hf]"'
PROBE = "Hello world, this is a probe."

EOS_NAMES = ("</s>", "<eos>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "[EOS]")
PAD_NAMES = ("<pad>", "[PAD]", "<|pad|>", "<|padding|>", "<|finetune_right_pad_id|>")
BOS_NAMES = ("<s>", "<bos>", "<|begin_of_text|>", "<|startoftext|>", "[BOS]")


class TokenizerError(Exception):
    """The tokenizer cannot be loaded (not local, no [hf] extra, broken files): exit 2."""


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
