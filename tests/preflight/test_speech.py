"""`trainproof data` and `trainproof tokenizer`: real audio written with soundfile and real
SentencePiece models trained here (nothing is downloaded or mocked)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli

sf = pytest.importorskip("soundfile")
spm = pytest.importorskip("sentencepiece")

from trainproof.preflight import speech  # noqa: E402
from trainproof.rules.thresholds import DEFAULT  # noqa: E402

SR = 16000
WORDS = (
    "the quick brown fox jumps over a lazy dog while seven wise owls watch from an old oak tree "
    "and count stars until morning light returns to the quiet valley near river stones"
).split()


def sentence(i: int, n: int = 8) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def tone(seconds: float, freq: float = 220.0, amp: float = 0.5, pad: float = 0.1, sr: int = SR) -> np.ndarray:
    """A sine with `pad` seconds of digital silence on both sides (float32, mono)."""
    t = np.arange(int(round(seconds * sr))) / sr
    y = amp * np.sin(2 * np.pi * freq * t)
    z = np.zeros(int(round(pad * sr)))
    return np.concatenate([z, y, z]).astype(np.float32)


def text_for(seconds: float, i: int = 0) -> str:
    """Words worth about 12 letters per second of voiced audio."""
    out, n = [], 0
    k = 0
    while n < 12 * seconds:
        w = WORDS[(i * 5 + k * 3) % len(WORDS)]
        out.append(w)
        n += len(w)
        k += 1
    return " ".join(out)


def pair(d: Path, name: str, audio: np.ndarray, text: str | None, sr: int = SR, ext: str = ".txt") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    wav = d / f"{name}.wav"
    sf.write(wav, audio, sr)
    if text is not None:
        (d / f"{name}{ext}").write_text(text, encoding="utf-8")
    return wav


def healthy(d: Path, n: int = 12) -> Path:
    """`n` clean pairs: 16 kHz mono tones of 1.5-3 s, transcripts matching their length."""
    for i in range(n):
        sec = 1.5 + 0.125 * i
        pair(d, f"utt{i:02d}", tone(sec, freq=180 + 15 * i), text_for(sec, i))
    return d


def data(*args):
    """`trainproof data ... --json`: (exit code, the report, stderr, document)."""
    code, out, err, doc = run_cli("data", *map(str, args), "--json")
    assert doc is not None, (out, err)
    assert doc["command"] == "data"
    return code, (doc["reports"][0] if doc["reports"] else None), err, doc


def tok(*args):
    code, out, err, doc = run_cli("tokenizer", *map(str, args), "--json")
    assert doc is not None, (out, err)
    assert doc["command"] == "tokenizer"
    return code, (doc["reports"][0] if doc["reports"] else None), err, doc


def ids(rep: dict) -> set[str]:
    return {f["id"] for f in rep["findings"]}


def by_id(rep: dict, rule_id: str) -> dict:
    found = [f for f in rep["findings"] if f["id"] == rule_id]
    assert len(found) == 1, (rule_id, [f["id"] for f in rep["findings"]])
    return found[0]


# --- inputs ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_clean_directory_passes(tmp_path):
    d = healthy(tmp_path / "corpus")
    code, rep, _, _ = data(d)
    assert code == 0, rep["findings"]
    assert ids(rep) == {"TP-DATA-PASS"}
    assert rep["format"] == "speech-data" and rep["records"] == 12 and rep["verdict"] == "PASS"
    assert rep["meta"]["input"] == "directory"
    assert rep["meta"]["sample_rates"] == {"16000": 12} and rep["meta"]["channels"] == {"1": 12}
    assert 11 < rep["meta"]["char_rate"]["median"] < 14
    for rid in ("TP-DATA-MISSING-AUDIO", "TP-DATA-CHAR-RATE-OUTLIER", "TP-DATA-SILENCE", "TP-DATA-MIXED-SCRIPTS"):
        assert rid in rep["checks"]["ran"]
    code, out, _, _ = run_cli("data", str(d))
    assert code == 0 and "TP-DATA-PASS" in out and "12 pair(s)" in out


@pytest.mark.slow
def test_lab_flac_and_nested_folders_are_read(tmp_path):
    d = healthy(tmp_path / "c" / "spk1", n=6)
    for i in range(6):
        sec = 2.0 + 0.1 * i
        sub = tmp_path / "c" / "spk2"
        sub.mkdir(parents=True, exist_ok=True)
        sf.write(sub / f"x{i}.flac", tone(sec, freq=300 + 10 * i), SR)
        (sub / f"x{i}.lab").write_text(text_for(sec, i))
    (tmp_path / "c" / "README.txt").write_text("not a transcript")
    (d / "README.txt").write_text("not a transcript either")
    code, rep, _, _ = data(tmp_path / "c")
    assert code == 0, rep["findings"]
    assert rep["records"] == 12 and ids(rep) == {"TP-DATA-PASS"}


def write_ljspeech(root: Path, n: int = 12, sr: int = 22050) -> Path:
    (root / "wavs").mkdir(parents=True)
    lines = []
    for i in range(n):
        sec = 1.5 + 0.1 * i
        sf.write(root / "wavs" / f"LJ001-{i:04d}.wav", tone(sec, freq=200 + 9 * i, sr=sr), sr)
        norm = text_for(sec, i)
        raw = norm.replace("the", "the 2") if i == 3 else norm
        lines.append(f"LJ001-{i:04d}|{raw}|{norm}")
    (root / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.slow
def test_ljspeech_folder_uses_the_normalized_column(tmp_path):
    root = write_ljspeech(tmp_path / "LJSpeech-1.1")
    for target in (root, root / "metadata.csv"):
        code, rep, _, _ = data(target)
        assert code == 0, rep["findings"]
        assert ids(rep) == {"TP-DATA-PASS"}  # the raw column's digit is not the trained text
        assert rep["meta"]["input"] == "ljspeech" and rep["meta"]["sample_rates"] == {"22050": 12}
        assert any("normalized (third) column" in n for n in rep["notes"])


def test_ljspeech_problems_cite_metadata_lines(tmp_path):
    root = write_ljspeech(tmp_path / "lj")
    meta = root / "metadata.csv"
    lines = meta.read_text().splitlines()
    lines.append("LJ009-0001|a missing clip|a missing clip")  # line 13: no wavs/LJ009-0001.wav
    lines.append("LJ001-0002|on 12/03/2021 we paid 5%|")  # line 14: empty normalized column -> raw text
    lines.append("no pipe on this line")  # line 15: malformed
    meta.write_text("\n".join(lines) + "\n")
    code, rep, _, _ = data(root)
    assert code == 1
    miss = by_id(rep, "TP-DATA-MISSING-AUDIO")
    assert miss["line"] == 13 and "wavs/LJ009-0001.wav" in miss["evidence"]
    un = by_id(rep, "TP-DATA-UNNORMALIZED")
    assert un["line"] == 14 and "12/03/2021" in un["evidence"] and "5%" in un["evidence"]
    bad = by_id(rep, "TP-DATA-INVALID-INPUT")
    assert bad["level"] == "NOT-CHECKED" and bad["line"] == 15 and bad["data"]["count"] == 1


def write_manifest(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def test_manifest_jsonl_relative_and_absolute_paths(tmp_path):
    d = healthy(tmp_path / "audio")
    rows = []
    for i, wav in enumerate(sorted(d.glob("*.wav"))):
        ref = str(wav) if i % 2 else f"audio/{wav.name}"
        rows.append(
            {"audio_filepath": ref, "text": wav.with_suffix(".txt").read_text(), "duration": sf.info(str(wav)).duration}
        )
    m = write_manifest(tmp_path / "train_manifest.jsonl", rows)
    code, rep, _, _ = data(m)
    assert code == 0, rep["findings"]
    assert ids(rep) == {"TP-DATA-PASS"} and rep["meta"]["input"] == "manifest" and rep["records"] == 12


def test_manifest_problems_cite_their_lines(tmp_path):
    d = healthy(tmp_path / "audio")
    wavs = sorted(d.glob("*.wav"))
    rows = [{"audio_filepath": str(w), "text": w.with_suffix(".txt").read_text()} for w in wavs]
    rows.insert(2, {"audio_filepath": "audio/gone.wav", "text": "missing clip", "duration": 2.0})  # line 3
    rows.insert(4, "{not json")  # line 5
    rows.insert(6, {"audio_filepath": str(wavs[0]) + "x", "text": None})  # line 7
    rows.insert(8, {"text": "no path"})  # line 9
    rows.insert(9, "")  # blank
    m = write_manifest(tmp_path / "m.jsonl", rows)
    code, rep, _, _ = data(m)
    assert code == 1
    miss = by_id(rep, "TP-DATA-MISSING-AUDIO")
    assert miss["data"]["count"] == 2 and miss["line"] == 3
    assert "line 3 (audio/gone.wav)" in miss["message"] + miss["evidence"]
    bad = by_id(rep, "TP-DATA-INVALID-INPUT")
    assert bad["data"]["lines"] == [5, 9] and bad["line"] == 5
    empty = by_id(rep, "TP-DATA-EMPTY-TRANSCRIPT")
    assert empty["line"] == 7 and empty["data"]["kinds"] == {"missing": 1}
    assert any("blank line" in n for n in rep["notes"])


@pytest.mark.slow
def test_unusable_inputs_exit_2(tmp_path):
    code, rep, err, doc = data(tmp_path / "nope")
    assert code == 2 and ids(rep) == {"TP-DATA-INVALID-INPUT"} and rep["verdict"] == "NOT-CHECKED"
    assert "no such file" in doc["error"]
    other = tmp_path / "notes.bin"
    other.write_bytes(b"\x00\x01")
    code, rep, _, _ = data(other)
    assert code == 2 and ids(rep) == {"TP-DATA-INVALID-INPUT"}
    bad = write_manifest(tmp_path / "bad.jsonl", ["{oops", "[1, 2]"])
    code, rep, _, _ = data(bad)
    assert code == 2 and ids(rep) == {"TP-DATA-INVALID-INPUT"} and by_id(rep, "TP-DATA-INVALID-INPUT")["line"] == 1


def test_no_data(tmp_path):
    (tmp_path / "empty").mkdir()
    code, rep, _, doc = data(tmp_path / "empty")
    assert code == 2 and ids(rep) == {"TP-DATA-NO-DATA"} and "no audio/transcript pairs" in doc["error"]
    m = write_manifest(tmp_path / "m.jsonl", ["", "  "])
    code, rep, _, _ = data(m)
    assert code == 2 and ids(rep) == {"TP-DATA-NO-DATA"}


# --- FAILs -------------------------------------------------------------------------------------


def test_missing_audio_for_an_orphan_transcript(tmp_path):
    d = healthy(tmp_path / "c")
    (d / "lost.txt").write_text("this transcript lost its audio")
    code, rep, _, _ = data(d)
    assert code == 1
    f = by_id(rep, "TP-DATA-MISSING-AUDIO")
    assert f["level"] == "FAIL" and f["data"]["items"] == ["lost.txt"] and f["line"] is None


def test_inconsistent_sample_rate(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "odd", tone(2.0, sr=22050), text_for(2.0), sr=22050)
    code, rep, _, _ = data(d)
    assert code == 1
    f = by_id(rep, "TP-DATA-INCONSISTENT-SR")
    assert f["level"] == "FAIL" and f["data"]["majority"] == 16000 and f["data"]["items"] == ["odd.wav"]
    assert "22050 Hz: 1" in f["message"]
    assert "TP-DATA-INCONSISTENT-CHANNELS" not in ids(rep)


def test_stereo_among_mono(tmp_path):
    d = healthy(tmp_path / "c")
    y = tone(2.0)
    pair(d, "stereo", np.stack([y, y], axis=1), text_for(2.0))
    code, rep, _, _ = data(d)
    assert code == 1
    f = by_id(rep, "TP-DATA-INCONSISTENT-CHANNELS")
    assert f["data"]["majority"] == 1 and f["data"]["items"] == ["stereo.wav"]
    assert "TP-DATA-INCONSISTENT-SR" not in ids(rep)


def test_unreadable_audio(tmp_path):
    d = healthy(tmp_path / "c")
    (d / "junk.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunk")
    (d / "junk.txt").write_text(text_for(2.0))
    (d / "zero.wav").write_bytes(b"")
    (d / "zero.txt").write_text(text_for(2.0))
    code, rep, _, _ = data(d)
    assert code == 1
    f = by_id(rep, "TP-DATA-UNREADABLE-AUDIO")
    assert f["data"]["count"] == 2 and f["data"]["items"] == ["junk.wav", "zero.wav"]
    assert all(r for r in f["data"]["reasons"])


@pytest.mark.slow
def test_empty_and_missing_transcripts(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "blank", tone(2.0, freq=500), "   \n")
    pair(d, "notext", tone(2.0, freq=510), None)
    (d / "latin1.wav").write_bytes((d / "utt00.wav").read_bytes())
    (d / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    code, rep, _, _ = data(d)
    assert code == 1
    f = by_id(rep, "TP-DATA-EMPTY-TRANSCRIPT")
    assert f["data"]["kinds"] == {"empty": 1, "missing": 1, "not UTF-8": 1}
    healthy_rep = data(healthy(tmp_path / "ok"))[1]
    assert "TP-DATA-EMPTY-TRANSCRIPT" not in ids(healthy_rep)


# --- WARNs -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_long_and_short_clips(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "long", tone(25.0), text_for(25.0))
    pair(d, "short", tone(0.2, pad=0.0), "hi")
    code, rep, _, _ = data(d)
    assert code == 0 and rep["verdict"] == "WARN"
    long_ = by_id(rep, "TP-DATA-DURATION-LONG")
    assert long_["data"]["items"] == ["long.wav"] and long_["data"]["max_s"] == pytest.approx(25.2)
    short = by_id(rep, "TP-DATA-DURATION-SHORT")
    assert short["data"]["items"] == ["short.wav"] and short["data"]["min_s"] == pytest.approx(0.2)
    cfg = tmp_path / "tp.toml"
    cfg.write_text("speech_max_duration_s = 30\nspeech_min_duration_s = 0.1\n")
    code, rep, _, _ = data(d, "--config", cfg)
    assert code == 0 and not {"TP-DATA-DURATION-LONG", "TP-DATA-DURATION-SHORT"} & ids(rep)


@pytest.mark.slow
def test_char_rate_outliers(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "toolong", tone(1.5, freq=600), text_for(6.0, 3))  # a 6-second transcript on 1.5 s
    pair(d, "tooshort", tone(4.0, freq=610), "yes")  # one word on 4 s
    code, rep, _, _ = data(d)
    f = by_id(rep, "TP-DATA-CHAR-RATE-OUTLIER")
    assert set(f["data"]["items"]) == {"toolong.wav", "tooshort.wav"}
    assert f["data"]["rates"][0] < 2 or f["data"]["rates"][0] > 40
    assert 11 < f["data"]["median"] < 14
    # the rate is measured on the voiced span: edge silence does not make an outlier
    d2 = healthy(tmp_path / "c2")
    pair(d2, "padded", tone(2.0, freq=620, pad=1.5), text_for(2.0))
    rep2 = data(d2, "--mute", "TP-DATA-SILENCE")[1]
    assert "TP-DATA-CHAR-RATE-OUTLIER" not in ids(rep2)
    # too few pairs to know the corpus's rate
    few = healthy(tmp_path / "few", n=5)
    rep3 = data(few)[1]
    assert rep3["checks"]["skipped"]["TP-DATA-CHAR-RATE-OUTLIER"]["reason"] == "too_few_points"
    assert ids(rep3) == {"TP-DATA-PASS"}


@pytest.mark.slow
def test_duplicate_audio_content(tmp_path):
    d = healthy(tmp_path / "c")
    shutil.copy(d / "utt03.wav", d / "copy_of_3.wav")
    (d / "copy_of_3.txt").write_text((d / "utt03.txt").read_text())
    code, rep, _, _ = data(d)
    assert code == 0
    f = by_id(rep, "TP-DATA-DUPLICATES")
    assert f["data"]["first_groups"] == [["copy_of_3.wav", "utt03.wav"]] and f["data"]["extra_copies"] == 1
    # the same samples in another container (FLAC) are the same audio
    d2 = healthy(tmp_path / "c2")
    y, _ = sf.read(d2 / "utt05.wav", dtype="float32")
    sf.write(d2 / "again.flac", y, SR, subtype="PCM_16")
    (d2 / "again.txt").write_text((d2 / "utt05.txt").read_text())
    f2 = by_id(data(d2)[1], "TP-DATA-DUPLICATES")
    assert sorted(f2["data"]["first_groups"][0]) == ["again.flac", "utt05.wav"]
    # one file listed twice in a manifest
    w = sorted(d2.glob("utt*.wav"))
    rows = [{"audio_filepath": str(x), "text": x.with_suffix(".txt").read_text()} for x in w] + [
        {"audio_filepath": str(w[0]), "text": w[0].with_suffix(".txt").read_text()}
    ]
    rep3 = data(write_manifest(tmp_path / "m.jsonl", rows))[1]
    f3 = by_id(rep3, "TP-DATA-DUPLICATES")
    assert f3["line"] == 13 and f3["data"]["extra_copies"] == 1


@pytest.mark.slow
def test_clipping(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "hot", np.clip(tone(2.0, amp=2.0), -1.0, 1.0), text_for(2.0))
    code, rep, _, _ = data(d)
    assert code == 0
    f = by_id(rep, "TP-DATA-CLIPPING")
    assert f["data"]["items"] == ["hot.wav"] and f["data"]["worst_share"] > 0.3
    # a clean tone peak-normalised to full scale touches it for a sample or two: not clipping
    d2 = healthy(tmp_path / "c2")
    y = tone(2.0)
    pair(d2, "loud", y / np.abs(y).max(), text_for(2.0))
    rep2 = data(d2)[1]
    assert "TP-DATA-CLIPPING" not in ids(rep2)


def test_silence_at_the_edges_and_silent_files(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "padded", tone(2.0, pad=1.6), text_for(2.0))
    pair(d, "nothing", np.zeros(2 * SR, dtype=np.float32), text_for(2.0))
    # a quiet noise floor 60 dB under the speech is silence; the 0.1 s pads of the others are short
    y = tone(2.0, pad=1.2) + (np.random.default_rng(0).standard_normal(int(4.4 * SR)) * 5e-4).astype(np.float32)
    pair(d, "noisy", y, text_for(2.0))
    code, rep, _, _ = data(d)
    f = by_id(rep, "TP-DATA-SILENCE")
    assert f["data"]["items"] == ["nothing.wav", "padded.wav", "noisy.wav"]
    assert f["data"]["no_sound"] == 1
    assert f["data"]["lead_s"][1] == pytest.approx(1.6, abs=0.02)
    assert f["data"]["lead_s"][2] == pytest.approx(1.2, abs=0.02)
    assert "no sound at all" in f["evidence"]


@pytest.mark.slow
def test_unnormalized_transcripts(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "dates", tone(3.0, freq=700), "we met on 12/03/2021 and paid $40 for 50% of it")
    code, rep, _, _ = data(d)
    f = by_id(rep, "TP-DATA-UNNORMALIZED")
    assert f["data"]["items"] == ["dates.wav"]
    assert {"12/03/2021", "$40", "50%"} <= set(f["data"]["tokens"])
    assert "TP-DATA-UNNORMALIZED" not in ids(data(healthy(tmp_path / "ok"))[1])


def test_mixed_scripts(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "homoglyph", tone(2.0, freq=710), "the quick br\u043ewn fox jumps over the lazy dog")  # Cyrillic о
    pair(d, "russian", tone(2.0, freq=720), "быстрая коричневая лиса прыгает через собаку")
    pair(d, "japanese", tone(2.0, freq=730), "東京へ行きます カタカナ")  # Han + kana: one writing system
    code, rep, _, _ = data(d)
    f = by_id(rep, "TP-DATA-MIXED-SCRIPTS")
    assert f["level"] == "WARN" and f["data"]["items"] == ["homoglyph.wav"] and f["data"]["in_word"] == 1
    assert f["data"]["scripts"] == [["CYRILLIC", "LATIN"]] and "'brоwn'" in f["evidence"]
    assert f["data"]["corpus_scripts"] == {"LATIN": 13, "CYRILLIC": 2, "CJK": 1}


def test_script_of():
    assert speech.script_of("a") == "LATIN" and speech.script_of("ß") == "LATIN"
    assert speech.script_of("\u043e") == "CYRILLIC" and speech.script_of("λ") == "GREEK"
    assert speech.script_of("東") == speech.script_of("へ") == speech.script_of("カ") == speech.script_of("한") == "CJK"
    assert speech.script_of("1") is None and speech.script_of("-") is None


def test_mute_and_pass(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "hot", np.clip(tone(2.0, amp=2.0), -1.0, 1.0), text_for(2.0))
    code, rep, _, _ = data(d, "--mute", "TP-DATA-CLIPPING")
    assert code == 0 and ids(rep) == {"TP-DATA-PASS"}
    assert rep["checks"]["skipped"]["TP-DATA-CLIPPING"]["reason"] == "muted"


def test_every_finding_at_once_in_text_and_sarif(tmp_path):
    d = healthy(tmp_path / "c")
    pair(d, "hot", np.clip(tone(2.0, amp=2.0), -1.0, 1.0), text_for(2.0))
    pair(d, "hi", tone(2.0, sr=22050), text_for(2.0), sr=22050)
    sarif = tmp_path / "out.sarif"
    code, out, err, _ = run_cli("data", str(d), "--sarif", str(sarif))
    assert code == 1
    assert "FAIL  TP-DATA-INCONSISTENT-SR" in out and "WARN  TP-DATA-CLIPPING" in out and "hi.wav" in out
    doc = json.loads(sarif.read_text())
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"TP-DATA-INCONSISTENT-SR", "TP-DATA-CLIPPING"}
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["TP-DATA-INCONSISTENT-SR"] == "error" and levels["TP-DATA-CLIPPING"] == "warning"


# --- audio measurement ---------------------------------------------------------------------------


def test_clip_runs_carry_across_blocks():
    flags = np.array([[1, 1, 0, 1, 1, 1, 0, 1, 1]], dtype=bool).T
    n, carry = speech._clip_runs(flags, np.zeros(1, dtype=np.int64), 3)
    assert n == 3 and carry.tolist() == [2]  # the trailing run of 2 is pending
    n, carry = speech._clip_runs(np.array([[1], [0]], dtype=bool), carry, 3)
    assert n == 3 and carry.tolist() == [0]  # 2 + 1 = a run of 3
    n, carry = speech._clip_runs(np.array([[0], [0]], dtype=bool), np.array([5]), 3)
    assert n == 5 and carry.tolist() == [0]


def test_block_size_does_not_change_the_measurement(tmp_path, monkeypatch):
    y = np.concatenate([np.zeros(SR), np.clip(tone(1.3, amp=1.7, pad=0.0), -1, 1), np.zeros(SR // 3)])
    p = tmp_path / "x.wav"
    sf.write(p, np.stack([y, 0.5 * y], axis=1), SR)
    whole = speech.analyse_audio(sf, p, DEFAULT)
    monkeypatch.setattr(speech.audio, "BLOCK_S", 0.03)  # 3 frames a block: runs and frames straddle blocks
    parts = speech.analyse_audio(sf, p, DEFAULT)
    assert whole == parts
    assert whole.channels == 2 and whole.clipped > 0
    assert whole.lead == pytest.approx(1.0, abs=0.011) and whole.trail == pytest.approx(1 / 3, abs=0.011)


# --- the [speech] extra ---------------------------------------------------------------------------

WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from trainproof.cli import main
main(sys.argv[2:])
"""


def _without(modules: str, *args: str):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, modules, *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.slow
def test_without_the_speech_extra(tmp_path):
    d = healthy(tmp_path / "c", n=3)
    pair(d, "hot", np.clip(tone(2.0, amp=2.0), -1.0, 1.0), "")  # would be a FAIL with the extra
    r = _without("soundfile", "data", str(d))
    assert r.returncode == 2, r.stderr
    assert 'pip install "trainproof[speech]"' in r.stderr and "FAIL" not in r.stdout
    r = _without("soundfile", "data", str(d), "--json")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["reports"] == [] and "trainproof[speech]" in doc["error"]
    (tmp_path / "t.txt").write_text("hello\n")
    r = _without("sentencepiece", "tokenizer", str(tmp_path / "x.model"), str(tmp_path / "t.txt"))
    assert r.returncode == 2 and 'pip install "trainproof[speech]"' in r.stderr


# --- tokenizer -------------------------------------------------------------------------------------


def _train(tmp: Path, name: str, lines: list[str], **kw) -> Path:
    src = tmp / f"{name}.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(src), model_prefix=str(tmp / name), minloglevel=2, hard_vocab_limit=False, **kw
    )
    return tmp / f"{name}.model"


def training_lines() -> list[str]:
    out = []
    for i in range(400):
        s = sentence(i)
        if i % 2 == 0:
            s += f" in {1900 + (i * 7) % 120} on {1 + i % 28:02d}/{1 + i % 12:02d}/{2000 + i % 25}"
        out.append(s)
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spm")
    lines = training_lines()
    return {
        "bpe": _train(tmp, "uni", lines, vocab_size=150),
        "digits": _train(tmp, "digits", lines, vocab_size=60, split_digits=True),
        "bytes": _train(tmp, "bytes", lines, vocab_size=400, byte_fallback=True),
    }


def transcripts(tmp_path: Path, lines: list[str], name: str = "t.txt") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.mark.slow
def test_tokenizer_passes_on_text_like_its_training_text(tmp_path, models):
    rows = [{"audio_filepath": f"a{i}.wav", "text": sentence(i), "duration": 3.0} for i in range(30)]
    m = write_manifest(tmp_path / "m.jsonl", rows)
    code, rep, _, _ = tok(models["bpe"], m)
    assert code == 0, rep["findings"]
    assert ids(rep) == {"TP-TOK-PASS"} and rep["format"] == "tokenizer" and rep["records"] == 30
    assert rep["meta"]["char_coverage"] == 1.0 and rep["meta"]["unk_share"] == 0.0
    assert 1 < rep["meta"]["tokens_per_second"]["corpus"] < 12.5
    code, out, _, _ = run_cli("tokenizer", str(models["bpe"]), str(m))
    assert code == 0 and "TP-TOK-PASS" in out


def test_high_oov_fails(tmp_path, models):
    t = transcripts(tmp_path, [sentence(i) for i in range(10)] + ["быстрая коричневая лиса"] * 5)
    code, rep, _, _ = tok(models["bpe"], t)
    assert code == 1
    f = by_id(rep, "TP-TOK-HIGH-OOV")
    assert f["level"] == "FAIL" and f["line"] == 11 and f["data"]["transcripts"] == 5
    assert "б" in f["data"]["chars"]
    assert "TP-TOK-LOW-COVERAGE" in ids(rep)


def test_low_coverage_with_byte_fallback_is_not_oov(tmp_path, models):
    t = transcripts(tmp_path, [sentence(i) for i in range(10)] + ["the café near the river"])
    code, rep, _, _ = tok(models["bytes"], t)
    assert code == 0
    f = by_id(rep, "TP-TOK-LOW-COVERAGE")
    assert f["data"]["uncovered"] == {"é": 1} and "byte fallback" in f["evidence"] and f["line"] == 11
    assert "TP-TOK-HIGH-OOV" not in ids(rep) and rep["meta"]["model"]["byte_fallback"] is True
    cfg = tmp_path / "tp.toml"
    cfg.write_text("tok_min_char_coverage = 0.99\n")
    rep2 = tok(models["bytes"], t, "--config", cfg)[1]
    assert "TP-TOK-LOW-COVERAGE" not in ids(rep2)


def test_tokens_per_second(tmp_path, models):
    rows = [{"audio_filepath": f"a{i}.wav", "text": sentence(i), "duration": 5.0} for i in range(10)]
    rows[4]["duration"] = 0.4
    m = write_manifest(tmp_path / "m.jsonl", rows)
    code, rep, _, _ = tok(models["digits"], m)
    f = by_id(rep, "TP-TOK-HIGH-TPS")
    assert code == 0 and f["level"] == "WARN" and f["line"] == 5 and f["data"]["items"] == ["line 5 (a4.wav)"]
    assert f["data"]["rates"][0] > 12.5


def test_tokens_per_second_from_ljspeech_audio(tmp_path, models):
    root = write_ljspeech(tmp_path / "lj", n=6)
    code, rep, _, _ = tok(models["bpe"], root)
    assert code == 0, rep["findings"]
    assert rep["meta"]["tokens_per_second"]["measured"] == 6 and "TP-TOK-HIGH-TPS" in rep["checks"]["ran"]


def test_tps_not_measured_for_plain_text(tmp_path, models):
    t = transcripts(tmp_path, [sentence(i) for i in range(10)])
    code, rep, _, _ = tok(models["bpe"], t)
    assert code == 0 and rep["verdict"] == "PASS"
    assert ids(rep) == {"TP-TOK-TPS-NOT-MEASURED", "TP-TOK-PASS"}
    assert by_id(rep, "TP-TOK-TPS-NOT-MEASURED")["level"] == "INFO"
    assert rep["checks"]["skipped"]["TP-TOK-HIGH-TPS"]["reason"] == "absent"


def test_suspicious_number_splits(tmp_path, models):
    t = transcripts(tmp_path, [sentence(i) for i in range(5)] + ["we met in 1984 on 12/03/2021"])
    code, rep, _, _ = tok(models["bpe"], t)
    f = by_id(rep, "TP-TOK-SUSPICIOUS-SPLIT")
    assert code == 0 and f["level"] == "WARN" and f["line"] == 6
    ex = {e["number"]: e for e in f["data"]["examples"]}
    assert ex["1984"]["pieces"] == ["▁198", "4"] and ex["1984"]["reason"] == "cut inside a digit group"
    assert "12/03/2021" in ex and "1984 -> ▁198 | 4" in f["evidence"]
    # digit-by-digit pieces (split_digits=true) are spoken units
    rep2 = tok(models["digits"], t)[1]
    assert "TP-TOK-SUSPICIOUS-SPLIT" not in ids(rep2) and rep2["meta"]["numbers"]["found"] == 2


@pytest.mark.parametrize(
    "pieces, reasons",
    [
        (["▁198", "4"], ["cut inside a digit group"]),
        (["▁12/03/20", "2", "1"], ["a piece spans a separator without the whole number"]),
        (["▁in", "▁19", "84,"], ["digits glued to neighbouring characters"]),
        (["▁1", "9", "8", "4"], []),
        (["▁1984"], []),
        (["▁12/03/2021"], []),
        (["▁1st"], []),
        (["▁3.5"], []),
        (["▁12", "/", "03", "/", "2021"], []),
    ],
)
def test_number_splits(pieces, reasons):
    found, bad = speech.number_splits(pieces, [False] * len(pieces))
    assert found == 1
    assert [r for _, _, r in bad] == reasons


@pytest.mark.slow
def test_tokenizer_unusable_inputs(tmp_path, models):
    t = transcripts(tmp_path, ["hello there"])
    vocab = models["bpe"].with_suffix(".vocab")
    code, rep, _, doc = tok(vocab, t)
    assert code == 2 and ids(rep) == {"TP-TOK-INVALID-MODEL"} and doc["error"]
    code, rep, _, _ = tok(tmp_path / "missing.model", t)
    assert code == 2 and ids(rep) == {"TP-TOK-INVALID-MODEL"}
    code, rep, _, _ = tok(models["bpe"], tmp_path / "nope.txt")
    assert code == 2 and ids(rep) == {"TP-DATA-INVALID-INPUT"}
    code, rep, _, _ = tok(models["bpe"], transcripts(tmp_path, ["", "  "], "blank.txt"))
    assert code == 2 and ids(rep) == {"TP-DATA-NO-DATA"}


def test_tokenizer_sarif(tmp_path, models):
    t = transcripts(tmp_path, ["быстрая лиса"] * 3)
    sarif = tmp_path / "tok.sarif"
    code, out, _, _ = run_cli("tokenizer", str(models["bpe"]), str(t), "--sarif", str(sarif))
    assert code == 1 and "FAIL  TP-TOK-HIGH-OOV" in out
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert "TP-TOK-HIGH-OOV" in {r["ruleId"] for r in results}


def test_every_id_is_declared_in_the_speech_group():
    from trainproof.rules.registry import get

    for rid in (*speech.DATA_IDS, *speech.TOK_IDS):
        r = get(rid)
        assert r is not None and r.group == "speech" and r.source == "preflight", rid
    assert get("TP-DATA-MISSING-AUDIO").level.value == "FAIL"
    assert get("TP-DATA-MIXED-SCRIPTS").level.value == "WARN"
    assert get("TP-TOK-TPS-NOT-MEASURED").level.value == "INFO"
