r"""Your own workflow on the engine: the nine stages, with your nodes, edges and state fields.

A `PipelineBuilder` starts as the engine's pipeline and changes it one operation at a time;
`PipelineBuilder.build` checks the result and gives a `Pipeline`, which ``Agent(pipeline=...)``
runs, pauses, resumes, forks and replays as it does its own. The operations are the four a
workflow needs and no more:

- ``replace(stage, node)``: a stage's node is yours (``hook(name, fn)`` sets a stage's hook,
  the lighter way to change what a stage decides);
- ``add_node(name, node, after=STAGE)`` / ``before=STAGE``: your node goes on the path; it
  takes over the exits of the node it follows (a conditional exit included) or the entries
  of the node it precedes (a router's branch to it included);
- ``route(source, to)``: where control goes after ``source``: a node's name, or a router
  function (a conditional edge) returning one of the names its ``Literal`` type or
  ``path_map`` lists;
- ``PipelineBuilder(state=YourFields)``: a ``TypedDict`` of your state fields (each may carry
  its reducer as ``Annotated[list[str], operator.add]``), merged into the run state's schema.

```text
recall -> draft -> decide -> discover -> act -> reflect -> gate -> finalize -> persist
                                          \-> (add_node("review", review, after="act"))
```

Your node is ``def node(state)`` or ``async def node(state, runtime)`` (``runtime.context`` is
the run's `ai_agent.context.RunContext`) and returns a dict of state updates; it runs inside
the stage wrapper (its trace line, its events, every secret masked in its update). A compiled
LangGraph graph is a node too: it runs as a subgraph on the keys it shares with the run state.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self, cast, get_args, get_origin

from langchain_core.runnables import Runnable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from ai_agent.checkpoints import StateType, TypedSerializer, strict_serializer
from ai_agent.context import Hooks, RunContext
from ai_agent.errors import ConfigError
from ai_agent.graph.build import FIXED_STEPS, STEPS_PER_CYCLE
from ai_agent.graph.routes import after_decide, after_draft, after_finalize, after_gate
from ai_agent.nodes import (
    STAGES,
    act,
    decide,
    discover,
    draft,
    finalize,
    gate,
    persist,
    recall,
    reflect,
)
from ai_agent.nodes._common import stage
from ai_agent.state import RunState

__all__ = [
    "Pipeline",
    "PipelineBuilder",
    "Router",
    "as_pipeline",
    "default_pipeline",
    "merged_hooks",
]

Router = Callable[..., Any]
"""A conditional edge: ``router(state) -> name`` (a node's name, or ``"__end__"``)."""

_STAGE_NODES: dict[str, Any] = {
    "recall": recall,
    "draft": draft,
    "decide": decide,
    "discover": discover,
    "act": act,
    "reflect": reflect,
    "gate": gate,
    "finalize": finalize,
    "persist": persist,
}


@dataclass(frozen=True, slots=True)
class _Branch:
    """A conditional exit: the router and where each of its answers leads."""

    router: Router
    targets: dict[str, str]


Exit = str | _Branch


def _stage_exits() -> dict[str, Exit]:
    """The engine's own wiring (what docs/architecture.md draws)."""

    def branch(router: Router) -> _Branch:
        return _Branch(router, {name: name for name in _answers(router)})

    return {
        "recall": "draft",
        "draft": branch(after_draft),
        "decide": branch(after_decide),
        "discover": "act",
        "act": "reflect",
        "reflect": "gate",
        "gate": branch(after_gate),
        "finalize": branch(after_finalize),
        "persist": END,
    }


def _answers(router: Router) -> list[str]:
    """The names a router may return, from its ``Literal[...]`` return type ([] when untyped)."""
    try:
        hints = typing.get_type_hints(router)
    except Exception:  # a router annotated with names that do not resolve: no map to follow
        return []
    answer = hints.get("return")
    if get_origin(answer) is Literal:
        return [str(name) for name in get_args(answer)]
    return []


class PipelineBuilder:
    """Builds a `Pipeline`: the engine's nine stages changed by your operations, in order.

    Args:
        state: A ``TypedDict`` of the state fields your nodes read and write; each may carry its
            reducer (``Annotated[list[str], operator.add]``). Its fields join the run state's;
            a name the engine uses already is refused.

    Examples:
        >>> def review(state):
        ...     return {"reviewed": True}
        >>> from typing_extensions import TypedDict
        >>> class Reviewed(TypedDict, total=False):
        ...     reviewed: bool
        >>> pipeline = PipelineBuilder(state=Reviewed).add_node("review", review, after="act")
        >>> pipeline.build().order[-3:]
        ('finalize', 'persist', 'review')
    """

    def __init__(self, *, state: type | None = None) -> None:
        self._state = _merged_state(state)  # checked now: a clash is the caller's line
        self._nodes: dict[str, Any] = {name: _STAGE_NODES[name] for name in STAGES}
        self._exits: dict[str, Exit] = _stage_exits()
        self._entry = "recall"
        self._hooks: dict[str, Any] = {}
        self._types: dict[type, StateType] = {}  # read by the nodes' check when they run

    def replace(self, stage_name: str, node: Callable[..., Any]) -> Self:
        """Run ``node`` in place of the stage ``stage_name``; its edges stay as they are."""
        if stage_name not in STAGES:
            raise ConfigError(
                f"replace: {stage_name!r} is not a stage; the stages are {', '.join(STAGES)}"
            )
        self._nodes[stage_name] = _user_node(stage_name, node, self._types)
        return self

    def hook(self, name: str, fn: Callable[..., Any]) -> Self:
        """Set one of the stages' hooks (a field of `ai_agent.context.Hooks`) for this pipeline."""
        if name not in Hooks.__dataclass_fields__:
            known = ", ".join(Hooks.__dataclass_fields__)
            raise ConfigError(f"hook: {name!r} is not a hook; the hooks are {known}")
        self._hooks[name] = fn
        return self

    def serializer(
        self, type_: type, to_data: Callable[[Any], Any], from_data: Callable[[Any], Any]
    ) -> Self:
        """Let the state hold values of ``type_``, stored as ``to_data(value)`` (JSON data).

        Checkpoints load them back with ``from_data(data)``. Every other type stays refused: a
        node that puts one in the state fails the run with an error naming it.
        """
        if not isinstance(type_, type) or type_ in _JSON_TYPES:
            raise ConfigError(f"serializer: {type_!r} is not a class of your own")
        self._types[type_] = StateType(type_, to_data, from_data)
        return self

    def add_node(
        self,
        name: str,
        node: Callable[..., Any] | Runnable[Any, Any],
        *,
        after: str | None = None,
        before: str | None = None,
    ) -> Self:
        """Add your node; ``after`` or ``before`` a node already there puts it on that path.

        ``after=X``: X leads to your node, and your node leads where X led (X's router moves to
        your node, so the routing is unchanged). ``before=X``: every edge and router branch
        into X (and the start, if X is the first) leads to your node, which leads to X. With
        neither, give its exit with `route` and lead to it from another node's route.
        """
        if name in self._nodes or name in (START, END):
            raise ConfigError(f"add_node: a node named {name!r} exists already; pick another")
        if after is not None and before is not None:
            raise ConfigError(f"add_node {name!r}: give after= or before=, not both")
        for anchor in (after, before):
            if anchor is not None:
                self._require(anchor, f"add_node {name!r}")
        self._nodes[name] = (
            node if isinstance(node, Runnable) else _user_node(name, node, self._types)
        )
        if after is not None:
            self._exits[name] = self._exits[after]
            self._exits[after] = name
        elif before is not None:
            self._redirect(before, name)
            self._exits[name] = before
        return self

    def route(
        self,
        source: str,
        to: str | Router,
        path_map: Mapping[str, str] | None = None,
    ) -> Self:
        """Where control goes after ``source``: a node's name (or ``"__end__"``), or a router.

        A router is a function of the state returning a name; the names it may return come from
        its ``Literal[...]`` return type, or ``path_map`` maps each answer to a node.
        """
        self._require(source, "route")
        if isinstance(to, str):
            self._exits[source] = to
            return self
        targets = dict(path_map) if path_map is not None else {a: a for a in _answers(to)}
        if not targets:
            raise ConfigError(
                f"route from {source!r}: say where {getattr(to, '__name__', to)!r} may lead, "
                "with a Literal[...] return type or a path_map"
            )
        self._exits[source] = _Branch(to, targets)
        return self

    def build(self) -> Pipeline:
        """Check the wiring and give the `Pipeline` (an Agent's ``pipeline=`` argument)."""
        for source, exit_ in self._exits.items():
            for target in _targets(exit_):
                if target != END and target not in self._nodes:
                    raise ConfigError(
                        f"the pipeline leads from {source!r} to {target!r}, which is no node"
                    )
        missing = [name for name in self._nodes if name not in self._exits]
        if missing:
            raise ConfigError(
                f"node {missing[0]!r} has no way on: add it with after=/before=, or give its "
                "exit with route()"
            )
        reached = {self._entry} | {t for e in self._exits.values() for t in _targets(e)}
        unreached = [name for name in self._nodes if name not in reached]
        if unreached:
            raise ConfigError(
                f"node {unreached[0]!r} is never reached: add it with after=/before=, or "
                "lead to it from another node's route()"
            )
        return Pipeline(
            state_schema=self._state,
            nodes=dict(self._nodes),
            exits=dict(self._exits),
            entry=self._entry,
            hooks=dict(self._hooks),
            types=tuple(self._types.values()),
        )

    def _require(self, name: str, what: str) -> None:
        if name not in self._nodes:
            raise ConfigError(
                f"{what}: no node named {name!r}; the nodes are {', '.join(self._nodes)}"
            )

    def _redirect(self, old: str, new: str) -> None:
        """Every way into ``old`` leads to ``new`` instead."""
        if self._entry == old:
            self._entry = new
        for source, exit_ in list(self._exits.items()):
            if exit_ == old:
                self._exits[source] = new
            elif isinstance(exit_, _Branch) and old in exit_.targets.values():
                targets = {k: new if v == old else v for k, v in exit_.targets.items()}
                self._exits[source] = _Branch(exit_.router, targets)


def _targets(exit_: Exit) -> list[str]:
    return list(exit_.targets.values()) if isinstance(exit_, _Branch) else [exit_]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A checked pipeline: what ``Agent(pipeline=...)`` runs. Make it with `PipelineBuilder`.

    Attributes:
        state_schema: The run state's ``TypedDict`` with your fields merged in.
        nodes: Each node by name, in the order they were added.
        exits: Where each node leads: a name, or a router with its map.
        entry: The first node.
        hooks: Hooks set with `PipelineBuilder.hook`, merged into the Agent's.
        outer: Your own ``StateGraph`` the engine's graph is embedded in (`Pipeline.around`);
            when set, it is what runs.
    """

    state_schema: type
    nodes: dict[str, Any]
    exits: dict[str, Exit]
    entry: str = "recall"
    hooks: dict[str, Any] = field(default_factory=dict)
    outer: StateGraph[Any, Any, Any, Any] | None = None
    types: tuple[StateType, ...] = ()

    @staticmethod
    def around(graph: StateGraph[Any, Any, Any, Any]) -> Pipeline:
        """Your own LangGraph ``StateGraph`` as what an Agent runs, the pipeline a node in it.

        Add the compiled pipeline (``PipelineBuilder().build().compile()``: no checkpointer,
        so it uses the run's) as a node of ``graph``. A run starts with the run state, and
        LangGraph hands a subgraph node the keys its schema shares with the parent's and takes
        back the keys it returns: so ``graph``'s state extends the run state (``class
        Mine(RunState): ...``) and the Agent reads the run's outcome (``final_text``,
        ``status``, the trace) from it as from its own graph.

        Raises:
            ConfigError: ``graph``'s state lacks fields of the run state.
        """
        schema = graph.state_schema
        missing = sorted(set(typing.get_type_hints(RunState)) - set(typing.get_type_hints(schema)))
        if missing:
            raise ConfigError(
                f"the state of the graph around the pipeline lacks {', '.join(missing)}: "
                "make it extend ai_agent.state.RunState"
            )
        return Pipeline(state_schema=schema, nodes={}, exits={}, outer=graph)

    @staticmethod
    def load(spec: str) -> Pipeline:
        """The pipeline (or builder) named ``"package.module:name"``, as ``--pipeline`` takes it.

        Raises:
            ConfigError: the spec is malformed, the module does not import, or the name is not
                a `Pipeline` or a `PipelineBuilder`.
        """
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise ConfigError(f"pipeline {spec!r}: give it as package.module:name")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"pipeline {spec!r}: cannot import {module_name} ({exc}); is it on PYTHONPATH?"
            ) from None
        found = getattr(module, attr, None)
        if not isinstance(found, Pipeline | PipelineBuilder):
            raise ConfigError(
                f"pipeline {spec!r}: {module_name} has no Pipeline or PipelineBuilder named {attr}"
            )
        return found if isinstance(found, Pipeline) else found.build()

    @property
    def order(self) -> tuple[str, ...]:
        """The nodes' names, the stages first."""
        return tuple(self.nodes)

    @property
    def extra_nodes(self) -> int:
        """How many nodes are not the engine's stages (all of an outer graph's count)."""
        if self.outer is not None:
            return len(self.outer.nodes)
        return sum(1 for name in self.nodes if name not in STAGES)

    def serializer(self) -> TypedSerializer:
        """The checkpoints' serializer: strict, with the types registered.

        With none registered it still reads every value it loads, so a run whose checkpoints
        hold a type this pipeline does not register is an error, never a dict in its place.
        """
        return TypedSerializer(strict_serializer(), self.types)

    def recursion_limit(self, max_iterations: int) -> int:
        """LangGraph's step limit for ``max_iterations`` cycles: your nodes count once a cycle."""
        per_cycle = STEPS_PER_CYCLE + self.extra_nodes
        return max_iterations * per_cycle + FIXED_STEPS + self.extra_nodes

    def graph(self) -> StateGraph[Any, RunContext, Any, Any]:
        """The uncompiled LangGraph ``StateGraph`` (to change further, or to draw)."""
        builder: StateGraph[Any, RunContext, Any, Any] = StateGraph(
            self.state_schema, context_schema=RunContext
        )
        for name, node in self.nodes.items():
            if isinstance(node, Runnable):  # a graph of the user's: the keys its schema shares
                builder.add_node(name, node)
            else:  # the whole state, the user's fields too (the wrappers are typed RunState)
                builder.add_node(name, node, input_schema=self.state_schema)
        builder.add_edge(START, self.entry)
        for source, exit_ in self.exits.items():
            if isinstance(exit_, _Branch):
                targets = cast(dict[Hashable, str], dict(exit_.targets))
                builder.add_conditional_edges(source, exit_.router, targets)
            else:
                builder.add_edge(source, exit_)
        return builder

    def compile(
        self, checkpointer: BaseCheckpointSaver[Any] | None = None
    ) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled graph; without a checkpointer, a subgraph uses its parent's."""
        graph = self.graph() if self.outer is None else self.outer
        return graph.compile(checkpointer=checkpointer)


def merged_hooks(
    hooks: Hooks | Mapping[str, Callable[..., Any]] | None, pipeline: Pipeline | None
) -> Hooks:
    """The Agent's ``hooks`` (`Hooks` or a dict) and the pipeline's; one set twice is an error."""
    given = hooks if isinstance(hooks, Hooks) else Hooks(**dict(hooks or {}))
    if pipeline is None or not pipeline.hooks:
        return given
    both = [name for name in pipeline.hooks if getattr(given, name) is not None]
    if both:
        raise ConfigError(
            f"the hook {both[0]!r} is set by the pipeline and by the Agent's hooks; set it in "
            "one place"
        )
    mine = {name: getattr(given, name) for name in Hooks.__dataclass_fields__}
    return Hooks(**{**mine, **pipeline.hooks})


def as_pipeline(pipeline: Pipeline | PipelineBuilder | None) -> Pipeline | None:
    """What ``Agent(pipeline=...)`` takes, as a `Pipeline` (a builder is built)."""
    if pipeline is None or isinstance(pipeline, Pipeline):
        return pipeline
    if isinstance(pipeline, PipelineBuilder):
        return pipeline.build()
    raise ConfigError(
        f"pipeline= takes a Pipeline or a PipelineBuilder, not {type(pipeline).__name__}"
    )


def default_pipeline() -> Pipeline:
    """The engine's nine stages, unchanged."""
    return PipelineBuilder().build()


def _merged_state(extra: type | None) -> type:
    """The run state's schema with ``extra``'s fields (and their reducers) added."""
    if extra is None:
        return RunState
    try:
        theirs = typing.get_type_hints(extra, include_extras=True)
    except Exception as exc:
        raise ConfigError(
            f"the pipeline's state {getattr(extra, '__name__', extra)!r} is not a TypedDict "
            f"whose annotations resolve: {exc}"
        ) from None
    if not isinstance(extra, type) or not theirs:
        raise ConfigError("the pipeline's state must be a TypedDict class with at least one field")
    ours = typing.get_type_hints(RunState, include_extras=True)
    clash = sorted(set(theirs) & set(ours))
    if clash:
        raise ConfigError(
            f"the pipeline's state field {clash[0]!r} is the engine's own; give yours another name"
        )
    # The functional form, since the fields are known only now; typing_extensions' TypedDict,
    # as RunState's (pydantic draws its JSON schema on Python < 3.12).
    from typing_extensions import TypedDict

    make: Any = TypedDict
    return cast(type, make(f"RunState_{extra.__name__}", {**ours, **theirs}, total=False))


def _user_node(name: str, fn: Callable[..., Any], types: Mapping[type, StateType]) -> Any:
    """Your function as a stage: ``(state)`` or ``(state, runtime)``, sync or async."""
    if not callable(fn):
        raise ConfigError(f"node {name!r} is not a function or a compiled graph")
    takes_runtime = _takes_runtime(fn)

    async def node(state: RunState, *, runtime: Runtime[RunContext]) -> dict[str, Any]:
        outcome = fn(state, runtime) if takes_runtime else fn(state)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome is None:
            return {}
        if not isinstance(outcome, Mapping):
            raise ConfigError(
                f"node {name!r} returned {type(outcome).__name__}; a node returns a dict of "
                "state updates (or None)"
            )
        for key, value in outcome.items():
            _check_storable(name, key, value, types)
        return dict(outcome)

    node.__name__ = name
    node.__doc__ = fn.__doc__
    return stage(name)(node)


_JSON_TYPES = (str, int, float, bool, type(None))


def _check_storable(node: str, key: str, value: Any, types: Mapping[type, StateType]) -> None:
    """ConfigError for a value checkpoints would not load back as it was (nothing is stored).

    Strict serialization loads only JSON data and allowlisted types: anything else would come
    back from a checkpoint as something else, a silent change of meaning on resume.
    """
    if isinstance(value, _JSON_TYPES) or type(value) in types:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            _check_storable(node, key, item, types)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_storable(node, key, item, types)
        return
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    raise ConfigError(
        f"node {node!r} put a {kind} in the state field {key!r}; checkpoints keep JSON data and "
        f"the types you register: PipelineBuilder.serializer({type(value).__qualname__}, "
        "to_data, from_data)"
    )


def _takes_runtime(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: the state alone
        return False
    return len(params) >= 2 or "runtime" in params
