"""The shape of a generated tool's code: imports, names, attributes, its interface.

Part of `ai_agent.tools.maker.validator` (a filter and review aid, not the boundary: see its
docstring for what is checked and why); `check_code` walks a parsed module once and adds what it
finds to the report.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

from ai_agent.tools.maker.records import ValidationReport

__all__ = ["ALLOWED_MODULES", "FORBIDDEN_NAMES", "KNOWN_DANGEROUS", "check_code"]

ALLOWED_MODULES = frozenset(
    {
        "__future__",
        "abc",
        "base64",
        "binascii",
        "bisect",
        "calendar",
        "collections",
        "collections.abc",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fnmatch",
        "fractions",
        "functools",
        "hashlib",
        "heapq",
        "hmac",
        "html",
        "io",
        "ipaddress",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "os",
        "os.path",
        "random",
        "re",
        "statistics",
        "string",
        "struct",
        "textwrap",
        "time",
        "typing",
        "unicodedata",
        "urllib.parse",
        "uuid",
        "zlib",
    }
)
# Modules a model reaches for to escape; named in the message so the reviewer sees the attempt.
KNOWN_DANGEROUS = frozenset(
    {
        "subprocess",
        "socket",
        "ctypes",
        "importlib",
        "pathlib",
        "sys",
        "builtins",
        "posix",
        "_posixsubprocess",
        "pty",
        "multiprocessing",
        "threading",
        "_thread",
        "asyncio",
        "signal",
        "shutil",
        "pickle",
        "marshal",
        "inspect",
        "gc",
        "types",
        "code",
        "codeop",
        "runpy",
        "mmap",
        "resource",
        "fcntl",
        "select",
        "ssl",
        "http",
        "urllib.request",
        "tempfile",
    }
)
FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "breakpoint",
        "globals",
        "locals",
        "vars",
        "setattr",
        "delattr",
        "input",
        "help",
        "memoryview",
        "exit",
        "quit",
        "copyright",
        "credits",
        "license",
    }
)
_OS_FORBIDDEN = re.compile(
    r"^(system|popen|exec\w*|spawn\w*|fork\w*|posix_spawn\w*|kill\w*|abort|_exit|"
    r"set\w*id|set\w*gid|set\w*uid|setgroups|chroot|pidfd\w*|unshare|setns|memfd_create|"
    r"register_at_fork|mknod|mkfifo|dup2?|open|fdopen|pipe2?|wait\w*|nice|sched_\w+|"
    r"putenv|unsetenv|chown|lchown|fchown|chmod|fchmod|lchmod|link|symlink|eventfd\w*|"
    r"sendfile|splice|copy_file_range|plock|startfile|getpgid|setpgrp|tcsetpgrp)$"
)
_OS_WRITES = frozenset(
    {
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "rename",
        "renames",
        "replace",
        "mkdir",
        "makedirs",
        "truncate",
        "utime",
    }
)
_ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__name__",
        "__doc__",
        "__repr__",
        "__str__",
        "__eq__",
        "__hash__",
        "__len__",
        "__iter__",
        "__next__",
        "__enter__",
        "__exit__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__contains__",
        "__bool__",
        "__future__",
        "__annotations__",
        "__slots__",
        "__debug__",
    }
)
_DUNDER = re.compile(r"__[A-Za-z0-9_]+__")
# A format field ("{...}", no brace inside), searched for a dunder on its own: one pattern
# "\{[^{}]*__[A-Za-z0-9_]+__[^{}]*\}" backtracked in O(n**2) over the "__" of a long field.
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")


def _imported_modules(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to allowed modules anywhere in the module (all of them, and those of os).

    Collected before the checks, so a use above its import is judged like any other.
    """
    modules: set[str] = set()
    os_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ALLOWED_MODULES:
                    bound = alias.asname or alias.name.split(".", maxsplit=1)[0]
                    modules.add(bound)
                    if alias.name.split(".", maxsplit=1)[0] == "os":
                        os_names.add(bound)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in ALLOWED_MODULES:  # from os import path
                    modules.add(alias.asname or alias.name)
    return modules, os_names


class _Checker(ast.NodeVisitor):
    """Walks the module once, collecting errors, warnings and uses."""

    def __init__(self, caps: Collection[str], report: ValidationReport, tree: ast.Module) -> None:
        self.caps = caps
        self.report = report
        self.module_names, self.os_names = _imported_modules(tree)
        self.parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        self.getattr_bases: set[ast.AST] = set()

    def error(self, node: ast.AST, text: str) -> None:
        line = getattr(node, "lineno", 0)
        self.report.errors.append(f"line {line}: {text}")

    # Imports ----------------------------------------------------------------------------------
    def _module(self, node: ast.AST, name: str) -> bool:
        if name in ALLOWED_MODULES:
            return True
        top = name.split(".", maxsplit=1)[0]
        if name in KNOWN_DANGEROUS or top in KNOWN_DANGEROUS:
            self.error(node, f"import of {name!r} is forbidden (it reaches outside the tool)")
        else:
            self.error(
                node,
                f"import of {name!r} is not allowed; generated tools may import only "
                "standard modules on the toolsmaker's list",
            )
        return False

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._module(node, alias.name) and alias.name.split(".")[0] == "os":
                self.report.uses.append("os")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.error(node, "relative imports are not allowed")
            return
        module = node.module or ""
        if not self._module(node, module):
            return
        for alias in node.names:
            if alias.name == "*":
                self.error(node, f"'from {module} import *' is not allowed; name what you use")
            elif module == "os" and _OS_FORBIDDEN.match(alias.name):
                self.error(node, f"os.{alias.name} is forbidden in generated tools")
            elif alias.name.startswith("_"):
                self.error(node, f"importing the private name {alias.name!r} is not allowed")
            if module in ("os", "os.path"):
                self.report.uses.append("os")
        self.generic_visit(node)

    # Names and attributes ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.module_names and node not in self.getattr_bases:
            parent = self.parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                # Aliased or passed around, a module hides what is finally called on it.
                self.error(node, f"the module {node.id!r} may only be used as {node.id}.name")
        if node.id in FORBIDDEN_NAMES:
            self.error(node, f"{node.id!r} is forbidden in generated tools")
        elif _DUNDER.fullmatch(node.id) and node.id not in _ALLOWED_DUNDERS:
            self.error(node, f"the name {node.id!r} is forbidden")
        elif node.id == "getattr":
            self.error(node, "getattr may only be called with a constant attribute name")
        elif node.id == "open":
            self.report.uses.append("open")
            if not {"fs_read", "fs_write"} & set(self.caps):
                self.error(node, "the code opens files but declares neither fs_read nor fs_write")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if _DUNDER.fullmatch(attr) and attr not in _ALLOWED_DUNDERS:
            self.error(node, f"the attribute {attr!r} is forbidden (a classic sandbox escape)")
        base = node.value
        root = _root(node)
        if root is not None and root.id in self.module_names:
            self._module_attribute(node, attr)
        if isinstance(base, ast.Name) and base.id in self.os_names:
            if _OS_FORBIDDEN.match(attr):
                self.error(node, f"os.{attr} is forbidden in generated tools")
            elif attr in _OS_WRITES and "fs_write" not in self.caps:
                self.error(node, f"os.{attr} changes files but fs_write is not declared")
        if isinstance(base, ast.Name) and base.id == "self":
            self._self_use(node, attr)
        self.generic_visit(node)

    def _module_attribute(self, node: ast.AST, attr: str) -> None:
        """``module.attr`` chains: no private names, no modules the tool may not import.

        Allowed modules hold others as attributes (``os.path.os``, ``random._os``...), which
        would reach ``os.system`` without naming it.
        """
        if attr.startswith("_") and not _DUNDER.fullmatch(attr):
            self.error(node, f"the private attribute {attr!r} of a module is not allowed")
        elif attr == "os" or attr in KNOWN_DANGEROUS:
            self.error(node, f"reaching the module {attr!r} through another module is forbidden")

    def _self_use(self, node: ast.AST, attr: str) -> None:
        if attr == "http":
            self.report.uses.append("http")
            if "http" not in self.caps:
                self.error(node, "the code uses self.http but the http capability is not declared")
        elif attr == "secrets":
            self.report.uses.append("secrets")
            if "secrets" not in self.caps:
                self.error(node, "the code reads self.secrets but declares no secrets")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.error(node, "getattr may only be called with a constant attribute name")
            elif name.value.startswith("_"):
                self.error(node, f"getattr of {name.value!r} is forbidden")
            elif node.args:
                # getattr(x, "name") is x.name: the same checks apply.
                self.getattr_bases.add(node.args[0])
                self.visit(ast.copy_location(ast.Attribute(node.args[0], name.value), node))
            for arg in [*node.args[1:], *[k.value for k in node.keywords]]:
                self.visit(arg)
            return
        if isinstance(func, ast.Name) and func.id == "open":
            self._open_mode(node)
        self.generic_visit(node)

    def _open_mode(self, node: ast.Call) -> None:
        mode = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "mode":
                mode = keyword.value
        if mode is None:
            return
        if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
            self.report.warnings.append(
                f"line {node.lineno}: open() with a computed mode; check what it writes"
            )
        elif set(mode.value) & set("wax+") and "fs_write" not in self.caps:
            self.error(node, "the code writes files but fs_write is not declared")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            bad = [m for m in _DUNDER.findall(node.value) if m not in _ALLOWED_DUNDERS]
            if bad:
                self.error(node, f"the string {bad[0]!r} is forbidden (dunder access)")
            elif any(_DUNDER.search(f[0]) for f in _FORMAT_FIELD.finditer(node.value)):
                self.error(node, "a format string reaches a dunder attribute")

    # Definitions ------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for keyword in node.keywords:
            self.error(node, f"class keyword {keyword.arg!r} (metaclasses) is not allowed")
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.error(node, "async functions cannot run in the sandbox (no event loop); use def")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.report.warnings.append(f"line {node.lineno}: global state does not survive calls")


def _root(node: ast.Attribute) -> ast.Name | None:
    """The name at the start of an attribute chain (``os`` in ``os.path.join``), if any."""
    value = node.value
    while isinstance(value, ast.Attribute):
        value = value.value
    return value if isinstance(value, ast.Name) else None


def _interface(tree: ast.Module, inputs: Collection[str], report: ValidationReport) -> None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GeneratedTool"]
    if len(classes) != 1:
        report.errors.append(
            "the module must define exactly one top-level class GeneratedTool"
            if not classes
            else "GeneratedTool is defined more than once"
        )
        return
    methods = [
        n
        for n in classes[0].body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "execute"
    ]
    if not methods:
        report.errors.append("GeneratedTool has no execute(self, **kwargs) method")
        return
    execute = methods[-1]
    if isinstance(execute, ast.AsyncFunctionDef):
        return  # already reported as async
    args = execute.args
    positional = [*args.posonlyargs, *args.args]
    if not positional or positional[0].arg != "self" or args.posonlyargs:
        report.errors.append("execute must be an instance method: execute(self, **kwargs)")
        return
    if args.kwarg is not None:
        return
    named = {a.arg for a in [*positional[1:], *args.kwonlyargs]}
    missing = sorted(set(inputs) - named)
    if missing:
        report.errors.append(f"execute takes neither **kwargs nor the inputs {', '.join(missing)}")


def check_code(
    tree: ast.Module,
    capabilities: Collection[str],
    inputs: Collection[str],
    report: ValidationReport,
) -> None:
    """Add to ``report`` what is wrong with the module's code and what it uses.

    Args:
        tree: The parsed module.
        capabilities: The capabilities the spec declares (what the code may use).
        inputs: The input names ``execute`` must accept (unless it takes ``**kwargs``).
        report: Where errors, warnings and uses go.
    """
    _Checker(capabilities, report, tree).visit(tree)
    _interface(tree, inputs, report)
