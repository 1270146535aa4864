"""`make vsix`: the VS Code extension packs (with @vscode/vsce from npm), and
its launch attributes are the ones det-dap's launch reads.

Rules: npm missing fails the test (tools/setup.sh installs it); the
attributes are read from det-dap's own source, not listed here.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile

from conftest import ROOT, need


def test_make_vsix_packs_the_det_debugger() -> None:
    need("npm")
    r = subprocess.run(["make", "-s", "vsix"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr + r.stdout
    with zipfile.ZipFile(ROOT / "build" / "det-debug.vsix") as z:
        pkg = json.loads(z.read("extension/package.json"))
        assert "extension/extension.js" in z.namelist()
    (dbg,) = pkg["contributes"]["debuggers"]
    assert dbg["type"] == "det"
    assert dbg["configurationSnippets"] and dbg["initialConfigurations"][0]["type"] == "det"
    launch = dbg["configurationAttributes"]["launch"]["properties"]
    src = (ROOT / "dap" / "det_dap" / "adapter.py").read_text()
    body = src[src.index("def do_launch"):src.index("def do_configurationDone")]
    read = set(re.findall(r'arg\(args, "(\w+)"', body))
    assert set(launch) == read, f"the extension offers {sorted(launch)}, det-dap reads {sorted(read)}"
