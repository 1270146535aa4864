"""lit configuration for det-cc's pass (llvm/DetPass.cpp): each test runs
`opt -passes=det` on a small IR file and checks the output with FileCheck.

Rules: the tools are LLVM 22's (the version the plugin is built for); a
missing tool or plugin is an error, never a skipped test.
"""

import os
from pathlib import Path

import lit.formats

config.name = "det-cc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll"]
config.test_source_root = os.path.dirname(__file__)

root = Path(__file__).resolve().parent.parent.parent
llvm_bin = Path(os.environ.get("DET_LLVM_BIN", "/usr/lib/llvm-22/bin"))
plugin = Path(os.environ.get("DET_LIBDIR", root / "build")) / "DetPass.so"
for need in (llvm_bin / "opt", llvm_bin / "FileCheck", plugin):
    if not need.exists():
        lit_config.fatal(f"{need} is missing (run `make`; tools/setup.sh installs LLVM 22)")

config.substitutions.append(("%opt-det", f"{llvm_bin / 'opt'} -load-pass-plugin={plugin} -passes=det -S"))
config.substitutions.append(("FileCheck", str(llvm_bin / "FileCheck")))
