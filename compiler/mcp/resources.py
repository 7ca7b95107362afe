"""The documents the MCP server serves: IR docs, the text grammar, the protos and the corpus, found in either layout.

In the monorepo they sit at the repository root (docs/, proto/, compiler/corpus/); in
the wheel the same tree sits under cake/ (python/cake_build/layout.py puts docs/ and
proto/ there), so both are found relative to the compiler package.
"""

import dataclasses
import glob
import os

from compiler.corpus import known_bad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "compiler", "corpus")


@dataclasses.dataclass(frozen=True)
class Document:
    uri: str
    name: str
    description: str
    mime_type: str
    path: str

    def read(self):
        with open(self.path, encoding="utf-8") as f:
            return f.read()


_FIXED = (
    ("cake://docs/ir.md", "ir", "CAKE IR: the schedule IR's concepts, ops and the three proving kernels", "docs/ir.md"),
    ("cake://docs/ir_text.md", "ir_text", "The CAKE IR text form: its grammar, with examples (what verify and "
     "compile take)", "docs/ir_text.md"),
    ("cake://docs/verifier_rules.md", "verifier_rules", "Every verifier rule: id, what it catches, the fix",
     "docs/verifier_rules.md"),
    ("cake://proto/ir.proto", "ir.proto", "cake.ir.v1: the IR's protobuf schema, every field and op commented "
     "with the PTX it becomes", "proto/cake/ir/v1/ir.proto"),
    ("cake://proto/compiler_service.proto", "compiler_service.proto", "cake.compiler.v1.CompilerService: the "
     "compiler's gRPC API", "proto/cake/compiler/v1/compiler_service.proto"),
)


def documents():
    """Every document served, docs and protos first, then the good and the known-bad corpus."""
    out = [Document(uri, name, desc, "text/markdown" if rel.endswith(".md") else "text/plain",
                    os.path.join(ROOT, *rel.split("/"))) for uri, name, desc, rel in _FIXED]
    for path in sorted(glob.glob(os.path.join(CORPUS, "good", "*.cake"))):
        name = os.path.basename(path)[:-len(".cake")]
        out.append(Document("cake://corpus/good/" + name, name, "A known-good CAKE IR program (verifies clean): "
                            + name, "text/plain", path))
    for bad in known_bad.programs():
        name = os.path.basename(bad.path)[:-len(".cake")]
        out.append(Document("cake://corpus/bad/" + name, name, "A known-bad program: %s (expect %s at %s)"
                            % (bad.defect or "one defect", bad.id, bad.ir_path), "text/plain", bad.path))
    return out
