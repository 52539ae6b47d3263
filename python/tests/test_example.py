"""examples/attention_in_python.py runs on a model and writes its heatmap PNG."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR


def test_example_writes_the_heatmap(transformer_dir, work_dir):
    png = work_dir / "example_attention.png"
    png.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, SOURCE_DIR / "examples" / "attention_in_python.py", "--model",
         transformer_dir, "--out", png, "A man is walking."],
        capture_output=True, text=True, env=dict(os.environ), timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "attention: 2 layer(s) x 2 head(s)" in proc.stdout
    assert "largest difference in the context:" in proc.stdout
