"""Where settings come from, in which order, and which source set a given field.

Highest priority first: arguments, ``MAMBA_*`` environment variables, ``.env``, ``~/agents.env``,
config files (``config.toml`` then ``config.yaml``, or the one file given), defaults.
`AgentSettings.settings_customise_sources` builds that order with `settings_sources`;
`Origins` walks it again to tell a user what to change when a value is invalid.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
)

from ai_agent.config.errors import closest_hint
from ai_agent.config.files import check_config_path, default_config_files, parse_config_file
from ai_agent.errors import ConfigError

__all__ = [
    "CONFIG_FILE_ARGUMENT",
    "ENV_NESTED_DELIMITER",
    "ENV_PREFIX",
    "PROJECT_ENV_FILE",
    "USER_ENV_FILE_NAME",
    "Origins",
    "check_env_files",
    "read_settings_file",
    "settings_sources",
]

ENV_PREFIX = "MAMBA_"
ENV_NESTED_DELIMITER = "__"
USER_ENV_FILE_NAME = "agents.env"
# The marker put in model_config["env_file"]. AgentSettings recognises it by identity, so it can
# tell "the caller gave no _env_file" (read .env and ~/agents.env) from "the caller gave one" (read
# exactly what was given), and resolve the home directory when settings load, not at import.
PROJECT_ENV_FILE = Path(".env")
# The constructor argument that names the one config file to read (`AgentSettings.__init__`).
# pydantic-settings hands the sources hook the constructor's arguments and nothing else, so the
# path travels among them and the hook takes it out before they are validated.
CONFIG_FILE_ARGUMENT = "_config_file"


def settings_sources(
    settings_cls: type[BaseSettings],
    init_settings: PydanticBaseSettingsSource,
    env_settings: PydanticBaseSettingsSource,
    dotenv_settings: PydanticBaseSettingsSource,
) -> tuple[PydanticBaseSettingsSource, ...]:
    """Arguments, environment, env files, then config files (pydantic-settings adds defaults)."""
    config_file = _take_config_file(init_settings)
    if (
        isinstance(dotenv_settings, DotEnvSettingsSource)
        and dotenv_settings.env_file is PROJECT_ENV_FILE
    ):
        check_env_files(_default_env_files(), dotenv_settings.env_file_encoding)
        dotenv_settings = _rebuild_dotenv(settings_cls, dotenv_settings, _default_env_files())
    paths = [config_file] if config_file is not None else default_config_files()
    config_sources = tuple(
        InitSettingsSource(settings_cls, init_kwargs=read_settings_file(path, settings_cls))
        for path in paths
    )
    return (init_settings, env_settings, dotenv_settings, *config_sources)


def _take_config_file(init_settings: PydanticBaseSettingsSource) -> Path | None:
    """The config file given to the constructor, removed from the values to validate."""
    # pydantic-settings hands the hook an InitSettingsSource; any other source holds no arguments.
    given = init_settings.init_kwargs if isinstance(init_settings, InitSettingsSource) else {}
    path = given.pop(CONFIG_FILE_ARGUMENT, None)
    return None if path is None else check_config_path(Path(path))


# A statement of ours in an env file: python-dotenv skips one it cannot parse (an unclosed quote,
# a missing "=") with a warning that names neither the file nor the setting, and the setting is
# then silently not set (a deny list dropped, a key not sent).
_OUR_STATEMENT = re.compile(rf"\s*(?:export\s+)?({ENV_PREFIX}\w*)", re.IGNORECASE)


def check_env_files(env_files: Sequence[Path], encoding: str | None) -> None:
    """ConfigError for an env file that is not text, or has a ``MAMBA_`` line it cannot read.

    Other lines are left to python-dotenv: an env file is often shared with other programs.
    """
    from dotenv.parser import parse_stream

    for env_file in env_files:
        if not env_file.is_file():
            continue
        try:
            text = env_file.read_text(encoding=encoding or "utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"env file {env_file} is not {(encoding or 'utf-8').upper()} text (byte "
                f"{exc.start}); is it a binary file? Save it as text"
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot read env file {env_file}: {exc.strerror or exc}") from None
        for binding in parse_stream(io.StringIO(text)):
            ours = _OUR_STATEMENT.match(binding.original.string)
            if binding.error and ours:
                raise ConfigError(
                    f"env file {env_file}, line {binding.original.line}: {ours[1]} cannot be "
                    "read (an unclosed quote or a missing '='?); write it as NAME=value"
                )


def _default_env_files() -> tuple[Path, ...]:
    """``~/agents.env`` then ``.env``: in a tuple of env files the later one wins."""
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no passwd entry: there is no user-wide file to read
        return (PROJECT_ENV_FILE,)
    return (home / USER_ENV_FILE_NAME, PROJECT_ENV_FILE)


def _rebuild_dotenv(
    settings_cls: type[BaseSettings], source: DotEnvSettingsSource, env_files: tuple[Path, ...]
) -> DotEnvSettingsSource:
    # The source reads its files when constructed, so swap in a new one that keeps every other
    # option the caller may have passed (_env_file_encoding, _case_sensitive, ...).
    return DotEnvSettingsSource(
        settings_cls,
        env_file=env_files,
        env_file_encoding=source.env_file_encoding,
        case_sensitive=source.case_sensitive,
        env_prefix=source.env_prefix,
        env_nested_delimiter=source.env_nested_delimiter,
        env_ignore_empty=source.env_ignore_empty,
        env_parse_none_str=source.env_parse_none_str,
        env_parse_enums=source.env_parse_enums,
    )


def read_settings_file(path: Path, settings_cls: type[BaseSettings]) -> dict[str, Any]:
    """Parse a settings file into a mapping, or raise ConfigError naming the file and position."""
    data = parse_config_file(path)
    if data is None:  # an empty YAML file
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {path} must hold a table of settings at the top level, "
            f"not a {type(data).__name__}"
        )
    _check_known_keys(path, data, list(settings_cls.model_fields))
    return data


def _check_known_keys(path: Path, data: Mapping[str, Any], known: list[str]) -> None:
    """Refuse top-level keys that are no setting, naming the closest one.

    Sections reject unknown keys themselves (``extra="forbid"``); the top level of
    `AgentSettings` has to ignore unknown ``MAMBA_*`` variables, so a misspelt key in a file
    would otherwise vanish without a word.
    """
    unknown = [key for key in data if key not in known]
    if not unknown:
        return
    lines = [f"config file {path} has {len(unknown)} unknown setting(s):"]
    lines += [f"  {key}: {closest_hint(str(key), known)}" for key in unknown]
    lines.append(f"  known settings: {', '.join(known)}")
    raise ConfigError("\n".join(lines))


class Origins:
    """Finds which source set a field, to tell the user what to change."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        overrides: Mapping[str, Any],
        config_file: Path | None,
    ) -> None:
        self.settings_cls = settings_cls
        self.overrides = overrides
        env_file = overrides.get("_env_file", PROJECT_ENV_FILE)
        if env_file is PROJECT_ENV_FILE:
            env_files: Sequence[Any] = _default_env_files()
        elif env_file is None:
            env_files = ()
        elif isinstance(env_file, (str, os.PathLike)):
            env_files = (env_file,)
        else:
            env_files = tuple(env_file)
        self.env_files = [Path(name) for name in env_files]
        self.config_files = [config_file] if config_file else default_config_files()

    def describe(self, field_path: Sequence[str]) -> str:
        """Who set the field at ``field_path`` and to change it there, or how to set it."""
        names = _env_names(field_path)
        found = self._find(field_path, names)
        if found:
            return f"set by {found}; change it there"
        config_names = " / ".join(str(path) for path in self.config_files) or "config.toml"
        key = field_path[-1]
        table = ".".join(field_path[:-1])
        in_file = (
            f"{key} under [{table}] in {config_names}" if table else f"{key} in {config_names}"
        )
        return f"set it with {names[0]} (environment or an env file) or {in_file}"

    def _find(self, field_path: Sequence[str], names: Sequence[str]) -> str | None:
        if _lookup(self.overrides, field_path):
            return f"the argument {field_path[0]}="
        for name in names:
            if any(key.upper() == name for key in os.environ):
                return f"the environment variable {name}"
        found = self._find_in_env_files(names)
        if found:
            return found
        for config_file in self.config_files:
            if _lookup(read_settings_file(config_file, self.settings_cls), field_path):
                return f"{'.'.join(field_path)} in {config_file}"
        return None

    def _find_in_env_files(self, names: Sequence[str]) -> str | None:
        # The later env file wins, so look from the last one back.
        for env_file in reversed(self.env_files):
            if env_file.is_file():
                keys = {key.upper() for key in dotenv_values(env_file)}
                for name in names:
                    if name in keys:
                        return f"{name} in {env_file}"
        return None


def _env_names(field_path: Sequence[str]) -> list[str]:
    """Most specific first: MAMBA_MODEL_BACKEND__TIMEOUT, then MAMBA_MODEL_BACKEND."""
    return [
        ENV_PREFIX + ENV_NESTED_DELIMITER.join(field_path[:depth]).upper()
        for depth in range(len(field_path), 0, -1)
    ]


def _lookup(data: Mapping[str, Any], field_path: Sequence[str]) -> bool:
    """Whether ``data`` sets ``field_path`` or a section holding it."""
    node: object = data
    for key in field_path:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True
