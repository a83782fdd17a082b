"""Measuring one audio file, decoded in blocks: sample rate, channels, length, a content hash,
clipped samples and the silence at its edges."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...rules.thresholds import Thresholds
from .corpus import Item

#: Silence is judged on frames of this length (seconds).
FRAME_S = 0.010
#: Audio is decoded in blocks of about this many seconds.
BLOCK_S = 30.0


@dataclass
class Audio:
    """One decoded file: sample rate (Hz), channels, length in frames, BLAKE2b of its
    samples, clipped samples (all channels), leading/trailing silence and voiced span
    (seconds), and whether it holds no sound at all."""

    sr: int
    channels: int
    frames: int
    digest: str
    clipped: int
    lead: float
    trail: float
    voiced: float
    silent: bool  # no sound at all

    @property
    def duration(self) -> float:
        return self.frames / self.sr if self.sr else 0.0

    @property
    def clip_share(self) -> float:
        n = self.frames * self.channels
        return self.clipped / n if n else 0.0


def _clip_runs(flags: np.ndarray, carry: np.ndarray, run_min: int) -> tuple[int, np.ndarray]:
    """Samples in runs of at least ``run_min`` True values per column of ``flags``; a run
    touching the end of the block is carried into the next one (``carry``)."""
    n = flags.shape[0]
    counted = 0
    new = np.zeros_like(carry)
    for ch in range(flags.shape[1]):
        f = flags[:, ch]
        if not f.any():
            if carry[ch] >= run_min:
                counted += int(carry[ch])
            continue
        d = np.diff(np.concatenate(([0], f.astype(np.int8), [0])))
        starts = np.flatnonzero(d == 1)
        ends = np.flatnonzero(d == -1)
        lens = (ends - starts).astype(np.int64)
        if starts[0] == 0:
            lens[0] += carry[ch]
        elif carry[ch] >= run_min:
            counted += int(carry[ch])
        if ends[-1] == n:
            new[ch] = lens[-1]
            lens = lens[:-1]
        counted += int(lens[lens >= run_min].sum())
    return counted, new


def analyse_audio(sf, path: Path, th: Thresholds) -> Audio:
    """Decode ``path`` in blocks and measure it. Raises whatever the decoder raises."""
    info = sf.info(str(path))
    sr, ch = int(info.samplerate), int(info.channels)
    flen = max(1, int(round(sr * FRAME_S)))
    block = flen * max(1, int(round(BLOCK_S / FRAME_S)))
    h = hashlib.blake2b(digest_size=16)
    h.update(f"channels={ch};".encode())
    carry = np.zeros(ch, dtype=np.int64)
    clipped = frames = 0
    power: list[np.ndarray] = []
    for blk in sf.blocks(str(path), blocksize=block, dtype="float32", always_2d=True):
        if not len(blk):
            continue
        frames += len(blk)
        h.update(np.ascontiguousarray(blk, dtype="<f4").tobytes())
        n, carry = _clip_runs(np.abs(blk) >= th.speech_clip_level, carry, th.speech_clip_run)
        clipped += n
        sq = (blk.astype(np.float64) ** 2).mean(axis=1)
        full = len(sq) // flen
        if full:
            power.append(sq[: full * flen].reshape(full, flen).mean(axis=1))
        if len(sq) % flen:
            power.append(np.array([sq[full * flen :].mean()]))
    clipped += int(carry[carry >= th.speech_clip_run].sum())
    duration = frames / sr if sr else 0.0
    lead = trail = 0.0
    voiced = duration
    silent = False
    if frames:
        p = np.concatenate(power)
        ref = float(p.max())
        if ref <= 1e-20:
            silent, lead, voiced = True, duration, 0.0
        else:
            loud = np.flatnonzero(p >= ref * 10.0 ** (-th.speech_silence_db / 10.0))
            first, last = int(loud[0]), int(loud[-1])
            lead = first * flen / sr
            trail = max(0, frames - (last + 1) * flen) / sr
            voiced = max(0.0, duration - lead - trail)
    return Audio(sr, ch, frames, h.hexdigest(), clipped, lead, trail, voiced, silent)


@dataclass
class Measured:
    """A corpus's audio: the pairs whose audio file is missing, those whose audio cannot be
    decoded (with the decoder's one-line reason) and the measured ones, in input order."""

    missing: list[Item] = field(default_factory=list)
    unreadable: list[tuple[Item, str]] = field(default_factory=list)
    measured: list[tuple[Item, Audio]] = field(default_factory=list)


def read_audio(sf, items: list[Item], th: Thresholds) -> Measured:
    """Measure the audio of ``items`` with ``soundfile`` (``sf``), each distinct file once."""
    cache: dict[Path, Audio | str] = {}
    out = Measured()
    for it in items:
        p = it.audio
        if p is None or not p.is_file():
            out.missing.append(it)
            continue
        key = p.resolve()
        if key not in cache:
            try:
                cache[key] = analyse_audio(sf, p, th)
            except Exception as e:  # noqa: BLE001 - any decoder failure is an unreadable file
                cache[key] = " ".join(str(e).split()).rstrip(".") or type(e).__name__
        a = cache[key]
        if isinstance(a, str):
            out.unreadable.append((it, a))
        else:
            out.measured.append((it, a))
    return out
