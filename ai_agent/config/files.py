"""Config files: which are read by default, and reading one into data, or a clear ConfigError.

Settings files (``config.toml``, ``config.yaml``, the CLI's ``--config``) and MCP files share it.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import Any

from ai_agent.config.errors import shorten
from ai_agent.datafiles import parse_nested, read_text, strict_loads
from ai_agent.errors import ConfigError

__all__ = [
    "CONFIG_FILE_SUFFIXES",
    "DEFAULT_CONFIG_FILES",
    "MAX_CONFIG_FILE_BYTES",
    "check_config_path",
    "default_config_files",
    "parse_config_file",
]

DEFAULT_CONFIG_FILES = ("config.toml", "config.yaml")
CONFIG_FILE_SUFFIXES = (".toml", ".yaml", ".yml", ".json")
# A config file larger than this is refused before it is read: settings, MCP servers and tool
# options fill a few kilobytes; megabytes mean the wrong file.
MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024


def default_config_files() -> list[Path]:
    """The default config files present in the working directory, the winning one first.

    One that is there but is not a file (a directory, a symbolic link to nothing, a pipe) is
    an error, not skipped: it was meant as the settings, and skipping it would run with others.
    """
    # config.toml first: a source listed earlier wins, so toml beats yaml key by key.
    found = []
    for name in DEFAULT_CONFIG_FILES:
        path = Path(name)
        if path.is_file():
            found.append(path)
        elif os.path.lexists(path):
            raise ConfigError(
                f"config file {path} in the working directory is {_not_a_file(path)}, so it "
                "cannot be read; make it a file of settings, or remove it"
            )
    return found


def check_config_path(path: Path) -> Path:
    """``path`` if it names an existing file of a known kind, else a ConfigError saying which."""
    if path.suffix.lower() not in CONFIG_FILE_SUFFIXES:
        raise ConfigError(
            f"unsupported config file {path}: the suffix must be one of "
            f"{', '.join(CONFIG_FILE_SUFFIXES)}"
        )
    if path.is_file():
        return path
    if os.path.lexists(path):
        raise ConfigError(f"config file {path} is {_not_a_file(path)}; give a file of settings")
    raise ConfigError(f"config file not found: {path}. Check the path, or pass None.")


def _not_a_file(path: Path) -> str:
    """What ``path``, which exists but is not a regular file, is instead."""
    if path.is_symlink() and not path.exists():
        return "a symbolic link to nothing"
    if path.is_dir():
        return "a directory"
    return "not a regular file (a pipe or a device)"


def parse_config_file(path: Path) -> object:
    """The data in a TOML, JSON or YAML file; ConfigError naming the file and position.

    The file is read through `ai_agent.datafiles`: at most `MAX_CONFIG_FILE_BYTES`, UTF-8 text,
    nested at most `ai_agent.datafiles.MAX_DEPTH` levels.
    """
    what = f"config file {path}"
    text = read_text(path, what=what, max_bytes=MAX_CONFIG_FILE_BYTES)
    suffix = path.suffix.lower()
    parse = _load_toml if suffix == ".toml" else strict_loads if suffix == ".json" else _load_yaml
    try:
        return parse_nested(parse, text, what=what)
    except ValueError as exc:
        # tomllib and json errors (ValueError subclasses) name the position, not the content.
        raise ConfigError(f"cannot read config file {path}: {exc}. Fix or remove it.") from None


def _load_toml(text: str) -> object:
    # Imported here: compiling tomllib's patterns is a cost every command paid (``ai-agent
    # tools`` included, issue 20) though most read no TOML file.
    import tomllib

    return tomllib.loads(text)


def _load_yaml(text: str) -> object:
    # PyYAML ships no type stubs; importing it by name keeps mypy strict without an ignore.
    yaml = importlib.import_module("yaml")
    try:
        # safe_load's SafeLoader, refusing repeated keys (it would keep the last one silently).
        return yaml.load(text, Loader=_unique_keys_loader(yaml))
    except yaml.YAMLError as exc:
        # str(exc) quotes the offending line, which could hold a secret: keep problem + position.
        problem = getattr(exc, "problem", None) or "invalid YAML"
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"{problem}{where}") from None


@functools.cache
def _unique_keys_loader(yaml: Any) -> type:
    """PyYAML's SafeLoader refusing a key written twice in one mapping (it keeps the last)."""

    class UniqueKeysLoader(yaml.SafeLoader):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[object] = set()
            for key_node, _ in node.value:
                # A merge key (<<: *defaults) is meant to be overridden by the keys beside it.
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: SafeLoader refuses it itself
                    continue
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"the key {shorten(repr(key))} is given twice in one mapping",
                        key_node.start_mark,
                    )
            return super().construct_mapping(node, deep=deep)

    return UniqueKeysLoader
