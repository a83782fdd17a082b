"""``doctor`` over every attack of issues 17 and 32 at once, plus a hostile MLflow server on
127.0.0.1 in the same invocation (tests/_attack_tree32.py): it exits 1 for the FAILs, every
run other than the hostile ones is judged as it deserves, the hostile ones are NOT-CHECKED
with their reason, no form of the server's credentials reaches any output, nothing outside
the tree is read, nothing in the tree is written, and the peak memory stays under the
documented ceiling. evidence/attacks.py runs the same with the 1 GiB variants.
"""

from __future__ import annotations

import shutil
import sys

import _attack_tree32 as T
import pytest

import _attack_tree


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and symlinks as a pull request can add them")
def test_doctor_over_every_attack_and_a_hostile_server_at_once(tmp_path):
    root = tmp_path / "pr"
    root.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    try:
        m = T.combined_run(root, out, bomb_mib=1, gzip_mib=4)
    finally:
        _attack_tree.remove_tree(root)
        shutil.rmtree(out, ignore_errors=True)
    assert m["rc"] == 1 and m["text_rc"] == 1, m
    assert not m["internal_error"], m["internal_error"]
    assert m["missing"] == [] and m["wrong"] == [], (m["missing"], m["wrong"])
    assert m["not_runs"] == []
    # the server got the credentials and echoed them; they came out masked
    assert m["credentials_sent"] and m["echo_name"].startswith("run ***"), m["echo_name"]
    assert m["server_runs"] == 4 and m["history_pages"] >= 1000
    assert m["leaked"] == [], m["leaked"]
    # nothing outside the tree read: the canary's text in no output, its verdict as if
    # absent (the resumed run PASSes, checked above), its access time kept
    assert m["canary"] == [] and not m["canary_atime_changed"]
    # nothing written beside a store, nor anywhere in the tree
    assert m["entries"] > 1200 and m["changed"] == [], m["changed"]
    assert m["peak_bytes"] < T.MEMORY_CEILING, m["peak_mib"]
