"""pycm: a Python controller manager built the way kube-controller-manager is built."""

__version__ = "0.1.0"
