"""The emulator's OpenAPI documents (``/openapi/v2``, ``/openapi/v3``), generated from the schemas
it validates and prunes with and from each custom resource's ``openAPIV3Schema``.

- :mod:`.definitions`: the schema definitions (built-in kinds from :mod:`pycm.sim.schemas`,
  custom resources through a :data:`CustomSchemas` hook);
- :mod:`.gnostic`: the protobuf encoding kubectl asks for;
- :mod:`.documents`: the v2 and v3 documents, their caching, ETags and HTTP answers.
"""

from pycm.sim.openapi.definitions import (
    CustomSchema,
    CustomSchemas,
    ServedSchema,
    build_definitions,
)
from pycm.sim.openapi.documents import PROTOBUF_V2, OpenAPI

__all__ = [
    "PROTOBUF_V2",
    "CustomSchema",
    "CustomSchemas",
    "OpenAPI",
    "ServedSchema",
    "build_definitions",
]
