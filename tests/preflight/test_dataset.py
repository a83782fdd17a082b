"""`trainproof preflight DATASET`: dataset shapes, malformed/empty/duplicate records, and the
tokenizer checks against real tokenizers trained here (nothing is downloaded or mocked)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli, write_jsonl

WORDS = (
    "the quick brown fox jumps over a lazy dog while seven wise owls watch from an old oak tree "
    "and count stars until morning light returns to the quiet valley"
).split()


def sentence(i: int, n: int = 8) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" {i}"


def pf(*args: str):
    """Run `trainproof preflight ... --json`; returns (exit code, the single report, stderr)."""
    code, out, err, doc = run_cli("preflight", *map(str, args), "--json")
    assert doc is not None, (out, err)
    assert doc["command"] == "preflight"
    assert len(doc["reports"]) == 1
    return code, doc["reports"][0], err, doc


def by_id(rep: dict, rule_id: str) -> dict:
    found = [f for f in rep["findings"] if f["id"] == rule_id]
    assert len(found) == 1, (rule_id, [f["id"] for f in rep["findings"]])
    return found[0]


def ids(rep: dict) -> set[str]:
    return {f["id"] for f in rep["findings"]}


# --- dataset shapes ----------------------------------------------------------------------


def test_text_dataset_passes_and_reports_its_shape(tmp_path):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": sentence(i)} for i in range(20)])
    code, rep, _, _ = pf(p)
    assert code == 0
    assert rep["format"] == "dataset" and rep["records"] == 20 and rep["verdict"] == "PASS"
    assert ids(rep) == {"TP-PRE-OK"}
    assert rep["meta"]["shape"] == "text" and rep["meta"]["container"] == "jsonl"
    assert "TP-PRE-MISSING-EOS-TOKEN" in rep["checks"]["skipped"]
    code, out, _, _ = run_cli("preflight", str(p))
    assert code == 0
    assert "TP-PRE-OK" in out and "text shape: text (text)" in out


@pytest.mark.parametrize(
    "rows, shape",
    [
        ([{"prompt": f"Q{i}: ", "completion": sentence(i)} for i in range(6)], "prompt/completion"),
        ([{"instruction": f"Say {i}", "input": "", "output": sentence(i)} for i in range(6)], "alpaca"),
        ([{"instruction": f"Say {i}", "context": "", "response": sentence(i)} for i in range(6)], "dolly"),
        (
            [
                {"messages": [{"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": sentence(i)}]}
                for i in range(6)
            ],
            "chat",
        ),
        (
            [
                {"conversations": [{"from": "human", "value": f"hi {i}"}, {"from": "gpt", "value": sentence(i)}]}
                for i in range(6)
            ],
            "sharegpt",
        ),
    ],
)
def test_common_shapes_are_detected(tmp_path, rows, shape):
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    code, rep, _, _ = pf(p)
    assert code == 0, rep["findings"]
    assert rep["meta"]["shape"] == shape
    assert ids(rep) == {"TP-PRE-OK"}
    _, out, _, _ = run_cli("preflight", str(p))
    assert f"text shape: {shape}" in out


def test_the_trained_part_is_judged_for_emptiness(tmp_path):
    # An empty Alpaca input is normal; an empty output is not. A chat whose assistant
    # message is blank has nothing to learn even though the user message has text.
    rows = [
        {"instruction": "Say hi", "input": "", "output": "hi"},
        {"instruction": "Say hi", "input": "x", "output": "   "},
    ]
    code, rep, _, _ = pf(write_jsonl(tmp_path / "a.jsonl", rows))
    assert code == 1
    f = by_id(rep, "TP-PRE-EMPTY-TEXT")
    assert f["data"]["indices"] == [1] and f["data"]["field"] == "output"
    chat = [
        {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": ""}]},
        {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hey"}]},
    ]
    code, rep, _, _ = pf(write_jsonl(tmp_path / "c.jsonl", chat))
    assert code == 1
    assert by_id(rep, "TP-PRE-EMPTY-TEXT")["data"]["indices"] == [0]


def test_dotted_text_field(tmp_path):
    rows = [{"id": i, "data": {"body": sentence(i), "lang": "en"}} for i in range(5)]
    rows.append({"id": 5, "data": {"lang": "en"}})  # the path is missing here
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    code, rep, _, _ = pf(p, "--text-field", "data.body")
    assert code == 1
    assert rep["meta"]["shape"] == "text-field" and rep["meta"]["text_fields"] == "data.body"
    f = by_id(rep, "TP-PRE-EMPTY-TEXT")
    assert f["data"]["indices"] == [5] and f["data"]["kinds"] == {"missing": 1} and f["line"] == 6
    # without --text-field nothing is found
    code, rep, _, _ = pf(p)
    assert code == 2 and ids(rep) == {"TP-PRE-NO-TEXT-FIELD"}


@pytest.mark.slow
def test_json_array_jsonl_named_json_and_gzip(tmp_path):
    rows = [{"text": sentence(i)} for i in range(7)]
    arr = tmp_path / "arr.json"
    arr.write_text(json.dumps(rows, indent=2))
    code, rep, _, _ = pf(arr)
    assert code == 0 and rep["records"] == 7 and rep["meta"]["container"] == "json"

    lines = write_jsonl(tmp_path / "lines.json", rows)  # datasets' to_json writes JSON Lines
    code, rep, _, _ = pf(lines)
    assert code == 0 and rep["records"] == 7 and rep["meta"]["container"] == "jsonl"

    gz = tmp_path / "d.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        for r in rows + [{"text": sentence(0)}]:
            f.write(json.dumps(r) + "\n")
        f.write("{broken\n")
    code, rep, _, _ = pf(gz)
    assert code == 1 and rep["records"] == 8 and rep["meta"]["container"] == "jsonl.gz"
    assert by_id(rep, "TP-PRE-MALFORMED-JSONL")["data"]["lines"] == [9]
    assert by_id(rep, "TP-PRE-DUPLICATE-TEXT")["data"]["pairs"] == [[0, 7]]

    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"version": 1, "data": rows}, indent=1))
    code, rep, _, _ = pf(wrapped)
    assert code == 0 and rep["records"] == 7
    assert any("`data` array" in n for n in rep["notes"])


def test_malformed_lines_are_reported_with_line_numbers(tmp_path):
    p = tmp_path / "d.jsonl"
    good = [json.dumps({"text": sentence(i)}) for i in range(6)]
    raw = (
        "\n".join(
            [
                good[0],
                good[1],
                '{"text": "unterminated',
                good[2],
                "",
                "[1, 2]",
                good[3],
                '{"text": "a"}{"text": "b"}',
                good[4],
                good[5],
            ]
        )
        + "\n"
    )
    p.write_bytes(raw.encode() + b'{"text": "\xff\xfe"}\n')
    code, rep, _, _ = pf(p)
    assert code == 1
    f = by_id(rep, "TP-PRE-MALFORMED-JSONL")
    assert f["level"] == "FAIL"
    assert f["data"]["count"] == 4
    assert f["data"]["lines"] == [3, 6, 8, 11]  # line 5 is blank: skipped, not malformed
    assert f["line"] == 3
    assert "not an object (an array)" in f["data"]["reasons"][1]
    assert f["data"]["reasons"][3] == "not UTF-8"
    assert rep["records"] == 6
    assert any("1 blank line" in n for n in rep["notes"])


def test_malformed_json_array_gives_the_parser_line(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('[\n {"text": "a"},\n {"text": "b"}\n {"text": "c"}\n]\n')
    code, rep, _, _ = pf(p)
    assert code == 1
    f = by_id(rep, "TP-PRE-MALFORMED-JSONL")
    assert f["data"]["lines"] == [4] and rep["records"] == 0
    q = tmp_path / "e.json"
    q.write_text(json.dumps([{"text": "a"}, "bare", {"text": "b"}]))
    code, rep, _, _ = pf(q)
    assert code == 1 and rep["records"] == 2
    assert by_id(rep, "TP-PRE-MALFORMED-JSONL")["data"]["elements"] == [1]


def test_empty_and_whitespace_text_indices(tmp_path):
    rows = [
        {"text": sentence(0)},
        {"text": ""},
        {"text": sentence(2)},
        {"text": " \n\t "},
        {"text": None},
        {"text": 42},
        {"body": "other key"},
        {"text": sentence(7)},
    ]
    code, rep, _, _ = pf(write_jsonl(tmp_path / "d.jsonl", rows))
    assert code == 1
    f = by_id(rep, "TP-PRE-EMPTY-TEXT")
    assert f["data"]["indices"] == [1, 3, 4, 5, 6]
    assert f["data"]["lines"] == [2, 4, 5, 6, 7]
    assert f["data"]["kinds"] == {"empty": 3, "not text": 1, "missing": 1}
    assert f["data"]["count"] == 5 and f["data"]["records"] == 8
    assert "TP-PRE-OK" not in ids(rep)


def test_exact_duplicates(tmp_path):
    rows = [{"text": sentence(i % 4)} for i in range(10)]  # 4 distinct, 6 extra copies
    code, rep, _, _ = pf(write_jsonl(tmp_path / "d.jsonl", rows))
    assert code == 0  # WARN exits 0
    assert rep["verdict"] == "WARN"
    f = by_id(rep, "TP-PRE-DUPLICATE-TEXT")
    assert f["data"]["count"] == 6 and f["data"]["distinct"] == 4
    assert f["data"]["pairs"][:3] == [[0, 4], [1, 5], [2, 6]]
    # a prompt repeated with different completions is not a duplicate
    pc = [{"prompt": "Q: ", "completion": sentence(i)} for i in range(4)]
    code, rep, _, _ = pf(write_jsonl(tmp_path / "pc.jsonl", pc))
    assert code == 0 and ids(rep) == {"TP-PRE-OK"}


def test_no_text_field_lists_the_keys_and_exits_2(tmp_path):
    rows = [{"question": f"q{i}", "answer": f"a{i}", "meta": {"src": "x"}} for i in range(4)]
    rows.append({"question": "q", "id": 9})
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    code, rep, _, _ = pf(p)
    assert code == 2
    assert rep["verdict"] == "NOT-CHECKED"
    f = by_id(rep, "TP-PRE-NO-TEXT-FIELD")
    assert f["level"] == "NOT-CHECKED"
    assert f["data"]["keys"] == {"question": 5, "answer": 4, "meta": 4, "id": 1}
    assert "question (5)" in f["evidence"]
    assert rep["meta"]["shape"] is None
    code, out, _, _ = run_cli("preflight", str(p))
    assert code == 2 and "answer (4)" in out and "text shape: none detected" in out
    # a dotted path that does not exist: the keys at its deepest existing part are listed
    code, rep, _, _ = pf(p, "--text-field", "meta.body")
    assert code == 2
    f = by_id(rep, "TP-PRE-NO-TEXT-FIELD")
    assert f["data"]["text_field"] == "meta.body"
    assert f["data"]["nested_keys"] == {"path": "meta", "keys": {"src": 4}}


@pytest.mark.slow
def test_unreadable_inputs_exit_2(tmp_path):
    code, rep, err, doc = pf(tmp_path / "missing.jsonl")
    assert code == 2 and rep["error"] and "no such file" in doc["error"]
    (tmp_path / "empty.jsonl").write_text("\n\n")
    code, rep, _, doc = pf(tmp_path / "empty.jsonl")
    assert code == 2 and "is empty" in doc["error"]
    (tmp_path / "none.json").write_text("[]")
    code, rep, _, doc = pf(tmp_path / "none.json")
    assert code == 2 and "no records" in doc["error"]
    (tmp_path / "t.csv").write_text("text,label\nhello,1\n")
    code, rep, _, doc = pf(tmp_path / "t.csv")
    assert code == 2 and "not JSON Lines" in doc["error"]


def test_mute_and_sarif(tmp_path):
    rows = [{"text": sentence(i % 3)} for i in range(6)] + [{"text": ""}]
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    sarif = tmp_path / "out.sarif"
    code, out, _, _ = run_cli("preflight", str(p), "--sarif", str(sarif))
    assert code == 1
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"TP-PRE-EMPTY-TEXT", "TP-PRE-DUPLICATE-TEXT"}
    assert {r["level"] for r in results} == {"error", "warning"}
    rules = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules == {"TP-PRE-EMPTY-TEXT", "TP-PRE-DUPLICATE-TEXT"}
    # muting both: the rest passes
    code, rep, _, _ = pf(p, "--mute", "TP-PRE-EMPTY-TEXT", "--mute", "TP-PRE-DUPLICATE-TEXT")
    assert code == 0 and ids(rep) == {"TP-PRE-OK"}
    assert rep["checks"]["skipped"]["TP-PRE-EMPTY-TEXT"]["reason"] == "muted"


def _reference_single(*args: str):
    """``preflight DATASET`` as the command read before it took several DATASETs (its body,
    with the report files as the one ``outputs`` parameter every command takes): the
    reference a single dataset's output must still match byte for byte."""
    import click
    from click.testing import CliRunner

    from trainproof.cli.options import output_options
    from trainproof.cli.output import emit_reports, settings
    from trainproof.preflight.dataset import check_dataset

    @click.command("preflight")
    @click.argument("dataset", type=click.Path(path_type=Path))
    @click.option("--tokenizer", metavar="PATH")
    @click.option("--max-len", "max_len", type=click.IntRange(min=1), default=None, metavar="N")
    @click.option("--text-field", "text_field", metavar="F")
    @output_options
    def old(dataset, tokenizer, max_len, text_field, as_json, mute, config_path, outputs):
        _, cfg = settings("preflight", as_json, (), mute, config_path)
        rep, error = check_dataset(dataset, text_field, tokenizer, max_len, cfg.mute)
        raise click.exceptions.Exit(
            emit_reports([rep], "preflight", as_json, outputs=outputs, error=error or rep.error)
        )

    res = CliRunner().invoke(old, list(args), catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize(
    "case",
    [
        "good",
        "bad",
        "bad-json",
        "missing",
        "no-text",
        pytest.param("tokenizer-missing", marks=pytest.mark.slow),
        "mute-sarif",
    ],
)
def test_one_dataset_prints_what_it_printed_before_several_were_taken(tmp_path, case):
    good = write_jsonl(tmp_path / "good.jsonl", [{"text": sentence(i)} for i in range(12)])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a b"}\n{"text": ""}\nnot json\n{"text": "a b"}\n')
    keys = write_jsonl(tmp_path / "keys.jsonl", [{"step": i, "loss": 1.0} for i in range(5)])
    args = {
        "good": [good],
        "bad": [bad],
        "bad-json": [bad, "--json"],
        "missing": [tmp_path / "nope.jsonl"],
        "no-text": [keys, "--json"],
        "tokenizer-missing": [good, "--tokenizer", tmp_path / "no-tok"],
        "mute-sarif": [bad, "--mute", "TP-PRE-EMPTY-TEXT", "--sarif", tmp_path / "{}.sarif"],
    }[case]
    ref = [str(a).format("ref") for a in args]
    new = [str(a).format("new") for a in args]
    code, out, err, _ = run_cli("preflight", *new)
    assert (code, out, err) == _reference_single(*ref)
    if case == "mute-sarif":
        assert (tmp_path / "new.sarif").read_bytes() == (tmp_path / "ref.sarif").read_bytes()


@pytest.mark.slow
def test_several_datasets_are_each_judged_and_the_worst_decides(tmp_path, monkeypatch):
    # Wide enough that no temporary path wraps (they are longer under pytest-xdist).
    monkeypatch.setenv("COLUMNS", "250")
    good = write_jsonl(tmp_path / "good.jsonl", [{"text": sentence(i)} for i in range(12)])
    dup = write_jsonl(tmp_path / "dup.jsonl", [{"text": sentence(i % 3)} for i in range(9)])
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"text": sentence(i)} for i in range(5)] + [{"text": ""}])
    missing = tmp_path / "missing.jsonl"

    code, out, err, doc = run_cli("preflight", str(good), str(dup), "--json")
    assert code == 0 and doc["error"] is None
    assert [r["file"] for r in doc["reports"]] == [str(good), str(dup)]
    assert [r["verdict"] for r in doc["reports"]] == ["PASS", "WARN"] and doc["worst_verdict"] == "WARN"

    # a FAIL wins over a dataset that cannot be read (1 over 2), as everywhere
    code, out, err, doc = run_cli("preflight", str(good), str(missing), str(empty), "--json")
    assert code == 1 and doc["worst_verdict"] == "FAIL"
    assert [r["verdict"] for r in doc["reports"]] == ["PASS", "NOT-CHECKED", "FAIL"]
    assert "no such file" in doc["error"]
    code, out, err, doc = run_cli("preflight", str(good), str(missing), "--json")
    assert code == 2 and "no such file" in doc["error"]

    # the text screen shows every dataset; an unreadable one is also said on stderr
    code, out, err, _ = run_cli("preflight", str(good), str(missing), str(dup))
    assert code == 2
    assert out.index(str(good)) < out.index(str(missing)) < out.index(str(dup))
    assert "no such file" in err

    # a tokenizer that cannot be loaded is said once, whatever the number of datasets
    code, out, err, doc = run_cli("preflight", str(good), str(dup), "--tokenizer", str(tmp_path / "no-tok"), "--json")
    assert code == 2 and doc["error"].count("no local copy") == 1

    # at least one DATASET is required
    code, out, err, _ = run_cli("preflight")
    assert code == 2 and "Missing argument" in err


# --- tokenizers, trained here ------------------------------------------------------------

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


@pytest.fixture(scope="module")
def base_tok():
    """A real byte-level BPE trained on a few hundred sentences, without a post-processor."""
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIALS,
        show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([sentence(i, 6 + i % 9) for i in range(400)], trainer)
    assert tok.get_vocab_size() > 300
    return tok


def variant(base, template: str | None):
    """A copy of ``base`` whose post-processor adds ``template`` around the text."""
    import tokenizers as tk

    tok = tk.Tokenizer.from_str(base.to_str())
    if template is not None:
        tok.post_processor = tk.processors.TemplateProcessing(
            single=template, special_tokens=[(t, tok.token_to_id(t)) for t in ("<s>", "</s>")]
        )
    return tok


@pytest.fixture(scope="module")
def tokdirs(base_tok, tmp_path_factory):
    """Tokenizer directories saved with transformers, as a user's would be."""
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("toks")

    def save(name, template, **special):
        d = root / name
        fast = transformers.PreTrainedTokenizerFast(tokenizer_object=variant(base_tok, template), **special)
        fast.save_pretrained(str(d))
        return d

    dirs = {
        "good": save("good", "<s> $A </s>", eos_token="</s>", pad_token="<pad>", bos_token="<s>"),
        "no_append": save("no_append", "<s> $A", eos_token="</s>", pad_token="<pad>", bos_token="<s>"),
        "pad_eos": save("pad_eos", "<s> $A </s>", eos_token="</s>", pad_token="</s>", bos_token="<s>"),
        "no_pad": save("no_pad", "<s> $A </s>", eos_token="</s>", bos_token="<s>"),
        "no_eos": save("no_eos", "<s> $A", pad_token="<pad>", bos_token="<s>"),
        "no_bos": save("no_bos", "$A </s>", eos_token="</s>", pad_token="<pad>"),
    }
    # The first AutoTokenizer load in a process imports transformers' auto classes (about 3 s
    # of CPU): paid here, once for the module, not by whichever test loads a directory first.
    transformers.AutoTokenizer.from_pretrained(str(dirs["good"]), local_files_only=True)
    return dirs


def texts(n: int = 30) -> list[dict]:
    return [{"text": sentence(i, 5 + i % 7)} for i in range(n)]


@pytest.mark.slow
def test_good_tokenizer_directory_passes(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts())
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["good"], "--max-len", 512)
    assert code == 0, rep["findings"]
    assert rep["verdict"] == "PASS"
    assert ids(rep) == {"TP-PRE-BOS-TOKEN-INFO", "TP-PRE-OK"}
    special = rep["meta"]["tokenizer"]["special"]
    assert special["eos"] == {"token": "</s>", "id": 2, "source": "transformers"}
    assert special["pad"]["token"] == "<pad>" and special["bos"]["id"] == 1
    assert rep["meta"]["tokenizer"]["backend"] == "transformers"
    bos = by_id(rep, "TP-PRE-BOS-TOKEN-INFO")
    assert bos["level"] == "INFO" and bos["data"]["prepends"] is True and bos["data"]["starts_with_bos"] == 30
    assert "TP-PRE-CONTEXT-OVERFLOW" in rep["checks"]["ran"]


def test_missing_eos_fails(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts())
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["no_eos"])
    assert code == 1
    assert by_id(rep, "TP-PRE-MISSING-EOS-TOKEN")["level"] == "FAIL"
    assert rep["checks"]["skipped"]["TP-PRE-NO-EOS-APPEND"]["detail"] == "no EOS token"
    assert "TP-PRE-PAD-EQUALS-EOS" in rep["checks"]["skipped"]


def test_missing_pad_warns(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts())
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["no_pad"])
    assert code == 0 and rep["verdict"] == "WARN"
    assert by_id(rep, "TP-PRE-MISSING-PAD-TOKEN")["level"] == "WARN"
    assert "TP-PRE-PAD-EQUALS-EOS" not in ids(rep)


def test_pad_equal_to_eos_warns(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts())
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["pad_eos"])
    assert code == 0 and rep["verdict"] == "WARN"
    f = by_id(rep, "TP-PRE-PAD-EQUALS-EOS")
    assert f["data"] == {"id": 2, "token": "</s>"}
    assert "masks EOS labels" in f["message"] and "does not learn to stop" in f["message"]
    assert "TP-PRE-MISSING-PAD-TOKEN" not in ids(rep)


def test_no_eos_appended_on_encode(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts(12))
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["no_append"])
    assert code == 0 and rep["verdict"] == "WARN"
    f = by_id(rep, "TP-PRE-NO-EOS-APPEND")
    assert f["data"]["count"] == 12 and f["data"]["encoded"] == 12
    assert f["data"]["tokenizer_appends_eos"] is False
    assert f["data"]["indices"] == list(range(10))
    # the same tokenizer with the EOS written into the text: every sample ends with it
    q = write_jsonl(tmp_path / "e.jsonl", [{"text": r["text"] + "</s>"} for r in texts(12)])
    code, rep, _, _ = pf(q, "--tokenizer", tokdirs["no_append"])
    assert "TP-PRE-NO-EOS-APPEND" not in ids(rep) and code == 0
    # a post-processor that appends EOS: nothing to report
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["good"])
    assert "TP-PRE-NO-EOS-APPEND" not in ids(rep)
    assert "TP-PRE-NO-EOS-APPEND" in rep["checks"]["ran"]


def test_bos_info(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts(5))
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["no_bos"])
    assert code == 0 and ids(rep) == {"TP-PRE-BOS-TOKEN-INFO", "TP-PRE-OK", "TP-PRE-CONTEXT-CHECK-SKIPPED"}
    assert "no BOS token" in by_id(rep, "TP-PRE-BOS-TOKEN-INFO")["message"]
    # text that already starts with <s>, encoded by a tokenizer that prepends another one
    q = write_jsonl(tmp_path / "e.jsonl", [{"text": "<s>" + r["text"]} for r in texts(5)] + texts(3))
    code, rep, _, _ = pf(q, "--tokenizer", tokdirs["good"])
    f = by_id(rep, "TP-PRE-BOS-TOKEN-INFO")
    assert f["data"]["double_bos"] == 5 and f["data"]["double_bos_indices"] == [0, 1, 2, 3, 4]
    assert "start with BOS twice" in f["message"]
    assert code == 0  # INFO never changes the verdict


def test_context_overflow_counts_longest_and_share(tmp_path, tokdirs):
    transformers = pytest.importorskip("transformers")
    rows = texts(20) + [{"text": " ".join(sentence(i, 12) for i in range(8))}]
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    ref = transformers.AutoTokenizer.from_pretrained(str(tokdirs["good"]), local_files_only=True)
    lengths = [len(ref(r["text"])["input_ids"]) for r in rows]
    max_len = sorted(lengths)[15]  # a few records are above it
    over = [i for i, n in enumerate(lengths) if n > max_len]
    assert 1 <= len(over) < len(rows)
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["good"], "--max-len", max_len)
    assert code == 0 and rep["verdict"] == "WARN"
    f = by_id(rep, "TP-PRE-CONTEXT-OVERFLOW")
    d = f["data"]
    assert d["over"] == len(over) and d["indices"] == over[:10]
    assert d["longest"] == {"tokens": max(lengths), "index": 20, "line": 21}
    assert d["share_records"] == pytest.approx(len(over) / len(rows))
    cut = sum(n - max_len for n in lengths if n > max_len)
    assert d["truncated_tokens"] == cut and d["total_tokens"] == sum(lengths)
    assert d["share_tokens"] == pytest.approx(cut / sum(lengths))
    assert f"exceed --max-len {max_len} tokens" in f["message"]
    assert rep["meta"]["tokens"]["max"] == max(lengths)
    # a max length above every record: no finding, and the OK says so
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["good"], "--max-len", max(lengths))
    assert code == 0 and "TP-PRE-CONTEXT-OVERFLOW" not in ids(rep)
    assert f"none longer than {max(lengths)} tokens" in by_id(rep, "TP-PRE-OK")["message"]


def test_context_check_skipped_without_max_len(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts(10))
    code, rep, _, _ = pf(p, "--tokenizer", tokdirs["good"])
    assert code == 0
    f = by_id(rep, "TP-PRE-CONTEXT-CHECK-SKIPPED")
    assert f["level"] == "INFO"
    assert f["data"]["max"] == rep["meta"]["tokens"]["max"] > 0
    assert rep["checks"]["skipped"]["TP-PRE-CONTEXT-OVERFLOW"]["detail"] == "no --max-len"
    # --max-len without a tokenizer: skipped, with the reason
    code, rep, _, _ = pf(p, "--max-len", 10)
    assert code == 0
    assert "needs --tokenizer" in rep["checks"]["skipped"]["TP-PRE-CONTEXT-OVERFLOW"]["detail"]


def test_chat_dataset_uses_the_chat_template(tmp_path, base_tok):
    transformers = pytest.importorskip("transformers")
    d = tmp_path / "chat_tok"
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=variant(base_tok, "<s> $A"), eos_token="</s>", pad_token="<pad>", bos_token="<s>"
    )
    fast.chat_template = (
        "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}\n{% endfor %}"
    )
    fast.save_pretrained(str(d))
    rows = [
        {"messages": [{"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": sentence(i)}]}
        for i in range(6)
    ]
    p = write_jsonl(tmp_path / "c.jsonl", rows)
    code, rep, _, _ = pf(p, "--tokenizer", d)
    # the template ends each turn with EOS then a newline: that counts as ending with EOS
    assert code == 0 and ids(rep) == {"TP-PRE-BOS-TOKEN-INFO", "TP-PRE-CONTEXT-CHECK-SKIPPED", "TP-PRE-OK"}
    assert rep["meta"]["tokens"]["length_basis"].startswith("chat template")
    assert by_id(rep, "TP-PRE-BOS-TOKEN-INFO")["data"]["double_bos"] == 0


@pytest.mark.slow
def test_bare_tokenizer_json_roles(tmp_path, base_tok):
    """A tokenizer.json names no roles: the post-processor gives EOS/BOS, a name gives pad;
    config files next to it win over both."""
    d = tmp_path / "bare"
    d.mkdir()
    variant(base_tok, "<s> $A </s>").save(str(d / "tokenizer.json"))
    p = write_jsonl(tmp_path / "d.jsonl", texts(8))
    code, rep, _, _ = pf(p, "--tokenizer", d / "tokenizer.json")
    assert code == 0, rep["findings"]
    special = rep["meta"]["tokenizer"]["special"]
    assert rep["meta"]["tokenizer"]["backend"] == "tokenizers"
    assert special["eos"] == {"token": "</s>", "id": 2, "source": "post-processor"}
    assert special["bos"] == {"token": "<s>", "id": 1, "source": "post-processor"}
    assert special["pad"] == {"token": "<pad>", "id": 3, "source": "well-known name"}
    assert any("PreTrainedTokenizerFast must set it" in n for n in rep["notes"])

    (d / "special_tokens_map.json").write_text(json.dumps({"eos_token": "</s>", "pad_token": "</s>"}))
    (d / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": {"content": "<s>", "special": True}, "pad_token": "<unk>", "model_max_length": 64})
    )
    code, rep, _, _ = pf(p, "--tokenizer", d / "tokenizer.json")
    special = rep["meta"]["tokenizer"]["special"]
    assert special["eos"]["source"] == special["pad"]["source"] == "special_tokens_map.json"
    assert special["bos"]["source"] == "tokenizer_config.json"
    assert rep["meta"]["tokenizer"]["model_max_length"] == 64
    assert "TP-PRE-PAD-EQUALS-EOS" in ids(rep)

    # no post-processor and no role a name reveals: no EOS
    import tokenizers as tk

    plain = tk.Tokenizer(tk.models.BPE(unk_token="[UNK]"))
    plain.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    plain.train_from_iterator(
        [sentence(i) for i in range(200)],
        tk.trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", "[END]"], show_progress=False),
    )
    plain.save(str(tmp_path / "plain.json"))
    code, rep, _, _ = pf(p, "--tokenizer", tmp_path / "plain.json")
    assert code == 1
    assert "TP-PRE-MISSING-EOS-TOKEN" in ids(rep) and "TP-PRE-MISSING-PAD-TOKEN" in ids(rep)
    assert "no BOS token" in by_id(rep, "TP-PRE-BOS-TOKEN-INFO")["message"]


def test_config_naming_a_token_outside_the_vocabulary(tmp_path, base_tok):
    d = tmp_path / "t"
    d.mkdir()
    variant(base_tok, None).save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "pad_token": "<pad>"}))
    p = write_jsonl(tmp_path / "d.jsonl", texts(4))
    code, rep, _, _ = pf(p, "--tokenizer", d / "tokenizer.json")
    assert code == 1
    f = by_id(rep, "TP-PRE-MISSING-EOS-TOKEN")
    assert "not in the vocabulary" in f["message"] and "<|im_end|>" in f["message"]


def test_hub_id_without_local_copy_exits_2(tmp_path):
    pytest.importorskip("tokenizers")
    p = write_jsonl(tmp_path / "d.jsonl", texts(4))
    hub = "trainproof-tests-nonexistent-org/no-such-tokenizer-7f3a"
    code, rep, err, doc = pf(p, "--tokenizer", hub)
    assert code == 2
    assert "no local copy" in doc["error"] and "never downloads" in doc["error"] and hub in doc["error"]
    # the dataset itself was still judged
    assert rep["verdict"] == "PASS" and rep["checks"]["skipped"]["TP-PRE-MISSING-EOS-TOKEN"]["detail"] == doc["error"]
    code, out, err, _ = run_cli("preflight", str(p), "--tokenizer", hub)
    assert code == 2 and "no local copy" in err
    code, _, err, _ = run_cli("preflight", str(p), "--tokenizer", str(tmp_path / "nothere" / "tokenizer.json"))
    assert code == 2 and "no local copy" in err


def test_text_output_with_a_tokenizer(tmp_path, tokdirs):
    p = write_jsonl(tmp_path / "d.jsonl", texts(10) + [{"text": sentence(1, 6)}])
    code, out, _, _ = run_cli("preflight", str(p), "--tokenizer", str(tokdirs["pad_eos"]), "--max-len", "12")
    assert code == 0
    assert "text shape: text (text)" in out
    assert "TP-PRE-PAD-EQUALS-EOS" in out and "tokenizer: " in out


NO_HF = """
import sys
sys.modules["tokenizers"] = None
sys.modules["transformers"] = None
from trainproof.cli import main
main(sys.argv[1:])
"""


@pytest.mark.slow
def test_without_the_hf_extra(tmp_path):
    p = write_jsonl(tmp_path / "d.jsonl", texts(6) + [{"text": ""}])
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))

    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", NO_HF, "preflight", str(p), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    r = run("--json")
    assert r.returncode == 1, r.stderr  # the dataset checks ran: the empty text is a FAIL
    doc = json.loads(r.stdout)
    assert {f["id"] for f in doc["reports"][0]["findings"]} == {"TP-PRE-EMPTY-TEXT"}
    r = run("--tokenizer", str(tmp_path / "tok"), "--mute", "TP-PRE-EMPTY-TEXT")
    assert r.returncode == 2
    assert 'pip install "trainproof[hf]"' in r.stderr
    assert "TP-PRE-OK" in r.stdout  # the dataset checks still ran and printed
