"""TP-DATA-DROPPED: what a reader could not use is a finding (INFO), never silent."""

from __future__ import annotations

from trainproof import judge

from conftest import healthy_rows, run_cli, write_jsonl


def test_torn_jsonl_tail_is_reported_and_verdict_stands(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    with open(p, "a") as f:
        f.write('{"step": 610, "loss": 0.8')  # killed mid-write
    rep = judge(p)
    assert rep.verdict.value == "PASS"
    f = [f for f in rep.findings if f.id == "TP-DATA-DROPPED"][0]
    assert f.level.value == "INFO" and f.source == "reader"
    assert "incomplete" in f.evidence and len(f.data["dropped"]) == 1


def test_clean_log_has_no_drop_finding(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    rep = judge(p)
    assert "TP-DATA-DROPPED" not in rep.ids() and "TP-DATA-DROPPED" in rep.ran


def test_csv_rows_without_a_header_are_reported(tmp_path):
    p = tmp_path / "training.log"
    lines = ["epoch,loss,val_loss"] + [f"{i},{1.5 - 0.1 * i},{1.6 - 0.1 * i}" for i in range(8)]
    lines += [f"{i},0.001,{0.7 - 0.01 * i},{0.8}" for i in range(8, 11)]
    p.write_text("\n".join(lines) + "\n")
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    rep = doc["reports"][0]
    drop = [f for f in rep["findings"] if f["id"] == "TP-DATA-DROPPED"][0]
    assert "4 fields under a 3-field header" in drop["evidence"]
    assert code == 0 and rep["verdict"] == "PASS"


def test_torn_event_file_tail_is_reported(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path))
    for i in range(30):
        w.add_scalar("train/loss", 2.0 - i * 0.03, i)
    w.close()
    ev = next(tmp_path.glob("events.out.tfevents.*"))
    data = ev.read_bytes()
    ev.write_bytes(data[:-7])
    rep = judge(ev)
    f = [f for f in rep.findings if f.id == "TP-DATA-DROPPED"][0]
    assert "bytes dropped" in f.evidence
    assert rep.verdict.value == "PASS"
