"""Load a job spec from YAML, apply ``--set`` overrides, and turn every problem into a clear message.

pydantic's errors are worded by ``cloudtrain.messages``, the same way ``JobSpec(...)``
words them, so every command that reads a spec reports problems the same way.

Example:
>>> spec = parse_spec({"name": "demo", "code": {"module": "trainer.task"}}, ["training.epochs=5"])
>>> spec.training.epochs
5
"""

from __future__ import annotations

import copy
import os
import re
import stat
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from cloudtrain import defaults, tracker, usercode
from cloudtrain.arguments import FLAG, MAPPING, PATH, TEXT, TEXTS, expect, instance_of
from cloudtrain.errors import SpecError, SpecValidationError
from cloudtrain.messages import quote, shorten, validation_problems
from cloudtrain.spec import JobSpec

# A job spec is a page of YAML; anything near these sizes is a mistake or an attack.
MAX_SPEC_BYTES = 1_000_000
MAX_NODES = 10_000  # scalars, lists and mappings after aliases are expanded
MAX_ALIASES = 100
MAX_DEPTH = 64


def load_spec(
    path: str | Path,
    overrides: Iterable[str] = (),
    *,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    check_code: bool = True,
    provider: str | None = None,
) -> JobSpec:
    """Read ``path`` (YAML), apply ``KEY=VALUE`` overrides, fill in the defaults, and validate.

    Fields neither the overrides nor the file set come from the user's profile, then
    from the clouds' own settings in ``environ`` (default ``os.environ``), then the
    built-in defaults (``cloudtrain.defaults``; ``profile`` defaults to
    ``$CLOUDTRAIN_PROFILE``). ``provider`` is where the job goes (default: the spec's
    ``provider``): a provider's settings that only its own jobs need (the kubeconfig's
    context) are read for that provider alone. ``code.source_dir`` and a local ``storage.root`` are
    resolved relative to the spec file's folder, so a job runs the same from any working
    directory. The code is then checked on disk (``cloudtrain.usercode``): the module or
    script exists, is shipped, and defines what managed mode calls. A caller that hands
    the spec to a ``cloudtrain.api`` call that checks the code itself (``validate``,
    ``prepare``, ``render``, ``submit``) passes ``check_code=False``, so it is read once.

    Raises:
        SpecError: one message per problem; nothing is contacted over the network.
    """
    expect(
        path=(path, PATH),
        overrides=(overrides, TEXTS),
        profile=(profile, TEXT | None),
        environ=(environ, MAPPING | None),
        check_code=(check_code, FLAG),
        provider=(provider, TEXT | None),
    )
    return load_spec_sources(
        path, overrides, profile=profile, environ=environ, check_code=check_code, provider=provider
    )[0]


def load_spec_sources(
    path: str | Path,
    overrides: Iterable[str] = (),
    *,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    check_code: bool = True,
    provider: str | None = None,
) -> tuple[JobSpec, defaults.Sources]:
    """``load_spec``, and where each field's value came from (``set``, ``spec``, ``profile``, ...)."""
    path = Path(path)
    data = tracker.expanded(_top_level(_parse_yaml(read_spec_text(path), path), str(path)))
    overrides = tuple(overrides)
    written = apply_overrides(copy.deepcopy(dict(data)), overrides)
    layered = defaults.layer(
        written,
        spec=data,
        overrides=apply_overrides({}, overrides),
        profile=profile,
        environ=environ,
        provider=provider,
    )
    spec = _resolve_local_paths(_parse_layered(layered, str(path)), path.parent)
    if check_code:
        usercode.require_code(spec.code)
    return spec.with_origins(layered.sources.annotate), layered.sources


# Without a job spec the settings come from the profile and the environment alone; these
# stand in for the fields a spec must have and a profile cannot give. A profile's
# storage_root gets this name as its job folder (where ``check`` writes its probe).
NO_JOB: dict[str, Any] = {
    "name": "cloudtrain-check",
    "code": {"module": "trainer.task"},
    "storage": {"root": "./outputs"},
}


def load_settings(
    job: str | Path | None,
    overrides: Iterable[str] = (),
    profile: str | None = None,
    *,
    provider: str | None = None,
) -> tuple[JobSpec, defaults.Sources]:
    """The job's spec, or without ``job`` the settings of the profile and the environment.

    What ``check`` checks and ``list`` lists with: without ``job``, every setting comes
    from the ``KEY=VALUE`` overrides, the profile, the environment or the built-in
    defaults, as it would beneath a spec that leaves it out. Also says where each came from.
    ``provider`` is the one the settings are for, as in ``load_spec``.

    Raises:
        SpecError: the job spec, or the settings, are invalid.
        ConfigError: the user config file is invalid, or has no such profile.
    """
    if job is not None:
        return load_spec_sources(job, tuple(overrides), profile=profile, provider=provider)
    written = apply_overrides(copy.deepcopy(NO_JOB), overrides)
    layered = defaults.layer(
        written, spec={}, overrides=apply_overrides({}, overrides), profile=profile, provider=provider
    )
    return parse_spec(layered.data, source="the profile and environment"), layered.sources


def with_defaults(
    spec: JobSpec,
    *,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    provider: str | None = None,
) -> JobSpec:
    """``spec`` with the fields it leaves unset filled from the profile and the environment.

    A JobSpec built in Python is used as written everywhere else; this applies the layers
    ``load_spec`` applies to a file, beneath what the spec sets (``provider`` as there).

    Example:
    >>> spec = JobSpec(name="demo", code={"module": "trainer.task"})
    >>> with_defaults(spec, environ={"HOME": "/nonexistent", "AWS_REGION": "eu-west-1"}).sagemaker.region
    'eu-west-1'
    """
    expect(
        spec=(spec, instance_of(JobSpec, "a cloudtrain.JobSpec (load a file with load_spec)")),
        profile=(profile, TEXT | None),
        environ=(environ, MAPPING | None),
        provider=(provider, TEXT | None),
    )
    written = spec.model_dump(exclude_unset=True)
    layered = defaults.layer(
        written, spec=written, overrides={}, profile=profile, environ=environ, provider=provider
    )
    return _parse_layered(layered, "the spec")


def _parse_layered(layered: defaults.Layered, source: str) -> JobSpec:
    """``parse_spec``; a problem with a value from beneath the spec also says where it came from."""
    try:
        return parse_spec(layered.data, source=source)
    except SpecError as err:
        problems = layered.sources.annotate(err.problems)
        if problems == err.problems:
            raise
        raise type(err)(problems) from None


def read_spec_text(path: Path) -> str:
    """The spec file's text: a regular file of at most ``MAX_SPEC_BYTES``, UTF-8, without NUL bytes.

    A FIFO or a device (``/dev/zero``) is refused before it is opened, and the file is
    opened non-blocking, so no path makes ``load_spec`` wait or read without end.

    Raises:
        SpecError: the path is missing, not a regular file, too large, or not UTF-8 text.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file. Pass the path of a job spec, e.g. job.yaml.") from None
    except ValueError:  # an embedded NUL byte
        raise SpecError(
            f"{quote(str(path))}: the path holds a NUL byte. Pass the path of a job spec."
        ) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc.__class__.__name__}).") from None
    _require_small_regular_file(path, info)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc.__class__.__name__}).") from None
    with os.fdopen(fd, "rb") as handle:
        _require_small_regular_file(path, os.fstat(fd))  # the file may have changed since os.stat
        raw = handle.read(MAX_SPEC_BYTES + 1)
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(_too_large(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}). Save the spec as UTF-8.") from None
    if "\0" in text:
        raise SpecError(
            f"{path}: holds a NUL byte at offset {text.index(chr(0))}. Save the spec as plain text."
        )
    return text


def _require_small_regular_file(path: Path, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise SpecError(f"{path}: is a folder. Pass the path of a job spec, e.g. {path / 'job.yaml'}.")
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(
            f"{path}: not a regular file (a FIFO, socket or device). Pass the path of a job spec."
        )
    if info.st_size > MAX_SPEC_BYTES:
        raise SpecError(_too_large(path))


def _too_large(path: Path) -> str:
    return f"{path}: larger than {MAX_SPEC_BYTES:,} bytes; a job spec is a page of YAML. Check the path."


def _resolve_local_paths(spec: JobSpec, base: Path) -> JobSpec:
    """Make ``code.source_dir`` and a local ``storage.root`` relative to the spec's folder."""
    update: dict[str, Any] = {
        "code": spec.code.model_copy(update={"source_dir": str((base / spec.code.source_dir).resolve())})
    }
    if "://" not in spec.storage.root:
        root = str((base / spec.storage.root).resolve())
        update["storage"] = spec.storage.model_copy(update={"root": root})
    return spec.model_copy(update=update)


def parse_spec(data: Any, overrides: Iterable[str] = (), *, source: str = "the spec") -> JobSpec:
    """Validate already-parsed spec data (a mapping), after applying overrides."""
    data = apply_overrides(dict(_top_level(data, source)), overrides)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecValidationError(validation_problems(exc, root=JobSpec)) from None


# What a YAML document that is not a mapping holds, in the user's words (not Python's type names).
YAML_KINDS = {list: "a list (lines starting with '- ')", str: "a single string", bool: "a boolean"}


def _top_level(data: Any, source: str) -> Mapping[str, Any]:
    if data is None:  # yaml.safe_load of nothing, or of comments alone
        raise SpecError(
            f"{source} is empty (or holds only comments). Write the job spec there as a YAML mapping "
            "(name: ..., code: {module: ...}), or start a project that has one: cloudtrain init NAME"
        )
    if not isinstance(data, Mapping):
        kind = YAML_KINDS.get(
            type(data), "a number" if isinstance(data, int | float) else type(data).__name__
        )
        raise SpecError(
            f"{source} must be a YAML mapping at the top level (name: ..., code: ...). Received: {kind}."
        )
    return data


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        return load_yaml(text)
    except _Refused as exc:
        raise SpecError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SpecError(
            f"{path}{where}: could not parse YAML ({problem}). Check indentation and quoting."
        ) from None


class _Refused(SpecError):
    """The YAML is refused before it is built into Python objects (the message says why)."""


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with limits: depth, aliases and expanded size, and no duplicate keys.

    Booleans are YAML 1.2's ``true``/``false`` only: ``yes``, ``no``, ``on``, ``off``, ``y``
    and ``n`` stay strings, so ``hosts: yes`` is an error rather than 1.
    """

    yaml_implicit_resolvers: typing.ClassVar = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Refused(_BOMB)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels. A job spec needs a few.")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        digits = str(node.value).replace("_", "").lstrip("+-")
        if len(digits) > 18:  # int() refuses past 4,300 digits; keep the text for the spec's check
            return str(node.value)
        return super().construct_yaml_int(node)


_BoundedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)

_BOMB = f"too many aliases/nodes (a YAML alias bomb?). A job spec has at most {MAX_NODES:,} values."


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` within limits; refuses alias bombs, deep nesting and duplicate keys.

    Example:
    >>> load_yaml("hosts: yes\\nspot: true")
    {'hosts': 'yes', 'spot': True}
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_tree(node)
        return loader.construct_document(node)
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. "!!int abc"
        raise _Refused(
            f"holds a value YAML cannot build ({shorten(str(exc))}). Check explicit !!tags."
        ) from None
    finally:
        loader.dispose()


def _check_tree(root: yaml.Node) -> None:
    """Count values as if every alias were expanded, and refuse keys written twice."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, where: str) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise _Refused(f"{where or 'the spec'} refers to itself through an alias. Write the values out.")
        open_nodes.add(id(node))
        total = 1
        if isinstance(node, yaml.MappingNode):
            _no_duplicate_keys(node, where)
            children = [(value, _child(where, key)) for key, value in node.value]
            children += [(key, where) for key, _ in node.value]
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, f"{where}[{index}]") for index, item in enumerate(node.value)]
        else:
            children = []
        for child, child_where in children:
            total += size(child, child_where)
            if total > MAX_NODES:
                raise _Refused(_BOMB)
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    size(root, "")


def _child(where: str, key: yaml.Node) -> str:
    name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
    return f"{where}.{name}" if where else name


def _no_duplicate_keys(node: yaml.MappingNode, where: str) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        line = key.start_mark.line + 1
        if (key.tag, key.value) in seen:
            raise SpecError(
                f"{shorten(_child(where, key))}: defined twice (lines {seen[key.tag, key.value]} and {line}). "
                "Keep one; YAML would silently drop the first."
            )
        seen[key.tag, key.value] = line


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``training.epochs=5``-style overrides; values are parsed as YAML scalars.

    Example:
    >>> apply_overrides({"training": {"epochs": 3}}, ["training.epochs=5", "resources.spot=true"])
    {'training': {'epochs': 5}, 'resources': {'spot': True}}
    """
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--set expects KEY=VALUE, e.g. --set training.epochs=5. Received: {item!r}.")
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except _Refused as exc:
            raise SpecError(f"--set {key}: {exc}") from None
        except yaml.YAMLError:
            value = raw
        node = data
        parts = key.strip().split(".")
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise SpecError(
                    f"--set {key}: {where} is not a section, so it has no field {parts[depth + 1]!r}."
                )
            node = child
        node[parts[-1]] = value
    return data


def problem_details(problems: Iterable[str]) -> list[dict[str, str | None]]:
    """Each problem line as ``{"field", "message", "fix"}`` for ``validate --json``.

    ``field`` is the spec field the line starts with (None for the file as a whole);
    ``fix`` is the part that says what to do (None when the line gives none);
    ``message`` is the rest, so message and fix together are the line (or the whole
    line, when all of it is the fix).

    Example:
    >>> problem_details(["nmae: unknown field. Did you mean 'name'?"])
    [{'field': 'nmae', 'message': 'nmae: unknown field.', 'fix': "Did you mean 'name'?"}]
    """
    return [_problem_detail(problem) for problem in problems]


# A spec path at the start of a line, followed by ':' or a space ("resources.hosts must ...").
_FIELD = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[A-Za-z0-9_-]+|\[\d+\])*)(?=[: ])")
# Where the fix starts: a suggestion, a list of valid values, or an imperative after a break.
_FIX = re.compile(
    r"(?<=[.;:] )(?:Did you mean|Valid \w+:|(?i:add|set|use|choose|remove|define|fix|move|point|check|pass"
    r"|grant|run|rename|measure|raise|lower|give|pick|quote|replace)\b)"
)


def _problem_detail(problem: str) -> dict[str, str | None]:
    found = _FIELD.match(problem)
    field = found.group(1) if found else None
    known = field is not None and (
        re.split(r"[.\[]", field)[0] in JobSpec.model_fields or problem.startswith(f"{field}: unknown field")
    )
    fix = _FIX.search(problem)
    message = problem[: fix.start()].rstrip() if fix else problem
    if message.rstrip(":") == field:  # the whole line is the fix ("code: set exactly one of ...")
        message = problem
    return {
        "field": field if known else None,
        "message": message,
        "fix": problem[fix.start() :] if fix else None,
    }
