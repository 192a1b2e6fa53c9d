"""docs/events.md, generated from the registry: every kind, its role, attributes and enums.

The registry holds the facts (wire name, class, role, step, fields, enums, docstring); what a
reader also needs is written beside the declarations in :mod:`pycm.trace.kinds` as comments —
the section a kind is declared under and the trailing comment of an attribute or an enum value —
so this module reads those from the declaring module's source rather than asking for them twice.
Only kinds declared in pycm's own modules are documented (tests declare throwaway kinds).

``pycm trace kinds --markdown`` prints :func:`render_markdown`; a test fails when the committed
docs/events.md differs from it.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import io
import re
import sys
import tokenize
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field

from pycm.trace import events
from pycm.trace import kinds as _kinds  # noqa: F401  (registers every kind)
from pycm.trace.codec import encode
from pycm.trace.events import ENVELOPE_FIELDS, REGISTRY, Event, KindInfo

__all__ = ["documented_kinds", "envelope_rows", "render_markdown"]

# The attributes every step end inherits from StepEnd (events.py documents them in prose).
_STEP_END_NOTES = {
    "outcome": "how the step ended: `error` when its block raised, `cancelled` when cancelled",
    "error": "on failure: the exception's type and the first line of its message",
}

_HEADER_RULE = re.compile(r"^# -{20,}\s*$")
_ENVELOPE_ROW = re.compile(r"^``(\w+)``\s+(.+)$")


@dataclass
class _SourceNotes:
    """What a module's source says beyond the registry: sections and trailing comments."""

    # (line, title) of each "# ---- / # Title / # ----" section header, in order.
    sections: list[tuple[int, str]] = field(default_factory=list)
    # class name -> line of its ``class`` statement
    class_lines: dict[str, int] = field(default_factory=dict)
    # (class name, attribute or member name) -> its trailing comment
    comments: dict[tuple[str, str], str] = field(default_factory=dict)

    def section_of(self, class_name: str) -> str:
        line = self.class_lines.get(class_name)
        title = ""
        if line is not None:
            for header_line, header in self.sections:
                if header_line > line:
                    break
                title = header
        return title


_notes_cache: dict[str, _SourceNotes] = {}


def _notes(module_name: str) -> _SourceNotes:
    notes = _notes_cache.get(module_name)
    if notes is not None:
        return notes
    notes = _notes_cache[module_name] = _SourceNotes()
    module = sys.modules.get(module_name)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        source = ""
    if not source:
        return notes
    lines = source.splitlines()
    for i in range(1, len(lines) - 1):
        if _HEADER_RULE.match(lines[i - 1]) and _HEADER_RULE.match(lines[i + 1]):
            title = lines[i].lstrip("#").strip()
            if title:
                notes.sections.append((i + 1, title))
    line_comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line_comments[tok.start[0]] = tok.string.lstrip("#").strip()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        notes.class_lines[node.name] = node.lineno
        for stmt in node.body:
            target: ast.expr | None = None
            if isinstance(stmt, ast.AnnAssign):
                target = stmt.target
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            if isinstance(target, ast.Name) and stmt.lineno in line_comments:
                notes.comments[(node.name, target.id)] = line_comments[stmt.lineno]
    return notes


def documented_kinds() -> list[KindInfo]:
    """The kinds declared in pycm's modules, in declaration order."""
    return [i for i in REGISTRY.values() if i.cls.__module__.split(".")[0] == "pycm"]


def _grouped(infos: Iterable[KindInfo]) -> list[tuple[str, list[KindInfo]]]:
    """Kinds by section, a step's begin listed right before its end."""
    infos = list(infos)
    begun_ends = {
        i.cls.END.KIND  # type: ignore[attr-defined]
        for i in infos
        if i.role == "begin"
    }
    groups: dict[str, list[KindInfo]] = {}
    for info in infos:
        if info.role == "end" and info.kind in begun_ends:
            continue  # listed after its begin
        title = _notes(info.cls.__module__).section_of(info.cls.__name__) or info.cls.__module__
        group = groups.setdefault(title, [])
        group.append(info)
        if info.role == "begin":
            end = REGISTRY.get(info.cls.END.KIND)  # type: ignore[attr-defined]
            if end is not None:
                group.append(end)
    return list(groups.items())


def envelope_rows() -> list[tuple[str, str]]:
    """(field, meaning) of each envelope field, from :mod:`pycm.trace.events`' docstring."""
    rows: list[tuple[str, str]] = []
    for line in (events.__doc__ or "").splitlines():
        match = _ENVELOPE_ROW.match(line.strip())
        if match and match.group(1) in ENVELOPE_FIELDS:
            rows.append((match.group(1), match.group(2).strip()))
    return rows


def _rst_to_md(text: str) -> str:
    """The little reStructuredText the docstrings use, as Markdown."""
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`".replace("`None`", "`null`")


def _role_text(info: KindInfo) -> str:
    if info.role == "begin":
        end = info.cls.END.KIND  # type: ignore[attr-defined]
        return f"begins step `{info.step}` (ended by `{end}`, same span id)"
    if info.role == "end":
        begins = [b.kind for b in REGISTRY.values() if b.role == "begin" and b.step == info.step]
        begun = f" (begun by `{begins[0]}`)" if begins else ""
        return f"ends step `{info.step}`{begun}; `dur_ns` is the step's duration"
    return "point (its own span id; parent = the enclosing step)"


def _anchor(kind: str) -> str:
    return "kind-" + kind.replace(".", "-").replace("_", "-")


def _kind_section(info: KindInfo) -> list[str]:
    defaults = {f.name: f.default for f in dataclasses.fields(info.cls)}
    out = [
        f'### <a id="{_anchor(info.kind)}"></a>`{info.kind}`',
        "",
        _rst_to_md(info.doc) or "(undocumented)",
        "",
        f"- class: `{info.cls.__name__}`",
        f"- role: {_role_text(info)}",
        "",
    ]
    if not info.fields:
        out += ["No attributes beyond the envelope.", ""]
        return out
    out += ["| attribute | type | default | description |", "|---|---|---|---|"]
    for name, type_text in info.fields:
        enum_cls = info.enums.get(name)
        type_cell = f"`{type_text}`"
        if enum_cls is not None:
            values = ", ".join(f"`{m.value}`" for m in enum_cls)
            type_cell = f"[`{enum_cls.__name__}`](#enum-{enum_cls.__name__.lower()}): {values}"
        description = _comment_for(info.cls, name)
        if not description and info.role == "end":
            description = _STEP_END_NOTES.get(name, "")
        if not description and enum_cls is not None:
            description = " ".join((enum_cls.__doc__ or "").split())
        out.append(
            f"| `{name}` | {_cell(type_cell)} | {_cell(_default_text(defaults[name]))} "
            f"| {_cell(_rst_to_md(description))} |"
        )
    out.append("")
    return out


def _comment_for(cls: type[Event], name: str) -> str:
    """The trailing comment on ``name``'s declaration in the class (or a base) that declares it."""
    for klass in cls.__mro__:
        if name in getattr(klass, "__annotations__", {}):
            comment = _notes(klass.__module__).comments.get((klass.__name__, name), "")
            if comment:
                return comment
    return ""


def _enum_sections(infos: Iterable[KindInfo]) -> list[str]:
    seen: dict[str, type[enum.Enum]] = {}
    users: dict[str, list[str]] = {}
    for info in infos:
        for attr, enum_cls in info.enums.items():
            seen.setdefault(enum_cls.__name__, enum_cls)
            users.setdefault(enum_cls.__name__, []).append(f"`{info.kind}` (`{attr}`)")
    out: list[str] = []
    for name in sorted(seen):
        enum_cls = seen[name]
        notes = _notes(enum_cls.__module__)
        out += [
            f'### <a id="enum-{name.lower()}"></a>`{name}`',
            "",
            " ".join((enum_cls.__doc__ or "").split()),
            "",
            "Used by " + ", ".join(users[name]) + ".",
            "",
            "| value | meaning |",
            "|---|---|",
        ]
        for member in enum_cls:
            meaning = notes.comments.get((name, member.name), "")
            out.append(f"| `{member.value}` | {_cell(meaning)} |")
        out.append("")
    return out


def _example_line() -> str:
    from pycm.trace.kinds import ItemAdded

    example = ItemAdded(
        seq=1042,
        ts=1_764_680_000_123_456_789,
        instance="pycm-0_7f3a",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_id="00f067aa0ba902b7",
        queue="deployment",
        key="default/web",
        reason="update",
        depth=3,
    )
    return encode(example).decode()


def render_markdown() -> str:
    """The full text of docs/events.md."""
    infos = documented_kinds()
    groups = _grouped(infos)
    out = [
        "# Trace events",
        "",
        "<!-- Generated by `pycm trace kinds --markdown` from pycm/trace/kinds.py: do not edit. "
        "Run `make events-doc` after changing a kind. -->",
        "",
        "Every step pycm takes is a typed event on the trace bus. The same events feed `pycm top`, "
        "the web dashboard, `--trace-file` recordings and OpenTelemetry spans. This page lists "
        f"all {len(infos)} kinds, grouped by the part of pycm that emits them.",
        "",
        "## The envelope",
        "",
        "Every event carries these fields, filled in by the bus and the span context (never by "
        "the emitter). A step is a `<step>.begin` / `<step>.end` pair sharing one span id; "
        "events inside a step carry its span id as `parent_id` and its trace id.",
        "",
        "| field | type | meaning |",
        "|---|---|---|",
    ]
    types = dict(_field_types(Event))
    for name, meaning in envelope_rows():
        out.append(f"| `{name}` | `{types.get(name, '')}` | {_cell(_rst_to_md(meaning))} |")
    out += [
        "",
        "## Wire format",
        "",
        "One event is one compact JSON object: `kind` (the wire name) first, then the envelope, "
        "then the kind's attributes. Attributes are flat scalars (string, integer, float, "
        "boolean, or an enum's string value) — never object bodies, environment values or "
        "secrets. A recording (`--trace-file`, `pycm trace cat`) is one object per line "
        "(JSON lines); the SSE stream sends the same object as each message's data.",
        "",
        "```json",
        _example_line(),
        "```",
        "",
        "Readers are tolerant: an unknown kind (from a newer pycm) is kept as is, an unknown "
        "attribute of a known kind is dropped, and an enum value a reader does not know stays a "
        "plain string.",
        "",
        "## Kinds",
        "",
    ]
    for title, members in groups:
        links = ", ".join(f"[`{i.kind}`](#{_anchor(i.kind)})" for i in members)
        out += [f"- {title}: {links}"]
    out.append("")
    for title, members in groups:
        out += [f"## {title}", ""]
        for info in members:
            out += _kind_section(info)
    out += ["## Enums", ""]
    out += _enum_sections(infos)
    return "\n".join(out).rstrip("\n") + "\n"


def _field_types(cls: type[Event]) -> list[tuple[str, str]]:
    hints = typing.get_type_hints(cls)
    return [
        (f.name, getattr(hints[f.name], "__name__", str(hints[f.name])))
        for f in dataclasses.fields(cls)
    ]
