"""cakec, the cake_kernel macro's tool: a good program lowers; bad invocations are errors, not tracebacks."""

import os

from compiler.build import cakec
from compiler.corpus.corpus import GOOD_DIR


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
