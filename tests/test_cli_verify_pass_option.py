"""`tfsem verify --pass PASS` is `tfsem verify PASS` (as `tfsem fuzz` writes
it); before, argparse took `--pass` for an abbreviation of `--pass-timeout`
and refused the pass name as a duration."""

from __future__ import annotations

import json

from tfsem.cli import main


def test_verify_takes_the_pass_as_an_option_like_fuzz(tmp_path, capsys):
    argv = ["--budget", "2s", "--semantics", "atomic", "--observe", "outputs", "--seed", "3", "--json"]
    # 0, or 4 when two seconds gave too little evidence: never a finding
    assert main(["verify", "--pass", "dce", *argv, "--out", str(tmp_path / "a")]) in (0, 4)
    as_option = json.loads(capsys.readouterr().out)
    assert main(["verify", "dce", *argv, "--out", str(tmp_path / "b")]) in (0, 4)
    positional = json.loads(capsys.readouterr().out)
    assert as_option["pass"] == positional["pass"] == "dce"
    for result in (as_option, positional):
        assert [(c["semantics"], c["observe"], c["claim"]) for c in result["cells"]] == \
            [("atomic", "outputs", "sound")]
        assert result["cells"][0]["programs"] > 0 and not result["findings"]


def test_verify_refuses_two_different_passes(capsys):
    assert main(["verify", "dce", "--pass", "cse", "--budget", "2s"]) == 2
    err = capsys.readouterr().err
    assert "two passes given" in err and "Traceback" not in err
