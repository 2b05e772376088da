"""Extract the Python code cells of JAX's documentation into cells.json (run once, by hand).

    .venv/bin/python tests/jax_docs/extract.py --git-dir /path/to/jax/.git

The pages, their cells and the JAX commit they come from are bundled in cells.json, so
measure.py needs neither the JAX repository nor the network. The text of the cells is
JAX's documentation (Copyright The JAX Authors, Apache License 2.0).
Also copies JAX's example programs into jax_examples/ (same licence) for examples.py.
"""

import argparse
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

# (group, path in the JAX repository).  "core" is the set measured before (~69%);
# "101" adds the remaining JAX-101 tutorial pages (the new_docs/ 101 series and
# stateful-computations).
PAGES = [
    ("core", "README.md"),
    ("core", "docs/key-concepts.md"),
    ("core", "docs/jit-compilation.md"),
    ("core", "docs/automatic-differentiation.md"),
    ("core", "docs/automatic-vectorization.md"),
    ("core", "docs/pytrees.md"),
    ("core", "docs/random-numbers.md"),
    ("core", "docs/control-flow.md"),
    ("core", "docs/notebooks/thinking_in_jax.md"),
    ("core", "docs/notebooks/autodiff_cookbook.md"),
    ("core", "docs/notebooks/Common_Gotchas_in_JAX.md"),
    ("core", "docs/notebooks/Custom_derivative_rules_for_Python_code.md"),
    ("101", "docs/stateful-computations.md"),
    ("101", "docs/new_docs/101/arrays.md"),
    ("101", "docs/new_docs/101/transformations.md"),
    ("101", "docs/new_docs/101/pytrees.md"),
    ("101", "docs/new_docs/101/random.md"),
    ("101", "docs/new_docs/101/state.md"),
    ("101", "docs/new_docs/201/control-flow.md"),
    ("101", "docs/new_docs/201/jit.md"),
]

# (destination name, path, commit-ish): kernel_lsq and gaussian_process_regression were
# removed from JAX in c856560f0e; they are taken from its parent.
EXAMPLES = [
    ("mnist_classifier_fromscratch.py", "examples/mnist_classifier_fromscratch.py", "HEAD"),
    ("mnist_classifier.py", "examples/mnist_classifier.py", "HEAD"),
    ("mnist_vae.py", "examples/mnist_vae.py", "HEAD"),
    ("differentially_private_sgd.py", "examples/differentially_private_sgd.py", "HEAD"),
    ("advi.py", "examples/advi.py", "HEAD"),
    ("onnx2xla.py", "examples/onnx2xla.py", "HEAD"),
    ("spmd_mnist_classifier_fromscratch.py", "examples/spmd_mnist_classifier_fromscratch.py", "HEAD"),
    ("datasets.py", "examples/datasets.py", "HEAD"),
    ("kernel_lsq.py", "examples/kernel_lsq.py", "c856560f0e^"),
    ("gaussian_process_regression.py", "examples/gaussian_process_regression.py", "c856560f0e^"),
]

FENCE = re.compile(r"^(`{3,})\s*(\{code-cell\}|python|py)(?=\s|$)(.*)$")


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True, text=True).stdout


def md_cells(text, myst):
    """Yield (tags, source) for each Python cell of a MyST page ({code-cell}) or of a
    Markdown file (```python fences)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (myst and m.group(2) != "{code-cell}") or (not myst and m.group(2) == "{code-cell}"):
            i += 1
            continue
        fence = m.group(1)
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        tags = []
        # options: ":key: value" lines, or a "---" YAML block, then an optional blank line
        if body and body[0].strip() == "---":
            end = body.index("---", 1) if "---" in body[1:] else 0
            for ln in body[1:end]:
                if ln.strip().startswith("tags:"):
                    tags = [t.strip() for t in ln.split(":", 1)[1].strip(" []").split(",") if t.strip()]
            body = body[end + 1:]
        else:
            while body and re.match(r"^:[\w-]+:", body[0]):
                if body[0].startswith(":tags:"):
                    tags = [t.strip() for t in body[0].split(":", 2)[2].strip(" []").split(",") if t.strip()]
                body = body[1:]
        while body and not body[0].strip():
            body = body[1:]
        yield tags, "\n".join(body).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir", required=True)
    args = ap.parse_args()
    commit = git(args.git_dir, "rev-parse", "HEAD").strip()
    pages = []
    for group, path in PAGES:
        text = git(args.git_dir, "show", f"HEAD:{path}")
        cells = [{"index": k, "tags": tags, "source": src}
                 for k, (tags, src) in enumerate(md_cells(text, myst=path != "README.md"))]
        pages.append({"group": group, "path": path, "cells": cells})
        print(f"{path}: {len(cells)} cells")
    data = {
        "attribution": "Code cells from JAX's documentation, https://github.com/jax-ml/jax "
                       "(Copyright The JAX Authors, Apache License 2.0).",
        "jax_commit": commit,
        "pages": pages,
    }
    with open(os.path.join(HERE, "cells.json"), "w") as f:
        json.dump(data, f, indent=1)
    out = os.path.join(HERE, "jax_examples")
    os.makedirs(out, exist_ok=True)
    for name, path, rev in EXAMPLES:
        text = git(args.git_dir, "show", f"{rev}:{path}")
        sha = git(args.git_dir, "rev-parse", rev).strip()
        with open(os.path.join(out, name), "w") as f:
            f.write(f"# From JAX ({path} at {sha}), Copyright The JAX Authors, "
                    "Apache License 2.0. Unmodified below this line.\n" + text)
    print("commit", commit)


if __name__ == "__main__":
    main()
