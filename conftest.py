"""Root conftest: the repository's own fixtures (fixtures/plugin.py) for every test folder.

Without a GPU, Triton kernels (the fused verifier) run in Triton's interpreter on CPU tensors; the
mode must be chosen before triton is imported, so it is chosen here.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["fixtures.plugin", "pytester"]
