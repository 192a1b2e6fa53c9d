"""An example pycm controller plugin: ``echo`` (see docs/controllers.md)."""
