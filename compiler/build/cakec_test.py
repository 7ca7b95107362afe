"""cakec, the cake_kernel macro's tool: a good program lowers; bad invocations are errors, not tracebacks."""

import glob
import os
import re

import pytest

from compiler.build import cakec
from compiler.corpus.corpus import GOOD_DIR

BAD = sorted(glob.glob(os.path.join(os.path.dirname(GOOD_DIR), "bad", "*.cake")))


def test_a_corpus_program_lowers_with_its_metadata(tmp_path):
    out, meta = tmp_path / "k.cu", tmp_path / "k.launch.pb"
    program = os.path.join(GOOD_DIR, "gemm_sm90a.cake")
    assert cakec.main([program, "-o", str(out), "--metadata", str(meta)]) == 0
    assert "cake_gemm_bf16_sm90a" in out.read_text() and meta.stat().st_size > 0


def test_a_missing_input_file_is_an_error_naming_it(tmp_path, capsys):
    missing = tmp_path / "nowhere.cake"
    assert cakec.main([str(missing), "-o", str(tmp_path / "k.cu")]) == 2
    assert capsys.readouterr().err == "cakec: cannot read %s: No such file or directory\n" % missing
    assert not (tmp_path / "k.cu").exists()


def test_an_unknown_target_is_an_error(tmp_path, capsys):
    program = os.path.join(GOOD_DIR, "gemm_sm90a.cake")
    assert cakec.main([program, "--target", "sm_70", "-o", str(tmp_path / "k.cu")]) == 2
    assert capsys.readouterr().err.startswith("cakec: ")


@pytest.mark.parametrize("program", BAD, ids=lambda p: os.path.basename(p)[:-5])
def test_a_known_bad_program_fails_with_its_expected_diagnostic(program, tmp_path, capsys):
    with open(program) as f:
        want_id, want_path = re.match(r"# expect: (\S+) at (\S+)", f.read()).groups()
    out = tmp_path / "k.cu"
    assert cakec.main([program, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert ": error[%s] %s: " % (want_id, want_path) in err, err
    assert not out.exists()


def test_a_good_program_retargeted_where_it_cannot_run_fails_verification(tmp_path, capsys):
    program = os.path.join(GOOD_DIR, "gemm_sm90a.cake")
    assert cakec.main([program, "--target", "sm_80", "-o", str(tmp_path / "k.cu")]) == 1
    assert "error[CAKE-TARGET-" in capsys.readouterr().err
