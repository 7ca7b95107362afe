"""The `cake` command line: located diagnostics for every known-bad program, exit codes, JSON, SARIF, fmt."""

import json
import os

import pytest
from cake.compiler.v1 import artifact_pb2

from compiler.build import driver, nvcc
from compiler.cli import actions, main
from compiler.corpus import known_bad
from compiler.ir.text import parse_kernel
from compiler.version import VERSION

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
GOOD = os.path.join(ROOT, "compiler", "corpus", "good", "gemm_sm90a.cake")
SMALL = os.path.join(ROOT, "compiler", "corpus", "good", "kmeans_finalize.cake")
BAD = known_bad.programs()


def _run(capsys, *argv):
    code = main.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("bad", BAD, ids=lambda b: os.path.basename(b.path))
def test_every_known_bad_program_reports_its_id_at_file_line_col(capsys, bad):
    code, out, err = _run(capsys, "verify", bad.path)
    assert code == main.EXIT_INVALID
    with open(bad.path) as f:
        line, column = parse_kernel(f.read(), bad.path).source_map.lookup(bad.ir_path)
    assert "%s:%d:%d: error[%s]: " % (bad.path, line, column, bad.id) in err, err
    assert "  at %s\n" % bad.ir_path in err


def test_a_good_program_verifies_quietly(capsys):
    assert _run(capsys, "verify", GOOD) == (main.EXIT_OK, "", "")


def test_json_and_sarif_carry_the_same_findings(capsys):
    bad = BAD[0]
    code, out, _ = _run(capsys, "verify", "--json", bad.path, GOOD)
    results = json.loads(out)["results"]
    assert code == main.EXIT_INVALID and [r["valid"] for r in results] == [False, True]
    assert bad.id in {d["id"] for d in results[0]["diagnostics"]}
    code, out, _ = _run(capsys, "verify", "--sarif", bad.path)
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["runs"][0]["tool"]["driver"]["version"] == VERSION
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == bad.id)
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == bad.path
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == bad.ir_path
    assert log["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == bad.id


def test_text_that_is_not_cake_ir_is_invalid_input(capsys, tmp_path):
    path = tmp_path / "broken.cake"
    path.write_text("kernel k {\n  target: sm_90a\n  bogus {\n}\n")
    code, _, err = _run(capsys, "verify", str(path))
    assert code == main.EXIT_INVALID
    assert err.startswith("%s:3:3: error[CAKE-SYNTAX-001]: " % path), err


def test_usage_errors_exit_2(capsys, tmp_path):
    code, _, err = _run(capsys, "verify", str(tmp_path / "missing.cake"))
    assert (code, err) == (main.EXIT_USAGE, "cake: %s: no such file\n" % (tmp_path / "missing.cake"))
    code, _, err = _run(capsys, "analyze", GOOD, "--shape", "M")
    assert code == main.EXIT_USAGE and "--shape takes NAME=INTEGER" in err
    code, _, err = _run(capsys, "analyze", GOOD, "--device", "TPU")
    assert code == main.EXIT_USAGE and "unknown device 'TPU'" in err
    with pytest.raises(SystemExit) as e:
        main.main(["verify", "--target", "sm_70", GOOD])
    assert e.value.code == main.EXIT_USAGE


def test_an_internal_error_is_named_as_ours_and_exits_3(capsys, monkeypatch):
    monkeypatch.setattr(actions, "verify", lambda program: 1 / 0)
    code, _, err = _run(capsys, "verify", GOOD)
    assert code == main.EXIT_INTERNAL
    assert "internal error (a bug in CAKE, not in your program): ZeroDivisionError" in err
    path = err.split("the traceback is in ")[1].split(";")[0]
    assert "ZeroDivisionError" in open(path).read()
    os.unlink(path)


def test_compile_without_nvcc_exits_4(capsys, monkeypatch):
    def no_nvcc(kernel, cache=None):
        raise nvcc.NvccNotFound("nvcc not found: install the CUDA 13 toolkit or set CUDA_HOME")

    monkeypatch.setattr(driver, "build", no_nvcc)
    code, _, err = _run(capsys, "compile", SMALL)
    assert code == main.EXIT_TOOLCHAIN and "nvcc not found" in err


def test_help_shows_defaults_and_version(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # no wrapping inside the phrases checked
    with pytest.raises(SystemExit):
        main.main(["compile", "--help"])
    out = capsys.readouterr().out
    assert "default: the program's own target" in out and "default: FILE.<target>.cubin" in out
    with pytest.raises(SystemExit):
        main.main(["--version"])
    assert capsys.readouterr().out == "cake %s\n" % VERSION


def test_analyze_prints_the_prediction(capsys):
    code, out, _ = _run(capsys, "analyze", GOOD, "--shape", "M=4096", "--shape", "N=4096", "--shape", "K=4096")
    assert code == main.EXIT_OK and "predicted" in out and "bound by" in out
    code, out, _ = _run(capsys, "analyze", "--json", GOOD, "--target", "sm_90a")
    assert json.loads(out)["report"]["predicted_seconds"] > 0


def test_lower_and_compile_write_their_artifacts(capsys, tmp_path):
    cu, md = tmp_path / "small.cu", tmp_path / "small.launch.pb"
    assert _run(capsys, "lower", SMALL, "-o", str(cu), "--metadata", str(md))[0] == main.EXIT_OK
    assert "__global__" in cu.read_text()
    assert artifact_pb2.LaunchMetadata.FromString(md.read_bytes()).symbol
    cubin = tmp_path / "small.cubin"
    code, out, _ = _run(capsys, "compile", "--json", SMALL, "--target", "sm_80", "-o", str(cubin))
    assert code == main.EXIT_OK and json.loads(out)["target"] == "sm_80"
    assert cubin.read_bytes()[:4] == b"\x7fELF"


def test_fmt_keeps_comments_and_check_reports_unformatted_files(capsys, tmp_path):
    text = open(SMALL).read()
    messy = tmp_path / "small.cake"
    messy.write_text("# why this kernel exists\n" + "\n".join(line.strip() for line in text.splitlines()) + "\n")
    code, out, _ = _run(capsys, "fmt", str(messy))
    assert code == main.EXIT_OK and out.startswith("# why this kernel exists\nkernel ")
    assert _run(capsys, "fmt", "--check", str(messy))[0] == main.EXIT_INVALID
    assert _run(capsys, "fmt", "-i", str(messy))[0] == main.EXIT_OK
    assert messy.read_text() == out
    assert _run(capsys, "fmt", "--check", str(messy)) == (main.EXIT_OK, "", "")
