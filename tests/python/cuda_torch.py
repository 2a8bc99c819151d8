"""What the PyTorch suites share: tools/python on the import path, and a skip (a printed
reason, exit status 0) where a module they need or a CUDA device is missing."""
import importlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))


def require(*modules, cuda=True):
    """Imports torch and `modules`, or exits 0 saying which is missing (or the CUDA device,
    unless cuda is False); returns torch."""
    try:
        torch = importlib.import_module("torch")
        for module in modules:
            importlib.import_module(module)
    except ImportError as error:
        print(f"skipped: {error}")
        sys.exit(0)
    if cuda and not torch.cuda.is_available():
        print("skipped: PyTorch sees no CUDA device")
        sys.exit(0)
    return torch
