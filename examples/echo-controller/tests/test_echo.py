"""The echo controller against an emulated cluster, with pycm.testing's fixtures: a labelled
ConfigMap's data.message is echoed into its annotation, and the annotation follows the
message (removed with it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycm_echo.controller import ANNOTATION, descriptor

from pycm.testing import Cluster, ManagerHandle

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
  labels: {pycm.dev/echo: "true"}
data:
  message: hi
"""


def _annotation(obj: Any) -> Any:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)


def test_echo_follows_the_message(
    pycm_cluster: Cluster, pycm_namespace: str, pycm_manager: Callable[..., ManagerHandle]
) -> None:
    pycm_manager(["echo"], descriptors=[descriptor])
    pycm_cluster.apply(CONFIGMAP, namespace=pycm_namespace)
    pycm_cluster.wait_for_object(
        "v1", "ConfigMap", "hello", pycm_namespace, lambda cm: _annotation(cm) == "hi"
    )
    pycm_cluster.apply(CONFIGMAP.replace("message: hi", "message: bye"), pycm_namespace)
    pycm_cluster.wait_for_object(
        "v1", "ConfigMap", "hello", pycm_namespace, lambda cm: _annotation(cm) == "bye"
    )
