"""Object helpers over plain dicts: objects are what the API server sent, decoded with orjson.

- :mod:`pycm.api.meta` — typed metadata accessors, keys (``"ns/name"``), RFC 3339 times, and the
  ``Key`` / ``UID`` / ``ResourceVersion`` aliases. Nothing here mutates an object; helpers that
  change one return a copy.
- :mod:`pycm.api.labels` — label selectors: the string form, the LabelSelector dict form,
  matching.
- :mod:`pycm.api.owner` — controller references.

Exceptions::

    ValueError
     └── SelectorError   an invalid selector, label key or value (the message says which part)
"""

from pycm.api.labels import (
    EVERYTHING,
    NOTHING,
    Operator,
    Requirement,
    Selector,
    SelectorError,
    parse,
    selector_from_dict,
    selector_from_set,
)
from pycm.api.meta import (
    UID,
    Key,
    Obj,
    ResourceVersion,
    annotations,
    controller_ref,
    creation_timestamp,
    deletion_timestamp,
    format_time,
    generation,
    key,
    key_of,
    labels,
    name,
    namespace,
    owner_references,
    parse_time,
    resource_version,
    split_key,
    uid,
    with_annotations,
    with_labels,
)
from pycm.api.owner import is_controlled_by, new_controller_ref

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "UID",
    "Key",
    "Obj",
    "Operator",
    "Requirement",
    "ResourceVersion",
    "Selector",
    "SelectorError",
    "annotations",
    "controller_ref",
    "creation_timestamp",
    "deletion_timestamp",
    "format_time",
    "generation",
    "is_controlled_by",
    "key",
    "key_of",
    "labels",
    "name",
    "namespace",
    "new_controller_ref",
    "owner_references",
    "parse",
    "parse_time",
    "resource_version",
    "selector_from_dict",
    "selector_from_set",
    "split_key",
    "uid",
    "with_annotations",
    "with_labels",
]
